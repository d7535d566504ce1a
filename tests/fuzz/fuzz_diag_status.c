/* libFuzzer: the status file `imds-server diag` reads (diag.c
 * diag_status_parse) on arbitrary bytes.  The file is the running sidecar's
 * own, but diag must not trust its shape: a truncated or foreign file in the
 * state directory is read, not crashed on.
 *
 * Invariants (abort on violation):
 *  - every span lies inside the input and holds no newline;
 *  - at most DIAG_STATUS_MAX_ERRORS error lines are kept;
 *  - a file written back from the spans ("KEY VALUE" lines, then the errors)
 *    parses to the same values. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void span_ok(const struct diag_span *s, const char *p, size_t size)
{
	if (!s->p)
		return;
	CHECK(s->p >= p && s->p + s->n <= p + size);
	CHECK(memchr(s->p, '\n', s->n) == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	struct diag_status a, b;
	diag_status_parse(p, size, &a);
	CHECK(a.nerr <= DIAG_STATUS_MAX_ERRORS);
	for (size_t k = 0; k < DIAG_STATUS_NKEYS; k++)
		span_ok(&a.key[k], p, size);
	for (unsigned i = 0; i < a.nerr; i++) {
		span_ok(&a.err[i], p, size);
		CHECK(a.err[i].n > 0);
	}

	/* written back, read again: the same values */
	size_t cap = size + DIAG_STATUS_NKEYS * 16 + DIAG_STATUS_MAX_ERRORS * 8 + 1;
	char *w = malloc(cap);
	CHECK(w != NULL);
	size_t at = 0;
	for (size_t k = 0; k < DIAG_STATUS_NKEYS; k++) {
		if (!a.key[k].p)
			continue;
		size_t kl = strlen(diag_status_keys[k]);
		memcpy(w + at, diag_status_keys[k], kl);
		at += kl;
		w[at++] = ' ';
		memcpy(w + at, a.key[k].p, a.key[k].n);
		at += a.key[k].n;
		w[at++] = '\n';
	}
	for (unsigned i = 0; i < a.nerr; i++) {
		memcpy(w + at, "error ", 6);
		at += 6;
		memcpy(w + at, a.err[i].p, a.err[i].n);
		at += a.err[i].n;
		w[at++] = '\n';
	}
	CHECK(at < cap);
	diag_status_parse(w, at, &b);
	CHECK(b.nerr == a.nerr);
	for (size_t k = 0; k < DIAG_STATUS_NKEYS; k++) {
		CHECK((a.key[k].p == NULL) == (b.key[k].p == NULL));
		if (a.key[k].p)
			CHECK(a.key[k].n == b.key[k].n && memcmp(a.key[k].p, b.key[k].p, a.key[k].n) == 0);
	}
	for (unsigned i = 0; i < a.nerr; i++)
		CHECK(a.err[i].n == b.err[i].n && memcmp(a.err[i].p, b.err[i].p, a.err[i].n) == 0);
	free(w);
	return 0;
}
