/* The names and values k8s_names.c accepts (src/webhook/k8s_names.h),
 * table-driven: DNS-1123 subdomains, interface names, the sidecar's
 * identities, UTF-8 and Secret keys. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "k8s_names.h"

static struct str s_of(const char *s)
{
	return (struct str){s, strlen(s)};
}

static void test_names(void **state)
{
	(void)state;
	char long254[255], long253[254];
	memset(long254, 'a', 254);
	long254[254] = '\0';
	memset(long253, 'a', 253);
	long253[253] = '\0';

	static const char *const dns_ok[] = {"a", "a-b.c", "abc123", "0", "my-secret.v1"};
	for (size_t i = 0; i < sizeof(dns_ok) / sizeof(dns_ok[0]); i++)
		if (!k8s_dns1123_subdomain(s_of(dns_ok[i])))
			fail_msg("dns1123 '%s' refused", dns_ok[i]);
	static const char *const dns_bad[] = {"", "-a", "a-", "A", "a..b", "a.-b", "a-.b", ".a", "a.", "a_b", "a b"};
	for (size_t i = 0; i < sizeof(dns_bad) / sizeof(dns_bad[0]); i++)
		if (k8s_dns1123_subdomain(s_of(dns_bad[i])))
			fail_msg("dns1123 '%s' accepted", dns_bad[i]);
	assert_true(k8s_dns1123_subdomain(s_of(long253)));
	assert_false(k8s_dns1123_subdomain(s_of(long254)));

	static const char *const if_ok[] = {"br0", "k6t-eth0", "123456789012345", "a.b", "...x"};
	for (size_t i = 0; i < sizeof(if_ok) / sizeof(if_ok[0]); i++)
		if (!k8s_ifname_ok(s_of(if_ok[i])))
			fail_msg("ifname '%s' refused", if_ok[i]);
	static const char *const if_bad[] = {"", ".", "..", "a/b", "a:b", "a b", "1234567890123456", "a\tb", "a\x7f"};
	for (size_t i = 0; i < sizeof(if_bad) / sizeof(if_bad[0]); i++)
		if (k8s_ifname_ok(s_of(if_bad[i])))
			fail_msg("ifname '%s' accepted", if_bad[i]);

	static const char *const id_ok[] = {"vm-1", "grüße ✓", "a b", "x"};
	for (size_t i = 0; i < sizeof(id_ok) / sizeof(id_ok[0]); i++)
		if (!k8s_identity_ok(s_of(id_ok[i])))
			fail_msg("identity '%s' refused", id_ok[i]);
	static const char *const id_bad[] = {"", "a\nb", "a\x7f", "\xff", "\xc3", "\xed\xa0\x80" /* a surrogate */};
	for (size_t i = 0; i < sizeof(id_bad) / sizeof(id_bad[0]); i++)
		if (k8s_identity_ok(s_of(id_bad[i])))
			fail_msg("identity #%zu accepted", i);
	assert_true(k8s_identity_ok(s_of(long253)));
	assert_false(k8s_identity_ok(s_of(long254)));
	assert_true(k8s_utf8_ok("ok", 2));
	assert_false(k8s_utf8_ok("\xc0\x80", 2)); /* overlong */

	/* Secret keys (imds.kubevirt.io/password-key): every byte alone, then
	 * the dot names and the length limit. */
	for (int b = 0; b < 256; b++) {
		char c = (char)b;
		int want = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
			   b == '-' || b == '_';
		if (k8s_secret_key_ok((struct str){&c, 1}) != want)
			fail_msg("secret key of byte 0x%02x: %d", b, !want);
	}
	static const char *const key_ok[] = {"id_rsa.pub", "a..b", ".ssh", "..x", "ID-1_2.3"};
	for (size_t i = 0; i < sizeof(key_ok) / sizeof(key_ok[0]); i++)
		if (!k8s_secret_key_ok(s_of(key_ok[i])))
			fail_msg("secret key '%s' refused", key_ok[i]);
	static const char *const key_bad[] = {"", ".", "..", "a/b", "a b", "a=b", "a:b"};
	for (size_t i = 0; i < sizeof(key_bad) / sizeof(key_bad[0]); i++)
		if (k8s_secret_key_ok(s_of(key_bad[i])))
			fail_msg("secret key '%s' accepted", key_bad[i]);
	assert_true(k8s_secret_key_ok(s_of(long253)));
	assert_false(k8s_secret_key_ok(s_of(long254)));
}

/* k8s_utf8_ok: strict UTF-8 (RFC 3629) over exactly the bytes given. */
static void test_utf8(void **state)
{
	(void)state;
	static const char *const ok[] = {"", "ascii", "\xc3\xa9", "\xe2\x9c\x93", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!k8s_utf8_ok(ok[i], strlen(ok[i])))
			fail_msg("utf-8 #%zu refused", i);
	static const char *const bad[] = {
		"\xc3",             /* cut short */
		"\xe2\x9c",         /* cut short */
		"\x80",             /* a lone continuation byte */
		"\xc0\xaf",         /* overlong '/' */
		"\xe0\x80\xaf",     /* overlong '/' */
		"\xed\xbf\xbf",     /* a surrogate */
		"\xf4\x90\x80\x80", /* past U+10FFFF */
		"\xfe", "\xff",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (k8s_utf8_ok(bad[i], strlen(bad[i])))
			fail_msg("utf-8 #%zu accepted", i);
	/* Only n bytes are read: a cut multi-byte sequence is refused even
	 * when the rest follows, and a NUL byte is a character. */
	assert_false(k8s_utf8_ok("\xe2\x9c\x93", 2));
	assert_true(k8s_utf8_ok("a\0b", 3));
	/* The identity refuses what UTF-8 allows but the sidecar's
	 * environment cannot carry: a NUL. */
	assert_false(k8s_identity_ok((struct str){"a\0b", 3}));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_utf8),
	};
	return cmocka_run_group_tests_name("webhook k8s_names", tests, NULL, NULL);
}
