/* A review for the webhook's module tests: a JSON text parsed with jview
 * into a struct review (review.h) with a fresh patch, so a module's own
 * entry point (ann_*, disc_*, vmnet_admit, serial_admit, pod_admit) runs
 * on it directly and its patch, error and warnings are read back. */
#ifndef IMDS_TEST_WH_REVIEW_H
#define IMDS_TEST_WH_REVIEW_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "admission_types.h"
#include "jview.h"
#include "patch.h"
#include "review.h"

struct rvfx {
	struct admission_config cfg; /* every default filled in, as admission.c does */
	struct admission_result res;
	struct jv v;
	struct review a;
};

/* text must outlive the fixture (a literal, say); cfg may be NULL. */
static inline void rvfx_open(struct rvfx *f, const struct admission_config *cfg, const char *text)
{
	memset(f, 0, sizeof(*f));
	if (cfg)
		f->cfg = *cfg;
	if (!f->cfg.imds_image)
		f->cfg.imds_image = "registry.example/imds:test";
	if (!f->cfg.cpu)
		f->cfg.cpu = ADMISSION_DEFAULT_CPU;
	if (!f->cfg.memory)
		f->cfg.memory = ADMISSION_DEFAULT_MEMORY;
	if (!f->cfg.memory_limit)
		f->cfg.memory_limit = ADMISSION_DEFAULT_MEMORY_LIMIT;
	char err[160];
	if (jv_parse(&f->v, text, strlen(text), err, sizeof(err)) != 0)
		fail_msg("test JSON: %s", err);
	f->a = (struct review){.cfg = &f->cfg, .res = &f->res, .v = &f->v, .what = "test", .patch = patch_new()};
	assert_non_null(f->a.patch);
}

static inline void rvfx_close(struct rvfx *f)
{
	patch_free(f->a.patch);
	jv_free(&f->v);
}

/* The node at a path of member names from the root, NULL-terminated;
 * JV_NONE when a member is missing. */
static inline uint32_t rvfx_at(struct rvfx *f, ...)
{
	va_list ap;
	va_start(ap, f);
	uint32_t n = 0;
	for (const char *k; (k = va_arg(ap, const char *)) && n != JV_NONE;)
		n = jv_get(&f->v, n, k);
	va_end(ap);
	return n;
}

/* The patch's text so far. */
static inline const char *rvfx_patch(struct rvfx *f)
{
	size_t n;
	const char *s = patch_json(f->a.patch, &n);
	assert_non_null(s);
	return s;
}

/* The review failed with err and its message holds want. */
static inline void rvfx_failed(struct rvfx *f, int err, const char *want)
{
	if (f->a.err != err)
		fail_msg("err %d, want %d (message '%s')", f->a.err, err, f->a.msg);
	if (!strstr(f->a.msg, want))
		fail_msg("message '%s' does not say '%s'", f->a.msg, want);
}

static inline void rvfx_ok(struct rvfx *f)
{
	if (f->a.err)
		fail_msg("failed (%d): %s", f->a.err, f->a.msg);
}

#endif
