/* audience: an audience's token directory name, as the webhook mounts it
 * and the sidecar reads it: one safe path component, never one of
 * kubelet's `..data` names nor the default token's `token`, and the
 * refusals (empty, ".", "..", bytes outside printable ASCII, no room).
 * The table and the every-byte sweep moved here from test_imds.c. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audience.h"

static int enc(const char *aud, char *out, size_t cap)
{
	return audience_dir(aud, strlen(aud), out, cap);
}

#define OUT(s) s, sizeof(s) - 1

static void test_audience_dir_table(void **state)
{
	(void)state;
	static const struct {
		const char *name, *in;
		size_t n, cap;
		int rc;
		const char *out;
	} cases[] = {
		{"plain", OUT("vault"), 64, 5, "vault"},
		{"URL", OUT("https://kubernetes.default.svc"), 64, 36,
		 "https%3A%2F%2Fkubernetes.default.svc"},
		{"azure", OUT("api://AzureADTokenExchange"), 64, 32, "api%3A%2F%2FAzureADTokenExchange"},
		{"plain set", OUT("a_b-c.D9"), 64, 8, "a_b-c.D9"},
		{"dot", OUT("."), 64, -EINVAL, NULL},
		{"dotdot", OUT(".."), 64, -EINVAL, NULL},
		{"empty", OUT(""), 64, -EINVAL, NULL},
		{"three dots", OUT("..."), 64, 5, "%2E.."},
		{"dot name", OUT(".a"), 64, 4, "%2Ea"},
		{"kubelet ..data", OUT("..data"), 64, 8, "%2E.data"},
		{"default token file", OUT("token"), 64, 7, "%74oken"},
		{"token prefix is fine", OUT("tokens"), 64, 6, "tokens"},
		{"traversal", OUT("../etc"), 64, 10, "%2E.%2Fetc"},
		{"slash dotdot", OUT("a/.."), 64, 6, "a%2F.."},
		{"space", OUT("a b"), 64, -EINVAL, NULL},
		{"leading space", OUT(" a"), 64, -EINVAL, NULL},
		{"tab", OUT("a\tb"), 64, -EINVAL, NULL},
		{"NUL", OUT("a\0b"), 64, -EINVAL, NULL},
		{"DEL", OUT("a\x7f"), 64, -EINVAL, NULL},
		{"non-ASCII", OUT("caf\xc3\xa9"), 64, -EINVAL, NULL},
		{"high byte", OUT("\xff"), 64, -EINVAL, NULL},
		{"percent", OUT("%"), 64, 3, "%25"},
		{"percent escape stays", OUT("%2F"), 64, 5, "%252F"},
		{"tilde", OUT("~"), 64, 3, "%7E"},
		{"query chars", OUT("a?b#c&d=e+f"), 64, 21, "a%3Fb%23c%26d%3De%2Bf"},
		{"ENOSPC", OUT("abc"), 3, -ENOSPC, NULL},
		{"exactly fits", OUT("abc"), 4, 3, "abc"},
		{"ENOSPC escape", OUT("/"), 3, -ENOSPC, NULL},
		{"escape exactly fits", OUT("/"), 4, 3, "%2F"},
		{"cap 0", OUT("a"), 0, -ENOSPC, NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *in = malloc(cases[i].n ? cases[i].n : 1);
		char *out = malloc(cases[i].cap ? cases[i].cap : 1);
		assert_non_null(in);
		assert_non_null(out);
		memcpy(in, cases[i].in, cases[i].n);
		int rc = audience_dir(in, cases[i].n, out, cases[i].cap);
		int ok = rc == cases[i].rc && (rc < 0 || strcmp(out, cases[i].out) == 0);
		char got[80];
		snprintf(got, sizeof(got), "%s", rc >= 0 ? out : "");
		free(in);
		free(out);
		if (!ok)
			fail_msg("%s: audience_dir = %d \"%s\", want %d \"%s\"", cases[i].name, rc,
				 got, cases[i].rc, cases[i].out ? cases[i].out : "");
	}
	/* Every byte value alone: printable ASCII but space is accepted, as
	 * itself or %XX; the result is one safe path component. */
	for (int b = 0; b < 256; b++) {
		char in = (char)b, out[8];
		int rc = audience_dir(&in, 1, out, sizeof(out));
		int printable = b > 0x20 && b < 0x7f;
		if (!printable) {
			if (rc != -EINVAL)
				fail_msg("byte 0x%02x: rc %d, want -EINVAL", b, rc);
			continue;
		}
		if (b == '.') {
			if (rc != -EINVAL)
				fail_msg("\".\": rc %d, want -EINVAL", rc);
			continue;
		}
		char want[8];
		int plain = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
			    b == '_' || b == '-';
		snprintf(want, sizeof(want), plain ? "%c" : "%%%02X", b);
		if (rc != (int)strlen(want) || strcmp(out, want) != 0)
			fail_msg("byte 0x%02x: %d \"%s\", want \"%s\"", b, rc, rc >= 0 ? out : "", want);
	}
}

/* "token" needs 8 bytes encoded ("%74oken" and its NUL): 7 are not
 * enough, even though the plain name would fit. */
static void test_token_needs_its_room(void **state)
{
	(void)state;
	char out[8];
	assert_int_equal(audience_dir("token", 5, out, 6), -ENOSPC);
	assert_int_equal(audience_dir("token", 5, out, 7), -ENOSPC);
	assert_int_equal(audience_dir("token", 5, out, 8), 7);
	assert_string_equal(out, "%74oken");
}

static void test_capacity_bounds(void **state)
{
	(void)state;
	const char *aud = "a:b";
	const char *want = "a%3Ab";
	for (size_t cap = 0; cap <= 8; cap++) {
		char buf[16];
		memset(buf, 'Z', sizeof(buf));
		int n = enc(aud, buf, cap);
		if (cap <= strlen(want)) {
			if (n != -ENOSPC)
				fail_msg("cap %zu: got %d, want -ENOSPC", cap, n);
		} else if (n != 5 || strcmp(buf, want) != 0) {
			fail_msg("cap %zu: got %d", cap, n);
		}
		for (size_t k = cap; k < sizeof(buf); k++)
			if (buf[k] != 'Z')
				fail_msg("cap %zu: byte %zu written", cap, k);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_audience_dir_table),
		cmocka_unit_test(test_token_needs_its_room),
		cmocka_unit_test(test_capacity_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
