#include "patch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

struct patch {
	struct json_object *ops; /* array of operation objects */
	size_t n;
};

struct patch *patch_new(void)
{
	struct patch *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->ops = json_object_new_array();
	if (!p->ops) {
		free(p);
		return NULL;
	}
	return p;
}

void patch_free(struct patch *p)
{
	if (!p)
		return;
	json_object_put(p->ops);
	free(p);
}

/* json_object_object_add() and json_object_array_add() take the reference
 * they are given when they succeed and leave it with the caller when they
 * fail (json-c 0.16 frees nothing on its error paths).  This one always
 * takes it; a NULL value (a failed constructor) fails. */
static int put(struct json_object *o, const char *key, struct json_object *v)
{
	if (!v)
		return -ENOMEM;
	if (json_object_object_add(o, key, v) < 0) {
		json_object_put(v);
		return -ENOMEM;
	}
	return 0;
}

static int op(struct patch *p, const char *name, const char *path, struct json_object *value)
{
	struct json_object *o = json_object_new_object();
	if (!o) {
		json_object_put(value);
		return -ENOMEM;
	}
	if (put(o, "op", json_object_new_string(name)) < 0 ||
	    put(o, "path", json_object_new_string(path)) < 0) {
		json_object_put(value);
		goto fail;
	}
	/* remove has no value; put() is not called for it */
	if (value && put(o, "value", value) < 0) /* value is gone either way */
		goto fail;
	if (json_object_array_add(p->ops, o) < 0)
		goto fail;
	p->n++;
	return 0;
fail:
	json_object_put(o);
	return -ENOMEM;
}

int patch_add(struct patch *p, const char *path, struct json_object *value)
{
	return value ? op(p, "add", path, value) : -ENOMEM;
}

int patch_replace(struct patch *p, const char *path, struct json_object *value)
{
	return value ? op(p, "replace", path, value) : -ENOMEM;
}

int patch_remove(struct patch *p, const char *path)
{
	return op(p, "remove", path, NULL);
}

size_t patch_count(const struct patch *p)
{
	return p->n;
}

const char *patch_json(struct patch *p, size_t *len)
{
	/* NOSLASHESCAPE: "/" needs no escape in JSON and pointers are full of it. */
	return json_object_to_json_string_length(p->ops,
						 JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE,
						 len);
}

void patch_pointer_token(struct sbuf *b, const char *tok, size_t n)
{
	sbuf_putc(b, '/');
	size_t run = 0;
	for (size_t i = 0; i < n; i++) {
		if (tok[i] != '~' && tok[i] != '/')
			continue;
		sbuf_put(b, tok + run, i - run);
		sbuf_puts(b, tok[i] == '~' ? "~0" : "~1");
		run = i + 1;
	}
	sbuf_put(b, tok + run, n - run);
}

int patch_pointer(char *out, size_t cap, const char *const *tokens, size_t n)
{
	struct sbuf b = SBUF_INIT(out, cap);
	if (cap)
		out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		patch_pointer_token(&b, tokens[i], strlen(tokens[i]));
	if (b.overflow || cap == 0)
		return -ENOSPC;
	return (int)b.len;
}

size_t patch_base64_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

void patch_base64(const void *in, size_t n, char *out)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const unsigned char *s = in;
	size_t i = 0, o = 0;
	for (; i + 3 <= n; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8 | s[i + 2];
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
		out[o++] = tab[v & 63];
	}
	if (n - i == 1) {
		unsigned v = (unsigned)s[i] << 16;
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (n - i == 2) {
		unsigned v = (unsigned)s[i] << 16 | (unsigned)s[i + 1] << 8;
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
}
