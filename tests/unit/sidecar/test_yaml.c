/* yaml: which scalars go plain, the exact quoted form of the others, a
 * read-back through a model of PyYAML's double-quoted scanner, and the
 * UTF-8 validator against Unicode's table of well-formed sequences. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sbuf.h"
#include "utf8.h"
#include "yaml.h"

#define LIT(s) s, sizeof(s) - 1

/* Printable form of bytes for failure messages. */
static const char *show(const char *s, size_t n)
{
	static char buf[4][512];
	static int k;
	char *o = buf[k++ & 3];
	size_t j = 0;
	for (size_t i = 0; i < n && j + 5 < sizeof(buf[0]); i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			o[j++] = (char)c;
		else
			j += (size_t)snprintf(o + j, 5, "\\x%02x", c);
	}
	o[j] = '\0';
	return o;
}

static size_t scalar(const char *s, size_t n, char *out, size_t cap)
{
	struct sbuf b = SBUF_INIT(out, cap);
	yaml_scalar(&b, s, n);
	assert_false(b.overflow);
	return b.len;
}

struct ycase {
	const char *name;
	const char *in;
	size_t n;
	int plain;
	const char *out; /* exact yaml_scalar output */
};

static const struct ycase ycases[] = {
	{"name", LIT("vm1"), 1, "vm1"},
	{"ns-name", LIT("default-vm1"), 1, "default-vm1"},
	{"dots underscores slash", LIT("my.vm_name/x-1"), 1, "my.vm_name/x-1"},
	{"single letter", LIT("a"), 1, "a"},
	{"upper digit", LIT("Z9"), 1, "Z9"},
	{"ends with dash", LIT("a-"), 1, "a-"},
	{"near bool noo", LIT("noo"), 1, "noo"},
	{"near bool yess", LIT("yess"), 1, "yess"},
	{"near null nul", LIT("nul"), 1, "nul"},
	{"n0", LIT("n0"), 1, "n0"},
	{"no", LIT("no"), 0, "\"no\""},
	{"No", LIT("No"), 0, "\"No\""},
	{"NO", LIT("NO"), 0, "\"NO\""},
	{"Yes", LIT("Yes"), 0, "\"Yes\""},
	{"yes", LIT("yes"), 0, "\"yes\""},
	{"ON", LIT("ON"), 0, "\"ON\""},
	{"on", LIT("on"), 0, "\"on\""},
	{"off", LIT("off"), 0, "\"off\""},
	{"True", LIT("True"), 0, "\"True\""},
	{"FALSE", LIT("FALSE"), 0, "\"FALSE\""},
	{"y", LIT("y"), 0, "\"y\""},
	{"N", LIT("N"), 0, "\"N\""},
	{"null", LIT("null"), 0, "\"null\""},
	{"Null", LIT("Null"), 0, "\"Null\""},
	{"NULL", LIT("NULL"), 0, "\"NULL\""},
	{"tilde", LIT("~"), 0, "\"~\""},
	{"empty", LIT(""), 0, "\"\""},
	{"int", LIT("123"), 0, "\"123\""},
	{"hex", LIT("0x1f"), 0, "\"0x1f\""},
	{"float exp", LIT("1e3"), 0, "\"1e3\""},
	{"date", LIT("2024-01-01"), 0, "\"2024-01-01\""},
	{"dash first", LIT("-dash"), 0, "\"-dash\""},
	{"dot first", LIT(".inf"), 0, "\".inf\""},
	{"mapping", LIT("a: b"), 0, "\"a: b\""},
	{"comment", LIT("a #b"), 0, "\"a #b\""},
	{"leading space", LIT(" lead"), 0, "\" lead\""},
	{"trailing space", LIT("trail "), 0, "\"trail \""},
	{"inner space", LIT("a b"), 0, "\"a b\""},
	{"quote", LIT("quote\"d"), 0, "\"quote\\\"d\""},
	{"single quote", LIT("it's"), 0, "\"it's\""},
	{"backslash", LIT("back\\slash"), 0, "\"back\\\\slash\""},
	{"tab", LIT("tab\t"), 0, "\"tab\\t\""},
	{"newline", LIT("new\nline"), 0, "\"new\\nline\""},
	{"CR", LIT("cr\r"), 0, "\"cr\\u000D\""},
	{"NUL", LIT("a\0b"), 0, "\"a\\u0000b\""},
	{"ESC", LIT("\x1b[0m"), 0, "\"\\u001B[0m\""},
	{"DEL", LIT("del\x7f"), 0, "\"del\\u007F\""},
	{"flow chars", LIT("a,b[c]{d}"), 0, "\"a,b[c]{d}\""},
	{"anchor alias tag", LIT("&a *b !c"), 0, "\"&a *b !c\""},
	{"percent at", LIT("a%b@c"), 0, "\"a%b@c\""},
	{"plus", LIT("a+b"), 0, "\"a+b\""},
	{"colon no space", LIT("a:b"), 0, "\"a:b\""},
	{"equals", LIT("a=b"), 0, "\"a=b\""},
	{"tilde inside", LIT("a~"), 0, "\"a~\""},
	{"e acute", LIT("caf\xc3\xa9"), 0, "\"caf\xc3\xa9\""},
	{"NBSP", LIT("a\xc2\xa0" "b"), 0, "\"a\xc2\xa0" "b\""},
	{"C1 U+0086", LIT("a\xc2\x86" "b"), 0, "\"a\\u0086b\""},
	{"C1 U+0080", LIT("\xc2\x80"), 0, "\"\\u0080\""},
	{"C1 U+009F", LIT("\xc2\x9f"), 0, "\"\\u009F\""},
	{"U+FFFE", LIT("\xef\xbf\xbe"), 0, "\"\\uFFFE\""},
	{"U+FFFF", LIT("\xef\xbf\xbf"), 0, "\"\\uFFFF\""},
	{"U+FFFD raw", LIT("\xef\xbf\xbd"), 0, "\"\xef\xbf\xbd\""},
	{"emoji", LIT("hi \xf0\x9f\x98\x80"), 0, "\"hi \xf0\x9f\x98\x80\""},
	{"U+10FFFF", LIT("\xf4\x8f\xbf\xbf"), 0, "\"\xf4\x8f\xbf\xbf\""},
	{"non-UTF-8 byte", LIT("a\xff" "b"), 0, "\"a\\uFFFDb\""},
	{"truncated sequence", LIT("a\xc3"), 0, "\"a\\uFFFD\""},
	{"overlong slash", LIT("\xc0\xaf"), 0, "\"\\uFFFD\\uFFFD\""},
	{"surrogate", LIT("\xed\xa0\x80"), 0, "\"\\uFFFD\\uFFFD\\uFFFD\""},
	{"lone continuation", LIT("\x80x"), 0, "\"\\uFFFDx\""},
};

static void test_yaml_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ycases) / sizeof(ycases[0]); i++) {
		const struct ycase *c = &ycases[i];
		int plain = yaml_plain_ok(c->in, c->n);
		if (plain != c->plain)
			fail_msg("%s: yaml_plain_ok(\"%s\") = %d, want %d", c->name, show(c->in, c->n),
				 plain, c->plain);
		char out[256];
		size_t n = scalar(c->in, c->n, out, sizeof(out));
		if (n != strlen(c->out) || memcmp(out, c->out, n) != 0)
			fail_msg("%s: yaml_scalar = %s, want %s", c->name, show(out, n),
				 show(c->out, strlen(c->out)));
	}
}

/* Every byte as a one-byte scalar: plain only for letters; the quoted
 * form never holds a raw control byte. */
static void test_yaml_every_byte(void **state)
{
	(void)state;
	for (int b = 0; b < 256; b++) {
		char in = (char)b;
		int alpha = (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z');
		int reserved = b == 'y' || b == 'Y' || b == 'n' || b == 'N';
		int want = alpha && !reserved;
		if (yaml_plain_ok(&in, 1) != want)
			fail_msg("byte 0x%02x: plain %d, want %d", b, !want, want);
		char out[32];
		size_t n = scalar(&in, 1, out, sizeof(out));
		for (size_t k = 0; k < n; k++) {
			unsigned char c = (unsigned char)out[k];
			if (c < 0x20 || c == 0x7f || c >= 0x80)
				fail_msg("byte 0x%02x: raw byte 0x%02x in %s", b, c, show(out, n));
		}
	}
}

/* ---- a model of PyYAML's double-quoted scalar scanner ------------------------ *
 * PyYAML (YAML 1.1, cloud-init's parser) in scanner.py scan_flow_scalar:
 * escapes from ESCAPE_REPLACEMENTS / ESCAPE_CODES; a raw line break (LF,
 * CR, CRLF, NEL U+0085, LS U+2028, PS U+2029) is folded: whitespace before
 * it dropped, LF/CR/NEL become one space (or the following breaks), LS/PS
 * kept, leading whitespace of the next line dropped.  The reader refuses
 * characters outside YAML's printable set.  Returns the decoded length, or
 * -1 for a document PyYAML rejects. */


/* One code point (input is valid UTF-8 here: yaml_scalar's output). */
static uint32_t cp_at(const char *s, size_t n, size_t i, size_t *len)
{
	const unsigned char *u = (const unsigned char *)s + i;
	if (i >= n) {
		*len = 0;
		return 0xffffffff; /* end of input */
	}
	if (u[0] < 0x80) {
		*len = 1;
		return u[0];
	}
	if ((u[0] & 0xe0) == 0xc0 && i + 1 < n) {
		*len = 2;
		return (uint32_t)(u[0] & 0x1f) << 6 | (u[1] & 0x3f);
	}
	if ((u[0] & 0xf0) == 0xe0 && i + 2 < n) {
		*len = 3;
		return (uint32_t)(u[0] & 0x0f) << 12 | (uint32_t)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
	}
	if ((u[0] & 0xf8) == 0xf0 && i + 3 < n) {
		*len = 4;
		return (uint32_t)(u[0] & 0x07) << 18 | (uint32_t)(u[1] & 0x3f) << 12 |
		       (uint32_t)(u[2] & 0x3f) << 6 | (u[3] & 0x3f);
	}
	*len = 1;
	return 0xfffffff; /* not UTF-8: PyYAML's reader refuses it */
}

static int is_break(uint32_t c)
{
	return c == '\n' || c == '\r' || c == 0x85 || c == 0x2028 || c == 0x2029;
}

static int printable(uint32_t c)
{
	return c == 0x09 || c == 0x0a || c == 0x0d || (c >= 0x20 && c <= 0x7e) || c == 0x85 ||
	       (c >= 0xa0 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) ||
	       (c >= 0x10000 && c <= 0x10ffff);
}

static int hexd(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static long pyyaml_dq(const char *s, size_t n, char *out, size_t cap)
{
	size_t i = 0, o = 0, l;
	(void)cap;
	for (size_t k = 0; k < n; k += l)
		if (!printable(cp_at(s, n, k, &l)))
			return -1;
	if (n < 2 || s[0] != '"')
		return -1;
	i = 1;
	for (;;) {
		if (i >= n)
			return -1;
		uint32_t c = cp_at(s, n, i, &l);
		if (c == '"') {
			if (i + 1 != n)
				return -1; /* something after the closing quote */
			return (long)o;
		}
		if (c == '\\') {
			if (i + 1 >= n)
				return -1;
			char e = s[i + 1];
			static const char rep_from[] = "0abt\tnvfre \"/\\";
			static const char rep_to[] = "\0\a\b\t\t\n\v\f\r\x1b \"/\\";
			const char *r = e ? memchr(rep_from, e, sizeof(rep_from) - 1) : NULL;
			if (r) {
				out[o++] = rep_to[r - rep_from];
				i += 2;
			} else if (e == 'N' || e == '_' || e == 'L' || e == 'P') {
				uint32_t cp = e == 'N' ? 0x85 : e == '_' ? 0xa0 : e == 'L' ? 0x2028 : 0x2029;
				o += utf8_put(cp, out + o);
				i += 2;
			} else if (e == 'x' || e == 'u' || e == 'U') {
				size_t len = e == 'x' ? 2 : e == 'u' ? 4 : 8;
				uint32_t v = 0;
				if (i + 2 + len > n)
					return -1;
				for (size_t k = 0; k < len; k++) {
					int h = hexd(s[i + 2 + k]);
					if (h < 0)
						return -1;
					v = v << 4 | (uint32_t)h;
				}
				o += utf8_put(v, out + o);
				i += 2 + len;
			} else {
				return -1; /* escaped line breaks are never written by us */
			}
			continue;
		}
		if (c == ' ' || c == '\t' || is_break(c)) {
			size_t ws = i;
			while (i < n && (s[i] == ' ' || s[i] == '\t'))
				i++;
			uint32_t b = cp_at(s, n, i, &l);
			if (!is_break(b)) {
				memcpy(out + o, s + ws, i - ws);
				o += i - ws;
				continue;
			}
			/* Whitespace before a break is dropped. */
			int first_is_lf = b != 0x2028 && b != 0x2029;
			if (b == '\r' && i + 1 < n && s[i + 1] == '\n')
				l = 2;
			i += l;
			char brk[64];
			size_t nb = 0;
			for (;;) {
				while (i < n && (s[i] == ' ' || s[i] == '\t'))
					i++;
				uint32_t b2 = cp_at(s, n, i, &l);
				if (!is_break(b2))
					break;
				if (b2 == '\r' && i + 1 < n && s[i + 1] == '\n')
					l = 2;
				i += l;
				nb += b2 == 0x2028 || b2 == 0x2029 ? utf8_put(b2, brk + nb)
								   : utf8_put('\n', brk + nb);
			}
			if (!first_is_lf)
				o += utf8_put(b, out + o);
			else if (nb == 0)
				out[o++] = ' ';
			memcpy(out + o, brk, nb);
			o += nb;
			continue;
		}
		memcpy(out + o, s + i, l);
		o += l;
		i += l;
	}
}

/* The model itself, on documents whose reading was checked with PyYAML 6. */
static void test_pyyaml_model(void **state)
{
	(void)state;
	static const struct {
		const char *doc;
		size_t n;
		const char *want; /* NULL: rejected */
		size_t wn;
	} cases[] = {
		{LIT("\"a\\\"b\""), LIT("a\"b")},
		{LIT("\"a\\u0041\\x42\\U00000043\""), LIT("aABC")},
		{LIT("\"a\xc2\x85" "b\""), LIT("a b")},           /* raw NEL folds to a space */
		{LIT("\"a \xe2\x80\xa8 b\""), LIT("a\xe2\x80\xa8" "b")}, /* raw LS eats spaces */
		{LIT("\"a\\Nb\""), LIT("a\xc2\x85" "b")},
		{LIT("\"a\\Lb\""), LIT("a\xe2\x80\xa8" "b")},
		{LIT("\"a\\u0085b\""), LIT("a\xc2\x85" "b")},
		{LIT("\"a\nb\""), LIT("a b")},
		{LIT("\"a\n\nb\""), LIT("a\nb")},
		{LIT("\"a\xc2\x86\""), NULL, 0}, /* raw C1 control: reader error */
		{LIT("\"a\\qb\""), NULL, 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[64];
		long r = pyyaml_dq(cases[i].doc, cases[i].n, out, sizeof(out));
		if (!cases[i].want) {
			if (r >= 0)
				fail_msg("model case %zu: %s accepted", i, show(cases[i].doc, cases[i].n));
			continue;
		}
		if (r != (long)cases[i].wn || memcmp(out, cases[i].want, cases[i].wn) != 0)
			fail_msg("model case %zu: %s read as %s", i, show(cases[i].doc, cases[i].n),
				 r < 0 ? "(rejected)" : show(out, (size_t)r));
	}
}

/* The header's promise: a YAML 1.1 reader reads back exactly the string
 * (valid UTF-8 input; other bytes become U+FFFD, tested above). */
static void check_roundtrip(const char *name, const char *in, size_t n)
{
	char out[512], back[512];
	size_t on = scalar(in, n, out, sizeof(out));
	if (yaml_plain_ok(in, n)) {
		if (on != n || memcmp(out, in, n) != 0)
			fail_msg("%s: plain output differs", name);
		return;
	}
	long r = pyyaml_dq(out, on, back, sizeof(back));
	if (r < 0)
		fail_msg("%s: PyYAML would reject %s", name, show(out, on));
	if ((size_t)r != n || memcmp(back, in, n) != 0)
		fail_msg("%s: %s reads back as %s, want %s", name, show(out, on),
			 show(back, (size_t)r), show(in, n));
}

static void test_yaml_roundtrip_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ycases) / sizeof(ycases[0]); i++)
		if (utf8_valid(ycases[i].in, ycases[i].n) == 0)
			check_roundtrip(ycases[i].name, ycases[i].in, ycases[i].n);
	/* Every code point of the BMP outside the surrogates, and a few past
	 * it, each between letters and between spaces. */
	for (uint32_t cp = 0; cp < 0x10000 + 300; cp++) {
		if (cp >= 0xd800 && cp <= 0xdfff)
			continue;
		/* NEL, LS and PS have their own test below. */
		if (cp == 0x85 || cp == 0x2028 || cp == 0x2029)
			continue;
		char in[16], name[32];
		size_t n = 0;
		in[n++] = 'a';
		in[n++] = ' ';
		n += utf8_put(cp, in + n);
		in[n++] = ' ';
		in[n++] = 'b';
		snprintf(name, sizeof(name), "U+%04X", (unsigned)cp);
		check_roundtrip(name, in, n);
	}
}

/* NEL (U+0085), LS and PS (U+2028/9) are line breaks to YAML 1.1 and
 * PyYAML: raw inside a double-quoted scalar they are folded, so "a\u0085b"
 * would read back as "a b" and "a \u2028 b" as "a\u2028b" (checked with
 * PyYAML 6.0.3).  They must be escaped.  (Found by this test; fixed in
 * 5ec0b97.) */
static void test_yaml_line_breaks(void **state)
{
	(void)state;
	static const struct {
		const char *name, *in;
		size_t n;
	} cases[] = {
		{"NEL between letters", LIT("a\xc2\x85" "b")},
		{"NEL at the end", LIT("instance\xc2\x85")},
		{"LS between spaces", LIT("a \xe2\x80\xa8 b")},
		{"PS between spaces", LIT("a \xe2\x80\xa9 b")},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_roundtrip(cases[i].name, cases[i].in, cases[i].n);
}

/* Output into a tight buffer: overflow is flagged, never written past. */
static void test_yaml_overflow(void **state)
{
	(void)state;
	char buf[12];
	memset(buf, 'Z', sizeof(buf));
	struct sbuf b = SBUF_INIT(buf, 8);
	yaml_scalar(&b, LIT("a: bcdefgh"));
	assert_true(b.overflow);
	for (size_t k = 8; k < sizeof(buf); k++)
		assert_int_equal(buf[k], 'Z');
	b = (struct sbuf)SBUF_INIT(buf, 8);
	yaml_scalar(&b, LIT("abcdefg")); /* plain, exactly fits */
	assert_false(b.overflow);
	assert_string_equal(buf, "abcdefg");
}

/* ---- utf8_valid --------------------------------------------------------------- */

static void test_utf8_table(void **state)
{
	(void)state;
	static const struct {
		const char *name, *s;
		size_t n;
		int rc;
	} cases[] = {
		{"empty", LIT(""), 0},
		{"ASCII", LIT("abc"), 0},
		{"NUL", LIT("\0"), 0},
		{"U+0080", LIT("\xc2\x80"), 0},
		{"U+07FF", LIT("\xdf\xbf"), 0},
		{"U+0800", LIT("\xe0\xa0\x80"), 0},
		{"euro", LIT("\xe2\x82\xac"), 0},
		{"U+D7FF", LIT("\xed\x9f\xbf"), 0},
		{"U+E000", LIT("\xee\x80\x80"), 0},
		{"U+FFFF", LIT("\xef\xbf\xbf"), 0},
		{"U+10000", LIT("\xf0\x90\x80\x80"), 0},
		{"emoji", LIT("\xf0\x9f\x98\x80"), 0},
		{"U+10FFFF", LIT("\xf4\x8f\xbf\xbf"), 0},
		{"overlong NUL", LIT("\xc0\x80"), -EINVAL},
		{"overlong C1", LIT("\xc1\xbf"), -EINVAL},
		{"overlong 3", LIT("\xe0\x80\x80"), -EINVAL},
		{"overlong 3 max", LIT("\xe0\x9f\xbf"), -EINVAL},
		{"overlong 4", LIT("\xf0\x80\x80\x80"), -EINVAL},
		{"overlong 4 max", LIT("\xf0\x8f\xbf\xbf"), -EINVAL},
		{"surrogate D800", LIT("\xed\xa0\x80"), -EINVAL},
		{"surrogate DFFF", LIT("\xed\xbf\xbf"), -EINVAL},
		{"CESU pair", LIT("\xed\xa0\xbd\xed\xb8\x80"), -EINVAL},
		{"U+110000", LIT("\xf4\x90\x80\x80"), -EINVAL},
		{"F5 lead", LIT("\xf5\x80\x80\x80"), -EINVAL},
		{"F7 lead", LIT("\xf7\xbf\xbf\xbf"), -EINVAL},
		{"5-byte form", LIT("\xf8\x88\x80\x80\x80"), -EINVAL},
		{"6-byte form", LIT("\xfc\x84\x80\x80\x80\x80"), -EINVAL},
		{"FE", LIT("\xfe"), -EINVAL},
		{"FF", LIT("\xff"), -EINVAL},
		{"lone continuation", LIT("\x80"), -EINVAL},
		{"continuation BF", LIT("a\xbf"), -EINVAL},
		{"truncated 2", LIT("\xc3"), -EINVAL},
		{"truncated 3", LIT("\xe2\x82"), -EINVAL},
		{"truncated 4", LIT("\xf0\x9f\x98"), -EINVAL},
		{"truncated after text", LIT("abc\xe2\x82"), -EINVAL},
		{"bad continuation 2", LIT("\xc3\x28"), -EINVAL},
		{"bad continuation 3a", LIT("\xe2\x28\xa1"), -EINVAL},
		{"bad continuation 3b", LIT("\xe2\x82\x28"), -EINVAL},
		{"bad continuation 4", LIT("\xf0\x28\x8c\xbc"), -EINVAL},
		{"continuation is lead", LIT("\xc3\xc3\xa9"), -EINVAL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[16];
		memcpy(buf, cases[i].s, cases[i].n);
		int rc = utf8_valid(buf, cases[i].n);
		if (rc != cases[i].rc)
			fail_msg("%s: utf8_valid(%s) = %d, want %d", cases[i].name,
				 show(cases[i].s, cases[i].n), rc, cases[i].rc);
	}
}

/* Unicode 15 Table 3-7, "Well-Formed UTF-8 Byte Sequences": a reference
 * written independently of yaml.c. */
static size_t wf_len(const unsigned char *s, size_t n)
{
	unsigned char a = s[0];
	if (a <= 0x7f)
		return 1;
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;
	if (a >= 0xc2 && a <= 0xdf) {
		len = 2;
	} else if (a >= 0xe0 && a <= 0xef) {
		len = 3;
		if (a == 0xe0)
			lo = 0xa0;
		if (a == 0xed)
			hi = 0x9f;
	} else if (a >= 0xf0 && a <= 0xf4) {
		len = 4;
		if (a == 0xf0)
			lo = 0x90;
		if (a == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t k = 2; k < len; k++)
		if (s[k] < 0x80 || s[k] > 0xbf)
			return 0;
	return len;
}

static int wf_valid(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t l = wf_len(s + i, n - i);
		if (!l)
			return -EINVAL;
		i += l;
	}
	return 0;
}

static void check_vs_ref(const unsigned char *s, size_t n)
{
	int got = utf8_valid((const char *)s, n), want = wf_valid(s, n);
	if (got != want)
		fail_msg("utf8_valid(%s) = %d, reference %d", show((const char *)s, n), got, want);
}

static void test_utf8_exhaustive(void **state)
{
	(void)state;
	unsigned char s[4];
	for (unsigned a = 0; a < 256; a++) {
		s[0] = (unsigned char)a;
		check_vs_ref(s, 1);
		for (unsigned b = 0; b < 256; b++) {
			s[1] = (unsigned char)b;
			check_vs_ref(s, 2);
		}
	}
	/* Three and four bytes: every lead from E0, the second byte around the
	 * continuation range, the rest at its edges. */
	static const unsigned char edge[] = {0x00, 0x7f, 0x80, 0x81, 0xbe, 0xbf, 0xc0, 0xff};
	for (unsigned a = 0xe0; a < 0x100; a++) {
		s[0] = (unsigned char)a;
		for (unsigned b = 0x70; b <= 0xc8; b++) {
			s[1] = (unsigned char)b;
			for (size_t c = 0; c < sizeof(edge); c++) {
				s[2] = edge[c];
				check_vs_ref(s, 3);
				for (size_t d = 0; d < sizeof(edge); d++) {
					s[3] = edge[d];
					check_vs_ref(s, 4);
				}
			}
		}
	}
}

/* Cutting a valid string is valid exactly on a character boundary. */
static void test_utf8_prefixes(void **state)
{
	(void)state;
	static const char s[] = "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";
	static const int boundary[] = {1, 1, 0, 1, 0, 0, 1, 0, 0, 0, 1, 1};
	for (size_t len = 0; len < sizeof(s); len++) {
		int rc = utf8_valid(s, len);
		if (rc != (boundary[len] ? 0 : -EINVAL))
			fail_msg("prefix %zu: rc %d", len, rc);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_yaml_table),
		cmocka_unit_test(test_yaml_every_byte),
		cmocka_unit_test(test_pyyaml_model),
		cmocka_unit_test(test_yaml_roundtrip_table),
		cmocka_unit_test(test_yaml_line_breaks),
		cmocka_unit_test(test_yaml_overflow),
		cmocka_unit_test(test_utf8_table),
		cmocka_unit_test(test_utf8_exhaustive),
		cmocka_unit_test(test_utf8_prefixes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
