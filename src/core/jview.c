#include "jview.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sbuf.h"
#include "utf8.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define DEFAULT_MAX_NODES (1u << 20)
/* A virt-launcher pod review is ~500-1500 nodes: one allocation serves it. */
#define INITIAL_NODES 2048u

struct scan {
	struct jv *v;
	const unsigned char *s;
	size_t len;
	char *err;
	size_t errlen;
};

__attribute__((format(printf, 3, 4))) static int bad(struct scan *sc, size_t off, const char *fmt, ...)
{
	sc->v->err_off = off;
	if (sc->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(sc->err, sc->errlen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int unexpected(struct scan *sc, size_t i, const char *want)
{
	unsigned char c = sc->s[i];
	if (c >= 0x21 && c < 0x7f)
		return bad(sc, i, "unexpected '%c' at byte %zu (want %s)", c, i, want);
	return bad(sc, i, "unexpected byte 0x%02x at byte %zu (want %s)", c, i, want);
}

static int ends_inside(struct scan *sc)
{
	return bad(sc, sc->len, "the text ends inside a value");
}

static int grow(struct scan *sc)
{
	struct jv *v = sc->v;
	uint32_t max = v->max_nodes ? v->max_nodes : DEFAULT_MAX_NODES;
	if (v->count >= max) {
		v->err_off = 0;
		if (sc->errlen)
			snprintf(sc->err, sc->errlen, "more than %u values and member names", max);
		return -E2BIG;
	}
	uint32_t cap = v->cap ? v->cap : INITIAL_NODES / 2;
	cap = cap > max / 2 ? max : cap * 2;
	struct jv_node *n = v->nodes_borrowed ? malloc((size_t)cap * sizeof(*n))
					      : realloc(v->nodes, (size_t)cap * sizeof(*n));
	if (!n) {
		if (sc->errlen)
			snprintf(sc->err, sc->errlen, "out of memory");
		return -ENOMEM;
	}
	if (v->nodes_borrowed && v->count)
		memcpy(n, v->nodes, (size_t)v->count * sizeof(*n));
	v->nodes_borrowed = 0;
	v->nodes = n;
	v->cap = cap;
	return 0;
}

/* Appends a node; its index, or a negative errno. */
static int64_t push(struct scan *sc, enum jv_type t, size_t off)
{
	struct jv *v = sc->v;
	/* max_nodes holds whatever the array's size (a borrowed one's too) */
	if (v->count == v->cap || (v->max_nodes && v->count >= v->max_nodes)) {
		int r = grow(sc);
		if (r < 0)
			return r;
	}
	uint32_t i = v->count++;
	v->nodes[i] = (struct jv_node){.off = (uint32_t)off, .type = (uint8_t)t, .end = i + 1, .dec = JV_NONE};
	return i;
}

static size_t skip_ws(const unsigned char *s, size_t i, size_t len)
{
	while (i < len && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t'))
		i++;
	return i;
}

static int hex4(const char *s, uint32_t *out)
{
	uint32_t v = 0;
	for (int k = 0; k < 4; k++) {
		int h = sbuf_hexval(s[k]);
		if (h < 0)
			return -1;
		v = v << 4 | (uint32_t)h;
	}
	*out = v;
	return 0;
}

/* The \u escape at s (n bytes there, s[0] == '\\', s[1] == 'u'): its code
 * point and raw length (6, or 12 for a surrogate pair).  A surrogate that
 * is not half of a pair is U+FFFD, and 1 says so; else 0.  -1 when there
 * are not four hex digits. */
static int u_escape(const char *s, size_t n, uint32_t *cp, size_t *raw)
{
	uint32_t hi, lo;
	if (n < 6 || hex4(s + 2, &hi) < 0)
		return -1;
	*raw = 6;
	*cp = hi;
	if (hi >= 0xd800 && hi <= 0xdbff) {
		if (n >= 12 && s[6] == '\\' && s[7] == 'u' && hex4(s + 8, &lo) == 0 && lo >= 0xdc00 &&
		    lo <= 0xdfff) {
			*cp = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
			*raw = 12;
			return 0;
		}
		*cp = 0xfffd;
		return 1;
	}
	if (hi >= 0xdc00 && hi <= 0xdfff) {
		*cp = 0xfffd;
		return 1;
	}
	return 0;
}

static char simple_escape(char c)
{
	switch (c) {
	case '"':
	case '\\':
	case '/':
		return c;
	case 'b':
		return '\b';
	case 'f':
		return '\f';
	case 'n':
		return '\n';
	case 'r':
		return '\r';
	case 't':
		return '\t';
	default:
		return 0;
	}
}

/* Plain string bytes: printable ASCII but '"' and '\\'.  The number of
 * them at p, of at most 16 (len - i >= 16 bytes there). */
#if defined(__SSE2__)
static unsigned plain16(const unsigned char *p)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i q = _mm_cmpeq_epi8(x, _mm_set1_epi8('"'));
	__m128i b = _mm_cmpeq_epi8(x, _mm_set1_epi8('\\'));
	/* Signed: bytes >= 0x80 are negative, so this catches them too. */
	__m128i c = _mm_cmplt_epi8(x, _mm_set1_epi8(0x20));
	unsigned m = (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(q, b), c));
	return m ? (unsigned)__builtin_ctz(m) : 16;
}
#elif __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static unsigned plain16(const unsigned char *p)
{
	const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
	for (unsigned k = 0; k < 16; k += 8) {
		uint64_t w;
		memcpy(&w, p + k, 8);
		uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
		/* The lowest flagged byte is a real one (borrows only go up). */
		uint64_t hit = (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & highs;
		if (hit)
			return k + (unsigned)__builtin_ctzll(hit) / 8; /* little-endian */
	}
	return 16;
}
#else
static unsigned plain16(const unsigned char *p)
{
	unsigned k = 0;
	while (k < 16 && p[k] >= 0x20 && p[k] < 0x80 && p[k] != '"' && p[k] != '\\')
		k++;
	return k;
}
#endif

/* A lead byte and the continuation bytes after it, cut by the end of the
 * text: a truncated text, not a wrong one. */
static int cut_short(const unsigned char *p, size_t n)
{
	size_t want = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 ? 2 : 0;
	if (p[0] > 0xf4 || n >= want)
		return 0;
	for (size_t k = 1; k < n; k++)
		if ((p[k] & 0xc0) != 0x80)
			return 0;
	return 1;
}

/* The string whose opening quote is at *pi: checks it, fills node k, and
 * leaves *pi after the closing quote. */
static int scan_string(struct scan *sc, size_t *pi, uint32_t k)
{
	const unsigned char *s = sc->s;
	size_t len = sc->len, i = *pi + 1, start = i, shrink = 0;
	uint8_t flags = 0;
	for (;;) {
		while (len - i >= 16) {
			unsigned run = plain16(s + i);
			i += run;
			if (run < 16)
				break;
		}
		if (i == len)
			return ends_inside(sc);
		unsigned char c = s[i];
		if (c == '"')
			break;
		if (c == '\\') {
			flags |= JV_F_ESCAPED;
			if (len - i < 2)
				return ends_inside(sc);
			if (simple_escape((char)s[i + 1])) {
				shrink += 1;
				i += 2;
				continue;
			}
			if (s[i + 1] != 'u')
				return bad(sc, i, "invalid escape '\\%c' at byte %zu",
					   s[i + 1] >= 0x20 && s[i + 1] < 0x7f ? s[i + 1] : '?', i);
			uint32_t cp;
			size_t raw;
			int lone = u_escape((const char *)s + i, len - i, &cp, &raw);
			if (lone < 0)
				return len - i < 6 ? ends_inside(sc)
						   : bad(sc, i, "invalid \\u escape at byte %zu", i);
			if (lone)
				flags |= JV_F_LONE_SURROGATE;
			char tmp[4];
			shrink += raw - utf8_put(cp, tmp);
			i += raw;
			continue;
		}
		if (c < 0x20)
			return bad(sc, i, "control byte 0x%02x in a string at byte %zu", c, i);
		if (c < 0x80) {
			i++;
			continue;
		}
		uint32_t cp;
		size_t l = utf8_next(s + i, len - i, &cp);
		if (!l)
			return cut_short(s + i, len - i) ? ends_inside(sc)
							 : bad(sc, i, "invalid UTF-8 at byte %zu", i);
		i += l;
	}
	struct jv_node *n = &sc->v->nodes[k];
	n->off = (uint32_t)start;
	n->len = (uint32_t)(i - start);
	n->n = (uint32_t)(i - start - shrink);
	n->flags = flags;
	*pi = i + 1;
	return 0;
}

static int scan_literal(struct scan *sc, size_t *pi, const char *lit)
{
	size_t i = *pi;
	for (size_t k = 0; lit[k]; k++, i++) {
		if (i == sc->len)
			return ends_inside(sc);
		if (sc->s[i] != (unsigned char)lit[k])
			return unexpected(sc, i, "a value");
	}
	*pi = i;
	return 0;
}

static int is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(struct scan *sc, size_t *pi, uint32_t k)
{
	const unsigned char *s = sc->s;
	size_t len = sc->len, i = *pi;
	uint8_t flags = JV_F_INTEGER;
	if (s[i] == '-')
		i++;
	if (i == len)
		return ends_inside(sc);
	if (s[i] == '0')
		i++;
	else if (is_digit(s[i]))
		while (i < len && is_digit(s[i]))
			i++;
	else
		return unexpected(sc, i, "a digit");
	if (i < len && s[i] == '.') {
		flags = 0;
		if (++i == len)
			return ends_inside(sc);
		if (!is_digit(s[i]))
			return unexpected(sc, i, "a digit");
		while (i < len && is_digit(s[i]))
			i++;
	}
	if (i < len && (s[i] == 'e' || s[i] == 'E')) {
		flags = 0;
		if (++i < len && (s[i] == '+' || s[i] == '-'))
			i++;
		if (i == len)
			return ends_inside(sc);
		if (!is_digit(s[i]))
			return unexpected(sc, i, "a digit");
		while (i < len && is_digit(s[i]))
			i++;
	}
	sc->v->nodes[k].len = (uint32_t)(i - *pi);
	sc->v->nodes[k].flags = flags;
	*pi = i;
	return 0;
}

int jv_parse(struct jv *v, const char *text, size_t len, char *err, size_t errlen)
{
	struct scan sc = {.v = v, .s = (const unsigned char *)text, .len = len, .err = err, .errlen = errlen};
	const unsigned char *s = sc.s;
	unsigned maxd = v->max_depth && v->max_depth < JV_MAX_DEPTH ? v->max_depth : JV_MAX_DEPTH;
	uint32_t stack[JV_MAX_DEPTH];
	unsigned depth = 0;
	int64_t k;
	int r;

	v->text = text;
	v->len = len;
	v->count = 0;
	v->scratch_len = 0;
	v->err_off = 0;
	if (errlen)
		err[0] = '\0';
	if (len >= UINT32_MAX) {
		if (errlen)
			snprintf(err, errlen, "the text is larger than 4 GiB");
		return -E2BIG;
	}
	size_t i = skip_ws(s, 0, len);
	if (i == len)
		return bad(&sc, i, "no JSON value");

value: /* a value starts at s[i] */
	/* also reached by goto from the states below, where i may be len */
	// cppcheck-suppress identicalConditionAfterEarlyExit ; see the line above
	if (i == len)
		return ends_inside(&sc);
	if (depth && v->nodes[stack[depth - 1]].type == JV_ARRAY)
		v->nodes[stack[depth - 1]].n++;
	switch (s[i]) {
	case '{':
	case '[': {
		int obj = s[i] == '{';
		if (depth == maxd)
			return bad(&sc, i, "nested deeper than %u levels at byte %zu", maxd, i);
		if ((k = push(&sc, obj ? JV_OBJECT : JV_ARRAY, i)) < 0)
			return (int)k;
		stack[depth++] = (uint32_t)k;
		i = skip_ws(s, i + 1, len);
		if (i == len)
			return ends_inside(&sc);
		if (s[i] == (obj ? '}' : ']')) {
			depth--;
			i++;
			goto after;
		}
		if (obj)
			goto key;
		goto value;
	}
	case '"':
		if ((k = push(&sc, JV_STRING, i)) < 0)
			return (int)k;
		if ((r = scan_string(&sc, &i, (uint32_t)k)) < 0)
			return r;
		goto after;
	case 't':
	case 'f':
	case 'n':
		if ((k = push(&sc, s[i] == 'n' ? JV_NULL : JV_BOOL, i)) < 0)
			return (int)k;
		if (s[i] == 't')
			v->nodes[k].flags = JV_F_TRUE;
		{
			size_t at = i;
			if ((r = scan_literal(&sc, &i, s[i] == 't' ? "true" : s[i] == 'f' ? "false" : "null")) < 0)
				return r;
			v->nodes[k].len = (uint32_t)(i - at);
		}
		goto after;
	default:
		if (s[i] != '-' && !is_digit(s[i]))
			return unexpected(&sc, i, "a value");
		if ((k = push(&sc, JV_NUMBER, i)) < 0)
			return (int)k;
		if ((r = scan_number(&sc, &i, (uint32_t)k)) < 0)
			return r;
		goto after;
	}

key: /* a member name starts at s[i] */
	if (s[i] != '"')
		return unexpected(&sc, i, "a member name");
	v->nodes[stack[depth - 1]].n++;
	if ((k = push(&sc, JV_STRING, i)) < 0)
		return (int)k;
	if ((r = scan_string(&sc, &i, (uint32_t)k)) < 0)
		return r;
	i = skip_ws(s, i, len);
	if (i == len)
		return ends_inside(&sc);
	if (s[i] != ':')
		return unexpected(&sc, i, "':'");
	i = skip_ws(s, i + 1, len);
	goto value;

after: /* a value ended just before s[i] */
	i = skip_ws(s, i, len);
	if (depth == 0) {
		if (i != len)
			return bad(&sc, i, "unexpected bytes after the value at byte %zu", i);
		return 0;
	}
	if (i == len)
		return ends_inside(&sc);
	{
		uint32_t top = stack[depth - 1];
		int obj = v->nodes[top].type == JV_OBJECT;
		if (s[i] == ',') {
			i = skip_ws(s, i + 1, len);
			if (i == len)
				return ends_inside(&sc);
			if (obj)
				goto key;
			goto value;
		}
		if (s[i] != (obj ? '}' : ']'))
			return unexpected(&sc, i, obj ? "',' or '}'" : "',' or ']'");
		v->nodes[top].end = v->count;
		depth--;
		i++;
		goto after;
	}
}

void jv_free(struct jv *v)
{
	if (!v)
		return;
	if (!v->nodes_borrowed)
		free(v->nodes);
	v->nodes_borrowed = 0;
	free(v->scratch);
	v->nodes = NULL;
	v->scratch = NULL;
	v->count = v->cap = 0;
	v->scratch_len = v->scratch_cap = 0;
	v->text = NULL;
	v->len = 0;
}

uint32_t jv_first(const struct jv *v, uint32_t c)
{
	if (c == JV_NONE || (v->nodes[c].type != JV_ARRAY && v->nodes[c].type != JV_OBJECT) ||
	    v->nodes[c].end == c + 1)
		return JV_NONE;
	return c + 1;
}

uint32_t jv_next(const struct jv *v, uint32_t c, uint32_t i)
{
	/* An object's member is a name and a value: step over both. */
	uint32_t nx = v->nodes[c].type == JV_OBJECT ? v->nodes[i + 1].end : v->nodes[i].end;
	return nx < v->nodes[c].end ? nx : JV_NONE;
}

/* Decodes n raw bytes of a checked string into out (room for n). */
static size_t unescape(const char *s, size_t n, char *out)
{
	size_t i = 0, o = 0;
	while (i < n) {
		const char *b = memchr(s + i, '\\', n - i);
		size_t run = b ? (size_t)(b - (s + i)) : n - i;
		memcpy(out + o, s + i, run);
		o += run;
		i += run;
		if (!b)
			break;
		char c = simple_escape(s[i + 1]);
		if (c) {
			out[o++] = c;
			i += 2;
			continue;
		}
		uint32_t cp = 0xfffd;
		size_t raw = 6;
		(void)u_escape(s + i, n - i, &cp, &raw); /* checked by the scan */
		o += utf8_put(cp, out + o);
		i += raw;
	}
	return o;
}

int jv_str(struct jv *v, uint32_t i, const char **p, size_t *n)
{
	struct jv_node *nd = &v->nodes[i];
	if (!(nd->flags & JV_F_ESCAPED)) {
		*p = v->text + nd->off;
		*n = nd->len;
		return 0;
	}
	if (nd->dec == JV_NONE) {
		/* Room for every string of the text at once (decoded bytes are
		 * never more than raw ones), so the buffer is sized once per
		 * text, before any pointer into it is handed out. */
		if (v->scratch_cap < v->len) {
			char *b = realloc(v->scratch, v->len);
			if (!b)
				return -ENOMEM;
			v->scratch = b;
			v->scratch_cap = v->len;
		}
		nd->dec = (uint32_t)v->scratch_len;
		v->scratch_len += unescape(v->text + nd->off, nd->len, v->scratch + nd->dec);
	}
	*p = v->scratch + nd->dec;
	*n = nd->n;
	return 0;
}

int jv_str_eq(const struct jv *v, uint32_t i, const char *s, size_t n)
{
	const struct jv_node *nd = &v->nodes[i];
	if (nd->n != n)
		return 0;
	const char *raw = v->text + nd->off;
	if (!(nd->flags & JV_F_ESCAPED))
		return memcmp(raw, s, n) == 0;
	if (nd->dec != JV_NONE)
		return memcmp(v->scratch + nd->dec, s, n) == 0;
	/* Decode as we compare, one escape at a time. */
	size_t r = 0, o = 0;
	while (r < nd->len) {
		if (raw[r] != '\\') {
			if (raw[r++] != s[o++])
				return 0;
			continue;
		}
		char tmp[4];
		size_t tn = 1, adv = 2;
		if ((tmp[0] = simple_escape(raw[r + 1])) == 0) {
			uint32_t cp = 0xfffd;
			(void)u_escape(raw + r, nd->len - r, &cp, &adv);
			tn = utf8_put(cp, tmp);
		}
		if (memcmp(tmp, s + o, tn) != 0)
			return 0;
		o += tn;
		r += adv;
	}
	return 1;
}

uint32_t jv_get(const struct jv *v, uint32_t obj, const char *key)
{
	if (obj == JV_NONE || v->nodes[obj].type != JV_OBJECT)
		return JV_NONE;
	size_t kn = strlen(key);
	uint32_t found = JV_NONE;
	for (uint32_t k = obj + 1; k < v->nodes[obj].end; k = v->nodes[k + 1].end)
		if (jv_str_eq(v, k, key, kn))
			found = k + 1;
	return found;
}
