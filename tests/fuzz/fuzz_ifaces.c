/* libFuzzer: the IMDS_INTERFACES reader of the shared binding table
 * (src/core/binding.c), both readings: any text gives a table or an error
 * message, a table's entries are what the format allows, what the strict
 * reading (the webhook's) takes the sidecar's takes too, and the writer
 * gives back the same text. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "binding.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ifaces f, g;
	static char back[IFACES_TEXT_MAX + 1];
	char err[200];
	int strict = ifaces_parse_strict((const char *)data, size, &g, err, sizeof(err));
	if (strict != 0 && strict != -EINVAL)
		abort();
	if (strict && (!err[0] || strlen(err) >= sizeof(err)))
		abort();
	int r = ifaces_parse((const char *)data, size, &f, err, sizeof(err));
	if (r != 0 && r != -EINVAL)
		abort();
	if (r && !strict)
		abort(); /* strict took what the reader refuses */
	if (r) {
		if (!err[0] || strlen(err) >= sizeof(err))
			abort();
		return 0;
	}
	if (f.n > IFACES_MAX)
		abort();
	for (size_t i = 0; i < f.n; i++) {
		const struct ifaces_entry *e = &f.e[i];
		size_t nl = strlen(e->name), tl = strlen(e->tap);
		if (!nl || nl > IFACES_NAME_MAX || (unsigned)e->kind >= IFACES_NKINDS)
			abort();
		if (ifaces_kind_has_tap(e->kind) != (tl > 0) || (tl && memcmp(e->tap, "tap", 3) != 0))
			abort();
		for (size_t j = 0; j < i; j++)
			if (tl && strcmp(f.e[j].tap, e->tap) == 0)
				abort();
	}
	if (!strict) {
		/* What the webhook checks is what it writes: the writer gives the
		 * same bytes back. */
		struct sbuf b = SBUF_INIT(back, sizeof(back));
		for (size_t i = 0; i < g.n; i++)
			ifaces_append(&b, i, g.e[i].name[0] == '#' ? "" : g.e[i].name,
				      g.e[i].name[0] == '#' ? 0 : strlen(g.e[i].name), g.e[i].kind, g.e[i].tap);
		if (b.overflow || b.len != size || memcmp(back, data, size) != 0)
			abort();
	}
	return 0;
}
