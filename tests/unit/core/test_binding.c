/* binding: the wire format as a table of texts with their parse or their
 * error, every truncated prefix of the longest, the limits on a tap name
 * (the kernel's, KubeVirt's), the strict reading, and the binding table. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <net/if.h>

#include "binding.h"

struct good {
	const char *text;
	size_t n;
	const char *entries; /* "name/kind/tap;..." */
};

static const struct good goods[] = {
	{"", 0, ""},
	{"default:masquerade:tap0", 1, "default/masquerade/tap0;"},
	{"default:masquerade:tap0,br1:bridge:tap26578a32802,fast:sriov", 3,
	 "default/masquerade/tap0;br1/bridge/tap26578a32802;fast/sriov/;"},
	{"p:passt", 1, "p/passt/;"},
	{"a:managedtap:tap0,m:tap,u:unknown", 3, "a/managedtap/tap0;m/tap/;u/unknown/;"},
	{"#3:bridge:tap1234", 1, "#3/bridge/tap1234;"},
	{"#999:passt", 1, "#999/passt/;"},
	{"x.y_Z-9:masquerade:tapabcdefghijkl", 1, "x.y_Z-9/masquerade/tapabcdefghijkl;"},
};

struct bad {
	const char *text;
	const char *err;
};

static const struct bad bads[] = {
	{",", "entry 0: want NAME:KIND[:TAP], got ''"},
	{"default", "entry 0: want NAME:KIND[:TAP], got 'default'"},
	{"a:masquerade", "entry 0 (a): kind masquerade needs a tap"},
	{"a:passt:tap0", "entry 0 (a): kind passt takes no tap"},
	{"a:sriov:tap0", "entry 0 (a): kind sriov takes no tap"},
	{"a:bridge:eth0", "entry 0 (a): bad tap name 'eth0'"},
	{"a:bridge:tap", "entry 0 (a): bad tap name 'tap'"},
	{"a:bridge:tapabcdefghijklm", "entry 0 (a): bad tap name 'tapabcdefghijklm'"},
	{"a:bridge:tap0 ", "entry 0 (a): bad tap name 'tap0 '"},
	{"a:Bridge:tap0", "entry 0 (a): unknown kind 'Bridge'"},
	{"a::tap0", "entry 0 (a): unknown kind ''"},
	{":passt", "entry 0: bad interface name ''"},
	{"a b:passt", "entry 0: bad interface name 'a b'"},
	{"#:passt", "entry 0: bad interface name '#'"},
	{"#1234:passt", "entry 0: bad interface name '#1234'"},
	{"#1a:passt", "entry 0: bad interface name '#1a'"},
	{"a:b:c:d", "entry 0: want NAME:KIND[:TAP], got more than three ':'-separated fields"},
	{"a:passt,", "entry 1: empty (a trailing ',')"},
	{"a:passt,,b:passt", "entry 1: want NAME:KIND[:TAP], got ''"},
	{"a:bridge:tap0,b:bridge:tap0", "entry 1 (b): tap tap0 named twice"},
	{"a:passt\n", "entry 0 (a): unknown kind 'passt\n'"},
};

static void entries_text(const struct ifaces *f, char *out, size_t cap)
{
	size_t at = 0;
	out[0] = '\0';
	for (size_t i = 0; i < f->n; i++)
		at += (size_t)snprintf(out + at, cap - at, "%s/%s/%s;", f->e[i].name,
				       ifaces_kind_name(f->e[i].kind), f->e[i].tap);
}

static void test_goods(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
		struct ifaces f;
		char err[200] = "", txt[512];
		int r = ifaces_parse(goods[i].text, strlen(goods[i].text), &f, err, sizeof(err));
		if (r)
			fail_msg("'%s': %s", goods[i].text, err);
		assert_int_equal(f.n, goods[i].n);
		entries_text(&f, txt, sizeof(txt));
		assert_string_equal(txt, goods[i].entries);
	}
}

static void test_bads(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		struct ifaces f;
		char err[200] = "";
		int r = ifaces_parse(bads[i].text, strlen(bads[i].text), &f, err, sizeof(err));
		if (r != -EINVAL)
			fail_msg("'%s' accepted", bads[i].text);
		assert_string_equal(err, bads[i].err);
	}
}

/* A prefix of a good text parses or is refused, never read past its end:
 * the buffer is exactly the prefix, so ASan would see an overread. */
static void test_prefixes(void **state)
{
	(void)state;
	const char *t = goods[2].text;
	size_t len = strlen(t);
	for (size_t n = 0; n <= len; n++) {
		char *c = malloc(n ? n : 1);
		struct ifaces f;
		char err[200];
		assert_non_null(c);
		memcpy(c, t, n);
		int r = ifaces_parse(c, n, &f, err, sizeof(err));
		assert_true(r == 0 || r == -EINVAL);
		if (r == 0)
			assert_true(f.n <= 3);
		free(c);
	}
}

static void test_caps(void **state)
{
	(void)state;
	char *s = malloc(IFACES_TEXT_MAX + 2);
	struct ifaces f;
	char err[200];
	size_t at = 0;
	assert_non_null(s);
	/* 64 entries fit, 65 do not */
	for (int i = 0; i < IFACES_MAX; i++)
		at += (size_t)sprintf(s + at, "%s#%d:passt", i ? "," : "", i);
	assert_int_equal(ifaces_parse(s, at, &f, err, sizeof(err)), 0);
	assert_int_equal(f.n, IFACES_MAX);
	at += (size_t)sprintf(s + at, ",x:passt");
	assert_int_equal(ifaces_parse(s, at, &f, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "more than 64 entries");
	/* the text's own cap */
	memset(s, 'a', IFACES_TEXT_MAX + 1);
	assert_int_equal(ifaces_parse(s, IFACES_TEXT_MAX + 1, &f, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "4097 bytes: longer than 4096 bytes");
	/* a name of 63 bytes is the webhook's longest */
	memset(s, 'n', 63);
	memcpy(s + 63, ":passt", 6);
	assert_int_equal(ifaces_parse(s, 69, &f, err, sizeof(err)), 0);
	memset(s, 'n', 64);
	memcpy(s + 64, ":passt", 6);
	assert_int_equal(ifaces_parse(s, 70, &f, err, sizeof(err)), -EINVAL);
	free(s);
}

static void test_kinds(void **state)
{
	(void)state;
	static const int has_tap[IFACES_NKINDS] = {1, 1, 1, 0, 0, 0, 0};
	static const int served[IFACES_NKINDS] = {1, 1, 1, 1, 0, 0, 0};
	for (int k = 0; k < IFACES_NKINDS; k++) {
		assert_int_equal(ifaces_kind_has_tap((enum ifaces_kind)k), has_tap[k]);
		assert_int_equal(ifaces_kind_unserved((enum ifaces_kind)k) == NULL, served[k]);
	}
	assert_string_equal(ifaces_kind_name(IFACES_NKINDS), "?");
}

/* The tap-name limit, from its two sources.  The kernel takes names of
 * IFNAMSIZ - 1 bytes (include/uapi/linux/if.h: IFNAMSIZ 16 with the NUL;
 * net/core/dev.c dev_valid_name()); the reader takes any such name.
 * KubeVirt makes tap0 and "tap" + 11 hex digits (maxIfaceNameLen = 11,
 * pkg/network/namescheme/networknamescheme.go; "tap" + podIfaceName[3:],
 * pkg/network/link/names.go:34-40): 14 bytes; in its older ordinal
 * scheme tap<N> for the pod interface net<N> (networknamescheme.go:120-123),
 * which VMIs from before the hashed names and their migration targets keep
 * (pkg/network/pod/annotations/generator.go:93-113).  The strict reading
 * takes those three forms. */
static void test_tap_limits(void **state)
{
	(void)state;
	struct ifaces f;
	char err[200];
	assert_int_equal(IFACES_TAP_MAX, IFNAMSIZ - 1);
	assert_int_equal(IFACES_TAP_HASHED_LEN, (int)strlen("tap") + 11);
	static const struct {
		const char *text;
		int lax, strict;
	} t[] = {
		{"a:bridge:tap0", 0, 0},
		{"a:bridge:tap26578a32802", 0, 0},                /* 14, KubeVirt's */
		{"a:bridge:tap26578a328021", 0, -EINVAL},         /* 15, the kernel's longest */
		{"a:bridge:tap26578a3280211", -EINVAL, -EINVAL},  /* 16 */
		{"a:bridge:tap26578a3280", 0, -EINVAL},           /* 13 */
		{"a:bridge:tap26578A32802", 0, -EINVAL},          /* upper case */
		{"a:bridge:tap1", 0, 0},                          /* KubeVirt's ordinal scheme (net1) */
		{"a:bridge:tap12", 0, 0},                         /* net12 */
		{"a:bridge:tap01", 0, -EINVAL},                   /* no net01 */
		{"a:bridge:tap1a", 0, -EINVAL},                   /* neither scheme */
		{"a:bridge:tap123456789012", 0, -EINVAL},         /* 12 digits: neither */
		{"a:bridge:tap999", 0, 0},                        /* net999 */
		{"a:bridge:tap1000", 0, -EINVAL},                 /* past 3 digits */
		{"a:bridge:tap12345678901", 0, 0},                /* 11 digits: a hash can be all digits */
		{"#0:passt,#1:bridge:tap0", 0, 0},
		{"#1:passt", 0, -EINVAL},                         /* not its own index */
		{"#00:passt", 0, -EINVAL},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int lax = ifaces_parse(t[i].text, strlen(t[i].text), &f, err, sizeof(err));
		int strict = ifaces_parse_strict(t[i].text, strlen(t[i].text), &f, err, sizeof(err));
		if (lax != t[i].lax || strict != t[i].strict)
			fail_msg("'%s': lax %d strict %d, want %d %d", t[i].text, lax, strict, t[i].lax,
				 t[i].strict);
	}
	assert_int_equal(ifaces_parse_strict("a:bridge:tap01", 14, &f, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "entry 0 (a): bad tap name 'tap01' (KubeVirt's are tap0, tap<N> or tap "
				 "and 11 lowercase hex digits)");
	/* an old VMI's pod: both schemes' taps read back as written */
	assert_int_equal(ifaces_parse_strict("default:masquerade:tap0,blue:bridge:tap1", 40, &f, err,
					     sizeof(err)), 0);
	assert_string_equal(f.e[1].tap, "tap1");
	assert_int_equal(ifaces_parse_strict("x:passt,#0:passt", 16, &f, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "entry 1: bad interface name '#0' (1..63 of [A-Za-z0-9._-], or #1)");
}

/* The table: every row's KIND reads back as itself, and the writer's text
 * of every kind is what both readings take. */
static void test_table(void **state)
{
	(void)state;
	static const int in_pod[IFACES_NKINDS] = {1, 1, 1, 1, 0, 0, 0};
	static const int plugin[IFACES_NKINDS] = {1, 1, 1, 1, 0, 1, 0};
	for (int k = 0; k < IFACES_NKINDS; k++) {
		enum ifaces_kind back;
		const char *name = ifaces_kind_name((enum ifaces_kind)k);
		char buf[64];
		struct sbuf b = SBUF_INIT(buf, sizeof(buf));
		struct ifaces f;
		char err[200];
		assert_int_equal(ifaces_kind_parse(name, strlen(name), &back), 0);
		assert_int_equal(back, k);
		assert_int_equal(ifaces_kind_in_pod((enum ifaces_kind)k), in_pod[k]);
		assert_int_equal(binding_table[k].plugin, plugin[k]);
		assert_int_equal(binding_table[k].path == BINDING_NONE, binding_table[k].unserved != NULL);
		ifaces_append(&b, 0, "n", 1, (enum ifaces_kind)k, "tap0");
		assert_false(b.overflow);
		if (ifaces_parse_strict(buf, b.len, &f, err, sizeof(err)))
			fail_msg("'%.*s': %s", (int)b.len, buf, err);
		assert_int_equal(f.n, 1);
		assert_int_equal(f.e[0].kind, k);
		assert_int_equal(ifaces_parse(buf, b.len, &f, err, sizeof(err)), 0);
	}
	assert_int_equal(ifaces_kind_parse("?", 1, &(enum ifaces_kind){0}), -EINVAL);
	assert_false(ifaces_kind_in_pod(IFACES_NKINDS));
	assert_false(ifaces_kind_has_tap(IFACES_NKINDS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_goods),   cmocka_unit_test(test_bads),
		cmocka_unit_test(test_prefixes), cmocka_unit_test(test_caps),
		cmocka_unit_test(test_kinds),   cmocka_unit_test(test_tap_limits),
		cmocka_unit_test(test_table),
	};
	return cmocka_run_group_tests_name("binding", tests, NULL, NULL);
}
