#include "lifecycle.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"

static const char *const file_names[LC_FILES] = {
	"eviction-in-progress", "eviction-strategy", "migration-job-uid", "migration-target-ready",
	"maintenance",
};

const char *lc_state_name(enum lc_state s)
{
	switch (s) {
	case LC_MIGRATE: return "migrate";
	case LC_TERMINATE: return "terminate";
	case LC_ARRIVED: return "arrived";
	default: return "none";
	}
}

const char *lc_reason_name(enum lc_reason r)
{
	switch (r) {
	case LC_R_EVICTION: return "eviction";
	case LC_R_MAINTENANCE: return "maintenance";
	case LC_R_MIGRATION: return "migration";
	default: return "";
	}
}

enum lc_state lc_derive(const struct lc_inputs *in, enum lc_reason *reason, int *bad)
{
	*bad = 0;
	*reason = LC_R_NONE;
	/* virt-controller writes "true"; it tests the key's presence, and kubelet
	 * writes "" for an absent key: any non-empty value is an eviction. */
	if (in->eviction[0]) {
		*reason = LC_R_EVICTION;
		/* KubeVirt marks a VMI for evacuation under LiveMigrate, under
		 * LiveMigrateIfPossible when it is migratable, and under External
		 * (which migrates nothing itself); None is evicted at once. */
		if (strcmp(in->strategy, "LiveMigrate") == 0 ||
		    strcmp(in->strategy, "LiveMigrateIfPossible") == 0)
			return LC_MIGRATE;
		return LC_TERMINATE;
	}
	const char *m = in->maintenance;
	if (strcmp(m, "migrate") == 0 || strcmp(m, "terminate") == 0) {
		*reason = LC_R_MAINTENANCE;
		return m[0] == 'm' ? LC_MIGRATE : LC_TERMINATE;
	}
	if (m[0] && strcmp(m, "none") != 0)
		*bad = 1;
	if (in->job_uid[0] && in->target_ready[0]) {
		*reason = LC_R_MIGRATION;
		return LC_ARRIVED;
	}
	return LC_NONE;
}

int lc_open(struct lifecycle *lc, const char *dir, char *err, size_t errlen)
{
	memset(lc, 0, sizeof(*lc));
	lc->dir = dir;
	lc->v.gen = 1;
	lc->v.since = (int64_t)time(NULL);
	if (!dir)
		return 0;
	for (int i = 0; i < LC_FILES; i++) {
		char path[4096], why[300];
		if (snprintf(path, sizeof(path), "%s/%s", dir, file_names[i]) >= (int)sizeof(path)) {
			snprintf(err, errlen, "IMDS_LIFECYCLE_DIR: too long");
			return -ENAMETOOLONG;
		}
		/* A file that is not there counts as empty, and is read when it comes. */
		int r = dfile_open(&lc->f[i], "IMDS_LIFECYCLE_DIR", path, why, sizeof(why));
		if (r < 0 && r != -ENOENT) {
			snprintf(err, errlen, "%s", why);
			return r;
		}
	}
	lc->v.gen = 0;
	(void)lc_get(lc);
	return 0;
}

void lc_close(struct lifecycle *lc)
{
	for (int i = 0; i < LC_FILES; i++) {
		dfile_close(&lc->f[i]);
		blob_unref(lc->seen[i]);
		lc->seen[i] = NULL;
	}
}

/* The file's bytes, trimmed, into out (at most cap - 1 bytes; longer: ""
 * and *bad set, so a stray value never half-counts). */
static void value(const struct blob *b, char *out, size_t cap, int *bad)
{
	out[0] = '\0';
	if (!b)
		return;
	const char *p = b->data;
	size_t n = b->len;
	while (n && (p[0] == ' ' || p[0] == '\n' || p[0] == '\t' || p[0] == '\r')) {
		p++;
		n--;
	}
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\n' || p[n - 1] == '\t' || p[n - 1] == '\r'))
		n--;
	if (n >= cap) {
		*bad = 1;
		return;
	}
	memcpy(out, p, n);
	out[n] = '\0';
}

/* [0-9A-Za-z-] only: a Kubernetes UID; anything else is not shown. */
static int uid_ok(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      *s == '-'))
			return 0;
	return 1;
}

static void make_event_id(struct lc_view *v)
{
	char key[128];
	int n = snprintf(key, sizeof(key), "%d|%lld|%s", (int)v->state, (long long)v->since, v->uid);
	uint64_t a = blob_hash(key, (size_t)n), b = blob_hash(key, (size_t)n - 1) ^ a;
	/* A version-4-shaped UUID, as Azure's EventId. */
	snprintf(v->event_id, sizeof(v->event_id), "%08x-%04x-4%03x-%04x-%012llx",
		 (unsigned)(a >> 32), (unsigned)(a >> 16) & 0xffffu, (unsigned)a & 0xfffu,
		 0x8000u | ((unsigned)(b >> 48) & 0x3fffu), (unsigned long long)(b & 0xffffffffffffull));
}

const struct lc_view *lc_get(struct lifecycle *lc)
{
	if (!lc->dir)
		return &lc->v;
	int changed = lc->v.gen == 0;
	for (int i = 0; i < LC_FILES; i++) {
		struct blob *b = dfile_get(&lc->f[i]);
		if (b != lc->seen[i]) {
			blob_unref(lc->seen[i]);
			lc->seen[i] = b ? blob_ref(b) : NULL;
			changed = 1;
		}
	}
	if (!changed)
		return &lc->v;
	char v[LC_FILES][LC_UID_MAX + 1];
	int bad = 0, long_uid = 0;
	for (int i = 0; i < LC_FILES; i++)
		value(lc->seen[i], v[i], sizeof(v[i]), i == 2 ? &long_uid : &bad);
	struct lc_inputs in = {v[0], v[1], v[2], v[3], v[4]};
	enum lc_reason reason;
	int bad_maint;
	enum lc_state s = lc_derive(&in, &reason, &bad_maint);
	if (bad_maint && !lc->bad_maint_logged)
		log_error("lifecycle: imds.kubevirt.io/maintenance '%s' is not migrate, terminate or "
			  "none; ignored", v[4]);
	lc->bad_maint_logged = bad_maint;
	const char *uid = s == LC_ARRIVED && uid_ok(v[2]) ? v[2] : "";
	if (lc->v.gen && s == lc->v.state && strcmp(uid, lc->v.uid) == 0)
		return &lc->v;
	/* When kubelet wrote the newest input: its ctime. */
	int64_t since = 0;
	for (int i = 0; i < LC_FILES; i++)
		if (lc->seen[i] && lc->f[i].ctim.tv_sec > since)
			since = lc->f[i].ctim.tv_sec;
	if (!since)
		since = (int64_t)time(NULL);
	lc->v.state = s;
	lc->v.reason = reason;
	snprintf(lc->v.uid, sizeof(lc->v.uid), "%s", uid);
	lc->v.since = since;
	lc->v.acked = 0;
	lc->v.gen++;
	make_event_id(&lc->v);
	log_info("lifecycle: %s%s%s", lc_state_name(s), reason ? " by " : "", lc_reason_name(reason));
	return &lc->v;
}

int lc_ack(struct lifecycle *lc, const char *id, size_t n)
{
	const struct lc_view *v = lc_get(lc);
	if (v->state != LC_MIGRATE && v->state != LC_TERMINATE)
		return -1;
	if (n != strlen(v->event_id) || memcmp(id, v->event_id, n) != 0)
		return -1;
	lc->v.acked = 1;
	return 0;
}

static const char wday[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
static const char mon[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
				"Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* The fields of t in UTC, each bounded (a year past 9999 is not shown). */
struct ymd {
	unsigned y, mo, d, h, mi, s, wd;
};

static struct ymd utc(int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;
	if (!gmtime_r(&tt, &tm))
		memset(&tm, 0, sizeof(tm));
	return (struct ymd){(unsigned)(tm.tm_year + 1900) % 10000u, (unsigned)tm.tm_mon % 12u,
			    (unsigned)tm.tm_mday % 32u, (unsigned)tm.tm_hour % 24u,
			    (unsigned)tm.tm_min % 60u, (unsigned)tm.tm_sec % 61u,
			    (unsigned)tm.tm_wday % 7u};
}

void lc_time_rfc3339(int64_t t, char out[64])
{
	struct ymd u = utc(t);
	snprintf(out, 64, "%04u-%02u-%02uT%02u:%02u:%02uZ", u.y, u.mo + 1, u.d, u.h, u.mi, u.s);
}

void lc_time_rfc1123(int64_t t, char out[64])
{
	struct ymd u = utc(t);
	snprintf(out, 64, "%s, %02u %s %04u %02u:%02u:%02u GMT", wday[u.wd], u.d, mon[u.mo], u.y, u.h,
		 u.mi, u.s);
}

void lc_time_ec2(int64_t t, char out[64])
{
	struct ymd u = utc(t);
	snprintf(out, 64, "%u %s %04u %02u:%02u:%02u GMT", u.d, mon[u.mo], u.y, u.h, u.mi, u.s);
}
