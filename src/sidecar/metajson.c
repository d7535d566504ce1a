#include "metajson.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jview.h"

/* Copies string node i, decoded, into the store (NUL-terminated). */
static int keep(struct jv *v, uint32_t i, char **o, const char **out, size_t *outlen)
{
	const char *p;
	size_t n;
	if (jv_str(v, i, &p, &n) < 0)
		return -ENOMEM;
	memcpy(*o, p, n);
	(*o)[n] = '\0';
	*out = *o;
	*outlen = n;
	*o += n + 1;
	return 0;
}

int metajson_parse(const char *s, size_t n, struct metajson *out, char *err, size_t errlen)
{
	struct jv v = {0};
	int r;
	memset(out, 0, sizeof(*out));
	if ((r = jv_parse(&v, s, n, err, errlen)) < 0)
		goto bad;
	if (jv_type(&v, 0) != JV_OBJECT) {
		snprintf(err, errlen, "expected a JSON object at byte %u", v.nodes[0].off);
		r = -EINVAL;
		goto bad;
	}
	if (v.nodes[0].n > METAJSON_MAX_KEYS) {
		snprintf(err, errlen, "more than %d keys", METAJSON_MAX_KEYS);
		r = -EINVAL;
		goto bad;
	}
	/* Decoding never lengthens a string (\uXXXX: 6 bytes in, 3 out at
	 * most; a pair 12 in, 4 out), and each string adds one NUL. */
	out->store = malloc(n + n / 2 + 2);
	out->kv = calloc(METAJSON_MAX_KEYS, sizeof(*out->kv));
	if (!out->store || !out->kv) {
		snprintf(err, errlen, "out of memory");
		r = -ENOMEM;
		goto bad;
	}
	char *o = out->store;
	for (uint32_t k = jv_first(&v, 0); k != JV_NONE; k = jv_next(&v, 0, k)) {
		struct metakv kv;
		if ((r = keep(&v, k, &o, &kv.k, &kv.kn)) < 0)
			goto oom;
		for (size_t j = 0; j < out->n; j++) {
			const struct metakv *e = &out->kv[j];
			if (e->kn == kv.kn && memcmp(e->k, kv.k, kv.kn) == 0) {
				snprintf(err, errlen, "key \"%.64s\" appears twice", kv.k);
				r = -EINVAL;
				goto bad;
			}
		}
		if (jv_type(&v, k + 1) != JV_STRING) {
			snprintf(err, errlen, "the value of \"%.64s\" is not a string", kv.k);
			r = -EINVAL;
			goto bad;
		}
		if ((r = keep(&v, k + 1, &o, &kv.v, &kv.vn)) < 0)
			goto oom;
		out->kv[out->n++] = kv;
	}
	jv_free(&v);
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
bad:
	jv_free(&v);
	metajson_free(out);
	return r;
}

void metajson_free(struct metajson *m)
{
	free(m->kv);
	free(m->store);
	memset(m, 0, sizeof(*m));
}
