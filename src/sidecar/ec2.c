#include "ec2.h"

#include <string.h>

#include "answer.h"
#include "events.h"
#include "sbuf.h"

/* What GET / lists: the versions the known clients ask for (cloud-init
 * probes 2021-03-23, 2018-09-24 and 2016-09-02, then uses 2009-04-04;
 * cloudbase-init 2009-04-04; the others latest).  Any date is served. */
static const char versions[] = "1.0\n2009-04-04\n2016-09-02\n2018-09-24\n2021-03-23\nlatest";

int ec2_version_ok(const char *v, size_t n)
{
	if ((n == 6 && memcmp(v, "latest", 6) == 0) || (n == 3 && memcmp(v, "1.0", 3) == 0))
		return 1;
	if (n != 10 || v[4] != '-' || v[7] != '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (i != 4 && i != 7 && (v[i] < '0' || v[i] > '9'))
			return 0;
	return 1;
}

void ec2_open(struct ec2 *e, struct instance *in)
{
	/* out is written before each answer is read from it: left alone here, its
	 * 86 KiB cost no memory until an answer needs them (a memset of the whole
	 * struct touched every page at start, +84 KiB of VmHWM in make bench) */
	e->inst = in;
}

/* p[0..n) is the literal s. */
static int is(const char *p, size_t n, const char *s)
{
	return strlen(s) == n && memcmp(p, s, n) == 0;
}

/* A key's name in the listing: its entry, "-N" when the entry holds
 * several (as in OpenStack's public_keys); bytes a listing line cannot
 * carry ('=', '/', controls...) written as '_'. */
static void key_name(struct sbuf *b, const struct sshkey *k)
{
	for (const char *s = k->entry; *s; s++) {
		char ch = *s;
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
			 ch == '-' || ch == '_' || ch == '.';
		if (!ok)
			ch = '_';
		sbuf_putc(b, ch);
	}
	if (k->of > 1)
		sbuf_printf(b, "-%u", k->nth);
}

/* The index of a key: decimal, no leading zero, below n.  -1 otherwise. */
static int key_index(const char *p, size_t len, unsigned n)
{
	if (len == 0 || len > 3 || (len > 1 && p[0] == '0'))
		return -1;
	unsigned v = 0;
	for (size_t i = 0; i < len; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (unsigned)(p[i] - '0');
	}
	return v < n ? (int)v : -1;
}

/* ---- the trees: meta-data/ and dynamic/ ------------------------------------------- */

/* What a request's rows read: the model's views, taken once per request
 * (each re-reads its sources when they changed); the lifecycle only when a
 * row asks for it.  m only for a tree that reads it (meta-data/). */
struct view {
	struct instance *in;
	struct inst_meta m;
	struct inst_net net;
};

static int has_ipv4(struct view *v)
{
	return v->net.ipv4 != NULL;
}

static int has_zone(struct view *v)
{
	return v->in->zone != NULL;
}

static int has_region(struct view *v)
{
	return v->in->region != NULL;
}

static int has_keys(struct view *v)
{
	return v->m.keys->n || v->m.cikeys->n;
}

static int has_spot(struct view *v)
{
	return ev_ec2_spot(v->in);
}

static void hostname(struct view *v, struct sbuf *b)
{
	sbuf_puts(b, v->in->hostname);
}

static void instance_id(struct view *v, struct sbuf *b)
{
	sbuf_puts(b, v->in->iid);
}

static void instance_type(struct view *v, struct sbuf *b)
{
	sbuf_puts(b, v->in->instance_type);
}

static void local_ipv4(struct view *v, struct sbuf *b)
{
	sbuf_puts(b, v->net.ipv4);
}

static void zone(struct view *v, struct sbuf *b)
{
	sbuf_puts(b, v->in->zone);
}

static void region(struct view *v, struct sbuf *b)
{
	sbuf_puts(b, v->in->region);
}

static void history(struct view *v, struct sbuf *b)
{
	(void)v;
	sbuf_puts(b, "[]");
}

static void scheduled(struct view *v, struct sbuf *b)
{
	ev_ec2_scheduled(v->in, b);
}

static void instance_action(struct view *v, struct sbuf *b)
{
	ev_ec2_instance_action(v->in, b);
}

/* public-keys/: "N=<name>" a line, the accessCredentials' keys first
 * (cloud-init.go numbers them so), then the annotation's. */
static void keys_listing(struct view *v, struct sbuf *b)
{
	unsigned ck = v->m.cikeys->n;
	for (unsigned i = 0; i < ck; i++)
		sbuf_printf(b, "%s%u=access-credential-%u", i ? "\n" : "", i, i);
	for (unsigned i = 0; i < v->m.keys->n; i++) {
		sbuf_printf(b, "%s%u=", i + ck ? "\n" : "", i + ck);
		key_name(b, &v->m.keys->k[i]);
	}
}

/* public-keys/<p>: N (a listing of its one file) or N/openssh-key (that
 * file), the one name for both. */
static int keys_under(struct view *v, const char *p, size_t n, struct sbuf *b)
{
	static const char key_file[] = "openssh-key";
	const char *slash = memchr(p, '/', n);
	size_t il = slash ? (size_t)(slash - p) : n;
	unsigned ck = v->m.cikeys->n;
	int idx = key_index(p, il, v->m.keys->n + ck);
	if (idx < 0)
		return 0;
	if (!slash || il + 1 == n)
		sbuf_puts(b, key_file);
	else if (is(slash + 1, n - il - 1, key_file) && (unsigned)idx < ck)
		sbuf_put(b, v->m.cikeys->k[idx].v, v->m.cikeys->k[idx].n);
	else if (is(slash + 1, n - il - 1, key_file))
		sbuf_puts(b, v->m.keys->k[(unsigned)idx - ck].line);
	else
		return 0;
	return 1;
}

static void json_or_null(struct sbuf *b, const char *key, const char *v)
{
	if (v) {
		answer_json_field(b, key, v, 1);
	} else {
		sbuf_printf(b, ",\"%s\":null", key);
	}
}

/* dynamic/instance-identity/document: as EC2's, with what the instance
 * knows; the rest is null. */
static void document(struct view *v, struct sbuf *b)
{
	const struct instance *in = v->in;
#if defined(__x86_64__)
	sbuf_puts(b, "{\"architecture\":\"x86_64\"");
#elif defined(__aarch64__)
	sbuf_puts(b, "{\"architecture\":\"arm64\"");
#else
	sbuf_puts(b, "{\"architecture\":null");
#endif
	json_or_null(b, "availabilityZone", in->zone);
	answer_json_field(b, "instanceId", in->iid, 1);
	answer_json_field(b, "instanceType", in->instance_type, 1);
	json_or_null(b, "privateIp", v->net.ipv4);
	json_or_null(b, "region", in->region);
	sbuf_puts(b, ",\"version\":\"2017-09-30\"}\n");
}

/* A tree, as EC2's (sorted, so each listing is): a row is a leaf (leaf
 * writes it) or a folder, whose listing is derived from the rows under it
 * (a folder's name with a trailing '/'), or, for a folder of data
 * (public-keys/), written by list with the paths under it answered by
 * under.  A row is there when its has says so (NULL: always) and, for a
 * derived folder, when a row under it is: a listed name always answers
 * (cloud-init's crawler fails on one that does not). */
struct ec2_row {
	const char *path;
	int (*has)(struct view *v);
	void (*leaf)(struct view *v, struct sbuf *b);
	void (*list)(struct view *v, struct sbuf *b);
	int (*under)(struct view *v, const char *p, size_t n, struct sbuf *b);
};

struct ec2_tree {
	const struct ec2_row *row;
	size_t n;
	int reads_meta; /* a row reads the view's m (inst_meta) */
};

/* meta-data/ */
static const struct ec2_row meta_rows[] = {
	{"events", NULL, NULL, NULL, NULL},
	{"events/maintenance", NULL, NULL, NULL, NULL},
	{"events/maintenance/history", NULL, history, NULL, NULL},
	{"events/maintenance/scheduled", NULL, scheduled, NULL, NULL},
	{"hostname", NULL, hostname, NULL, NULL},
	{"instance-id", NULL, instance_id, NULL, NULL},
	{"instance-type", NULL, instance_type, NULL, NULL},
	{"local-hostname", NULL, hostname, NULL, NULL},
	{"local-ipv4", has_ipv4, local_ipv4, NULL, NULL},
	{"placement", NULL, NULL, NULL, NULL},
	{"placement/availability-zone", has_zone, zone, NULL, NULL},
	{"placement/region", has_region, region, NULL, NULL},
	{"public-keys", has_keys, NULL, keys_listing, keys_under},
	{"spot", has_spot, NULL, NULL, NULL},
	{"spot/instance-action", has_spot, instance_action, NULL, NULL},
};

/* dynamic/ */
static const struct ec2_row dynamic_rows[] = {
	{"instance-identity", NULL, NULL, NULL, NULL},
	{"instance-identity/document", NULL, document, NULL, NULL},
};

static const struct ec2_tree meta_tree = {meta_rows, sizeof(meta_rows) / sizeof(meta_rows[0]), 1};
static const struct ec2_tree dynamic_tree = {dynamic_rows,
					     sizeof(dynamic_rows) / sizeof(dynamic_rows[0]), 0};

static const char *tree_path(const struct ec2_tree *t, size_t i)
{
	return i < t->n ? t->row[i].path : NULL;
}

const char *ec2_tree_path(size_t i)
{
	return tree_path(&meta_tree, i);
}

const char *ec2_dynamic_path(size_t i)
{
	return tree_path(&dynamic_tree, i);
}

/* 1 when path[0..n) is directly under folder dir[0..dn) ("" the root): its
 * name's offset in *name. */
static int child_of(const char *path, const char *dir, size_t dn, size_t *name)
{
	size_t n = strlen(path);
	size_t o = dn ? dn + 1 : 0;
	if (n <= o || (dn && (memcmp(path, dir, dn) != 0 || path[dn] != '/')))
		return 0;
	*name = o;
	return memchr(path + o, '/', n - o) == NULL;
}

static int there(const struct ec2_tree *t, struct view *v, size_t i)
{
	const struct ec2_row *r = &t->row[i];
	if (r->has && !r->has(v))
		return 0;
	if (r->leaf || r->list)
		return 1;
	size_t dn = strlen(r->path), name;
	for (size_t j = i + 1; j < t->n; j++)
		if (child_of(t->row[j].path, r->path, dn, &name) && there(t, v, j))
			return 1;
	return 0;
}

/* The listing of the folder dir[0..dn): its rows that are there. */
static void listing(const struct ec2_tree *t, struct view *v, const char *dir, size_t dn,
		    struct sbuf *b)
{
	int first = 1;
	size_t name;
	for (size_t j = 0; j < t->n; j++) {
		if (!child_of(t->row[j].path, dir, dn, &name) || !there(t, v, j))
			continue;
		sbuf_puts(b, first ? "" : "\n");
		sbuf_puts(b, t->row[j].path + name);
		if (!t->row[j].leaf)
			sbuf_putc(b, '/');
		first = 0;
	}
}

enum found { NONE, LEAF, LISTING };

/* The answer for <tree>/<p>: a listing or a leaf into b, which it says; NONE
 * when there is no such name.  A trailing '/' is allowed on a leaf too
 * (botocore asks for placement/availability-zone/), as EC2 does. */
static enum found find(const struct ec2_tree *t, struct instance *in, const char *p, size_t n,
		       struct sbuf *b)
{
	struct view v = {.in = in};
	if (t->reads_meta)
		v.m = inst_meta(in); /* then the interfaces: each may log a re-read */
	v.net = inst_net(in);
	if (n && p[n - 1] == '/')
		n--;
	if (n == 0) {
		listing(t, &v, "", 0, b);
		return LISTING;
	}
	for (size_t i = 0; i < t->n; i++) {
		const struct ec2_row *r = &t->row[i];
		size_t rn = strlen(r->path);
		if (is(p, n, r->path)) {
			if (!there(t, &v, i))
				return NONE;
			if (r->leaf) {
				r->leaf(&v, b);
				return LEAF;
			}
			if (r->list)
				r->list(&v, b);
			else
				listing(t, &v, p, n, b);
			return LISTING;
		}
		if (r->under && n > rn + 1 && memcmp(p, r->path, rn) == 0 && p[rn] == '/')
			return there(t, &v, i) && r->under(&v, p + rn + 1, n - rn - 1, b) ? LEAF : NONE;
	}
	return NONE;
}

static void text(struct call *c, const struct sbuf *b)
{
	if (b->overflow)
		http_res_error(c->res, 500, "internal", "the answer does not fit");
	else
		answer_data_text(c, "text/plain", b->p, b->len);
}

/* ---- a version's parts -------------------------------------------------------------- */

static int has_user_data(struct instance *in)
{
	struct blob *u = inst_user_data(in);
	return u && u->len;
}

static const struct ec2_part {
	const char *name;
	int (*has)(struct instance *in);
} parts[] = {
#define EC2_PART(id, name, fn, kind, has) {name, has},
	EC2_PARTS(EC2_PART)
#undef EC2_PART
};

#define NPARTS (sizeof(parts) / sizeof(parts[0]))

const char *ec2_part_name(size_t i)
{
	return i < NPARTS ? parts[i].name : NULL;
}

const struct session_dialect ec2_session =
	SESSION_DIALECT("x-aws-ec2-metadata-token-ttl-seconds",
			"X-aws-ec2-metadata-token-ttl-seconds", "x-aws-ec2-metadata-token");

void ec2_token(struct call *c)
{
	session_open(c, &ec2_session);
}

void ec2_versions(struct call *c)
{
	http_res_text(c->res, 200, "text/plain", versions, sizeof(versions) - 1);
}

void ec2_root(struct call *c)
{
	struct ec2 *e = c->self;
	struct sbuf b = SBUF_INIT(e->out, sizeof(e->out));
	for (size_t i = 0; i < NPARTS; i++)
		if (!parts[i].has || parts[i].has(e->inst))
			sbuf_printf(&b, "%s%s", b.len ? "\n" : "", parts[i].name);
	/* a listing without a validator, as it always was */
	http_res_text(c->res, 200, "text/plain", b.p, b.len);
}

void ec2_meta_data(struct call *c)
{
	struct ec2 *e = c->self;
	struct sbuf b = SBUF_INIT(e->out, sizeof(e->out));
	if (find(&meta_tree, e->inst, c->rest.p, c->rest.n, &b) == NONE) {
		http_res_error(c->res, 404, "not_found", "no such path");
		return;
	}
	text(c, &b);
}

void ec2_user_data(struct call *c)
{
	struct ec2 *e = c->self;
	struct blob *u = inst_user_data(e->inst);
	if (!u || u->len == 0)
		http_res_error(c->res, 404, "not_found", "no user data");
	else
		answer_data(c, "application/octet-stream", u);
}

void ec2_dynamic(struct call *c)
{
	struct ec2 *e = c->self;
	struct sbuf b = SBUF_INIT(e->out, sizeof(e->out));
	switch (find(&dynamic_tree, e->inst, c->rest.p, c->rest.n, &b)) {
	case NONE:
		http_res_error(c->res, 404, "not_found", "no such path");
		break;
	case LISTING:
		/* without a validator, as they always were (meta-data/'s have one) */
		http_res_text(c->res, 200, "text/plain", b.p, b.len);
		break;
	case LEAF:
		text(c, &b);
		break;
	}
}
