/* metajson: the custom meta-data of imds.kubevirt.io/meta-data, a JSON
 * object whose values are all strings (the webhook checked it; the sidecar
 * reads the downward-API file, IMDS_META_DATA_FILE, and checks again).
 * Read with the core's jview.h; keys keep their order and are copied,
 * decoded to UTF-8, into one store. */
#ifndef IMDS_METAJSON_H
#define IMDS_METAJSON_H

#include <stddef.h>

#define METAJSON_MAX_KEYS 256

struct metakv {
	const char *k, *v; /* NUL-terminated, in the store */
	size_t kn, vn;
};

struct metajson {
	struct metakv *kv;
	size_t n;
	char *store;
};

/* 0, or -EINVAL with the reason and its byte offset in err (-ENOMEM). */
int metajson_parse(const char *s, size_t n, struct metajson *out, char *err, size_t errlen);
void metajson_free(struct metajson *m);

#endif
