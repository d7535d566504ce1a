#include "blob.h"

#include <stdlib.h>
#include <string.h>

#include "sbuf.h"

struct blob *blob_new(const void *p, size_t len)
{
	struct blob *b = malloc(sizeof(*b) + len + 1);
	if (!b)
		return NULL;
	b->refs = 1;
	b->len = len;
	b->tag = 0;
	b->etag[0] = '\0';
	if (len)
		memcpy(b->data, p, len);
	b->data[len] = '\0';
	return b;
}

struct blob *blob_ref(struct blob *b)
{
	if (b)
		b->refs++;
	return b;
}

void blob_unref(struct blob *b)
{
	if (b && --b->refs == 0)
		free(b);
}

uint64_t blob_hash(const void *p, size_t n)
{
	const unsigned char *s = p;
	uint64_t h = 0xcbf29ce484222325u;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3u;
	}
	/* a final avalanche (splitmix64), the length folded in */
	h ^= (uint64_t)n * 0x9e3779b97f4a7c15u;
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9u;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebu;
	h ^= h >> 31;
	return h ? h : 1;
}

uint64_t blob_tag(struct blob *b)
{
	if (!b->tag)
		b->tag = blob_hash(b->data, b->len);
	return b->tag;
}

void blob_tag_text(uint64_t tag, char out[19])
{
	struct sbuf b = SBUF_INIT(out, 19);
	sbuf_putc(&b, '"');
	sbuf_put_hex(&b, tag, 16);
	sbuf_putc(&b, '"');
}

const char *blob_etag(struct blob *b)
{
	if (!b->etag[0])
		blob_tag_text(blob_tag(b), b->etag);
	return b->etag;
}
