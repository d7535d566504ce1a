#include "review.h"

#include <stdarg.h>
#include <stdio.h>

#include "patch.h"
#include "sbuf.h"

void rv_fail(struct review *a, int err, const char *fmt, ...)
{
	if (a->err)
		return;
	a->err = err;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->msg, sizeof(a->msg), fmt, ap);
	va_end(ap);
}

void rv_warn(struct review *a, const char *fmt, ...)
{
	if (a->nwarn == RV_MAX_WARNINGS) {
		a->warn_dropped++;
		snprintf(a->warn[RV_MAX_WARNINGS - 1], RV_WARNING_MAX,
			 "imds.kubevirt.io: %zu more warnings not shown", a->warn_dropped + 1);
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(a->warn[a->nwarn++], RV_WARNING_MAX, fmt, ap);
	va_end(ap);
}

/* The log line's reason, cut to fit: a truncated reason is fine. */
void rv_set_reason(struct admission_result *res, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res->reason, sizeof(res->reason), fmt, ap);
	va_end(ap);
}

void rv_reason(struct review *a, const char *fmt, ...)
{
	char buf[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	rv_set_reason(a->res, "%s: %s", a->what, buf);
}

/* ---- reads: every member read is type-checked ------------------------ */

static const char *type_name(enum jv_type t)
{
	switch (t) {
	case JV_OBJECT:
		return "an object";
	case JV_ARRAY:
		return "an array";
	case JV_STRING:
		return "a string";
	case JV_BOOL:
		return "a boolean";
	case JV_NUMBER:
		return "a number";
	default:
		return "null";
	}
}

uint32_t rv_member(struct review *a, uint32_t obj, const char *key, enum jv_type t,
		       const char *where)
{
	uint32_t v = jv_get(a->v, obj, key);
	if (v == JV_NONE || jv_type(a->v, v) == JV_NULL)
		return JV_NONE;
	if (jv_type(a->v, v) != t) {
		rv_fail(a, RV_BAD, "%s.%s: must be %s", where, key, type_name(t));
		return JV_NONE;
	}
	return v;
}

/* The decoded bytes of string node i. */
struct str rv_jstring(struct review *a, uint32_t i)
{
	struct str s = {0};
	if (jv_str(a->v, i, &s.p, &s.n) < 0) {
		rv_fail(a, RV_NOMEM, "out of memory");
		s.p = NULL;
		s.n = 0;
	}
	return s;
}

struct str rv_str(struct review *a, uint32_t obj, const char *key, const char *where)
{
	uint32_t v = rv_member(a, obj, key, JV_STRING, where);
	if (v == JV_NONE)
		return (struct str){0};
	return rv_jstring(a, v);
}

/* A configuration value for a message: printable ASCII only, cut at 40
 * bytes, in quotes when quote.  Only ever called on names and the settings
 * annotations, never on user-data, vendor-data or network-config. */
const char *rv_clean(struct str s, int quote, char *buf, size_t cap)
{
	struct sbuf b = SBUF_INIT(buf, cap);
	if (quote)
		sbuf_putc(&b, '\'');
	for (size_t i = 0; i < s.n && i < 40; i++) {
		unsigned char c = (unsigned char)s.p[i];
		sbuf_putc(&b, (char)(c >= 0x20 && c < 0x7f ? c : '?'));
	}
	if (s.n > 40)
		sbuf_puts(&b, "...");
	if (quote)
		sbuf_putc(&b, '\'');
	return buf;
}

const char *rv_shown(struct str s, char *buf, size_t cap)
{
	return rv_clean(s, 1, buf, cap);
}

/* ---- patch operations ------------------------------------------------- */

int rv_add(struct review *a, const char *path, struct json_object *v)
{
	if (patch_add(a->patch, path, v) < 0) {
		rv_fail(a, RV_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

int rv_remove(struct review *a, const char *path)
{
	if (patch_remove(a->patch, path) < 0) {
		rv_fail(a, RV_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

int rv_replace(struct review *a, const char *path, struct json_object *v)
{
	if (patch_replace(a->patch, path, v) < 0) {
		rv_fail(a, RV_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}
