/* libFuzzer: jview against json-c.  Beyond "no crash, no over-read" (the
 * text is an exactly sized copy): whatever jview accepts, json-c (strict,
 * UTF-8 checked) accepts too, and the two read the same tree: types,
 * element counts, member names and the last value of each, numbers' kind,
 * and every string byte for byte (compared before and after decoding).
 * json-c is more lenient in places (raw control bytes in strings, leading
 * zeros), so only that direction is checked; strings are also decoded by
 * a plain reference decoder here (json-c mangles some surrogate pairs),
 * which also says whether the string has an escaped lone surrogate, as
 * JV_F_LONE_SURROGATE must.  A second parse with tiny limits must fail
 * cleanly or agree. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "jview.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(struct jv *v, uint32_t i, struct json_object *o);

/* json-c 0.16 decodes some surrogate pairs to U+FFFD ("\ud977\udc00" is
 * U+6DC00 to Go, Python and RFC 8259; json-c gives U+FFFD), so a string
 * with a \uD8xx-\uDBxx escape is checked against this plain decoder
 * instead.  Every other string is checked against json-c. */
static int has_high_surrogate(const char *raw, size_t n)
{
	for (size_t k = 0; k + 3 < n; k++)
		if (raw[k] == '\\' && raw[k + 1] == 'u' && (raw[k + 2] == 'd' || raw[k + 2] == 'D') &&
		    strchr("89abAB", raw[k + 3]))
			return 1;
		else if (raw[k] == '\\')
			k++; /* an escaped backslash is not the start of one */
	return 0;
}

static size_t ref_put(uint32_t cp, char *o)
{
	if (cp < 0x80)
		return o[0] = (char)cp, 1;
	if (cp < 0x800)
		return o[0] = (char)(0xc0 | cp >> 6), o[1] = (char)(0x80 | (cp & 63)), 2;
	if (cp < 0x10000)
		return o[0] = (char)(0xe0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 63)),
		       o[2] = (char)(0x80 | (cp & 63)), 3;
	return o[0] = (char)(0xf0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 63)),
	       o[2] = (char)(0x80 | (cp >> 6 & 63)), o[3] = (char)(0x80 | (cp & 63)), 4;
}

static uint32_t ref_hex(const char *p)
{
	char h[5] = {p[0], p[1], p[2], p[3], 0};
	return (uint32_t)strtoul(h, NULL, 16);
}

/* The raw bytes of a string jview accepted, decoded the slow way; *lone
 * says whether an escaped surrogate stood alone. */
static size_t ref_decode(const char *raw, size_t n, char *out, int *lone)
{
	*lone = 0;
	size_t o = 0;
	for (size_t k = 0; k < n;) {
		if (raw[k] != '\\') {
			out[o++] = raw[k++];
			continue;
		}
		char c = raw[k + 1];
		const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
		if (c != 'u') {
			out[o++] = to[strchr(from, c) - from];
			k += 2;
			continue;
		}
		uint32_t cp = ref_hex(raw + k + 2);
		k += 6;
		if (cp >= 0xd800 && cp <= 0xdbff && k + 6 <= n && raw[k] == '\\' && raw[k + 1] == 'u') {
			uint32_t lo = ref_hex(raw + k + 2);
			if (lo >= 0xdc00 && lo <= 0xdfff) {
				cp = 0x10000 + (cp - 0xd800) * 0x400 + (lo - 0xdc00);
				k += 6;
			}
		}
		if (cp >= 0xd800 && cp <= 0xdfff) {
			cp = 0xfffd;
			*lone = 1;
		}
		o += ref_put(cp, out + o);
	}
	return o;
}

static void same_string(struct jv *v, uint32_t i, struct json_object *o)
{
	if (!json_object_is_type(o, json_type_string))
		abort();
	const char *raw = v->text + v->nodes[i].off;
	size_t rn = v->nodes[i].len;
	char *ref = malloc(rn + 1);
	if (!ref)
		return;
	const char *want = ref;
	int lone;
	size_t wn = ref_decode(raw, rn, ref, &lone);
	if (!(v->nodes[i].flags & JV_F_LONE_SURROGATE) != !lone)
		abort(); /* the flag callers refuse such strings by is wrong */
	if (!has_high_surrogate(raw, rn)) {
		want = json_object_get_string(o);
		if ((size_t)json_object_get_string_len(o) != wn || memcmp(want, ref, wn) != 0)
			abort(); /* the plain decoder and json-c disagree */
	}
	/* First compared by walking the escapes, then decoded. */
	if (!jv_str_eq(v, i, want, wn))
		abort();
	const char *p;
	size_t n;
	if (jv_str(v, i, &p, &n) == 0 && (n != wn || memcmp(p, want, n) != 0 || !jv_str_eq(v, i, want, wn)))
		abort();
	free(ref);
}

static void same(struct jv *v, uint32_t i, struct json_object *o)
{
	switch (jv_type(v, i)) {
	case JV_NULL:
		if (o)
			abort();
		break;
	case JV_BOOL:
		if (!json_object_is_type(o, json_type_boolean) ||
		    !json_object_get_boolean(o) != !(v->nodes[i].flags & JV_F_TRUE))
			abort();
		break;
	case JV_NUMBER:
		if (!json_object_is_type(o, json_type_int) && !json_object_is_type(o, json_type_double))
			abort();
		break;
	case JV_STRING:
		same_string(v, i, o);
		break;
	case JV_ARRAY: {
		if (!json_object_is_type(o, json_type_array) ||
		    json_object_array_length(o) != v->nodes[i].n)
			abort();
		size_t k = 0;
		for (uint32_t e = jv_first(v, i); e != JV_NONE; e = jv_next(v, i, e), k++)
			same(v, e, json_object_array_get_idx(o, k));
		if (k != v->nodes[i].n)
			abort();
		break;
	}
	case JV_OBJECT: {
		if (!json_object_is_type(o, json_type_object))
			abort();
		/* json-c keeps names as C strings: "a\u0000b" is its "a", so an
		 * object with a NUL in a name reads differently there. */
		size_t members = 0, distinct = 0;
		for (uint32_t m = jv_first(v, i); m != JV_NONE; m = jv_next(v, i, m), members++) {
			const char *name;
			size_t nn;
			if (jv_str(v, m, &name, &nn) < 0)
				return;
			if (memchr(name, '\0', nn))
				return;
		}
		if (members != v->nodes[i].n)
			abort();
		for (uint32_t m = jv_first(v, i); m != JV_NONE; m = jv_next(v, i, m)) {
			const char *name;
			size_t nn;
			if (jv_str(v, m, &name, &nn) < 0)
				return;
			char *key = strndup(name, nn);
			if (!key)
				return;
			uint32_t last = jv_get(v, i, key);
			if (last == m + 1)
				distinct++; /* counted once: at its last occurrence */
			struct json_object *jo = NULL;
			if (!json_object_object_get_ex(o, key, &jo) || last == JV_NONE)
				abort();
			same(v, last, jo);
			free(key);
		}
		if (distinct != (size_t)json_object_object_length(o))
			abort();
		break;
	}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jv v;
	char err[160];
	char *text = malloc(size ? size : 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	int r = jv_parse(&v, text, size, err, sizeof(err));
	if (r != 0 && r != -EINVAL && r != -E2BIG && r != -ENOMEM)
		abort();
	if (r != 0 && (!memchr(err, '\0', sizeof(err)) || !err[0]))
		abort();
	if (r == 0) {
		if (v.count == 0 || v.nodes[0].end != v.count)
			abort();
		/* json-c wants a terminator after a top-level number: read
		 * the text as the only element of an array. */
		char *wrapped = malloc(size + 2);
		if (wrapped) {
			wrapped[0] = '[';
			memcpy(wrapped + 1, data, size);
			wrapped[size + 1] = ']';
			struct json_tokener *tok = json_tokener_new_ex(JV_MAX_DEPTH + 8);
			json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
			struct json_object *o = json_tokener_parse_ex(tok, wrapped, (int)size + 2);
			if (!o || json_tokener_get_parse_end(tok) != size + 2)
				abort(); /* jview took what json-c refuses */
			same(&v, 0, json_object_array_get_idx(o, 0));
			json_object_put(o);
			json_tokener_free(tok);
			free(wrapped);
		}
		/* Tiny limits: a clean failure, or the same count. */
		uint32_t full = v.count;
		struct jv t = {.max_depth = 2, .max_nodes = 8};
		int rt = jv_parse(&t, text, size, err, sizeof(err));
		if (rt == 0 && t.count != full)
			abort();
		if (rt != 0 && rt != -EINVAL && rt != -E2BIG && rt != -ENOMEM)
			abort();
		if (rt == 0 && full > 8)
			abort();
		jv_free(&t);
	}
	free(text);
	return 0;
}
