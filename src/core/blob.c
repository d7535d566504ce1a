#include "blob.h"

#include <stdlib.h>
#include <string.h>

struct blob *blob_new(const void *p, size_t len)
{
	struct blob *b = malloc(sizeof(*b) + len + 1);
	if (!b)
		return NULL;
	b->refs = 1;
	b->len = len;
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
