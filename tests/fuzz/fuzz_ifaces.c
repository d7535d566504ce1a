/* libFuzzer: the IMDS_INTERFACES parser, built from the real ifaces.c: any
 * text gives a table or an error message, and a table's entries are what
 * the format allows. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ifaces.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ifaces f;
	char err[200];
	int r = ifaces_parse((const char *)data, size, &f, err, sizeof(err));
	if (r != 0 && r != -EINVAL)
		abort();
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
	return 0;
}
