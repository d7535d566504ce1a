#include "ec2.h"

#include <string.h>

#include "call.h"
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

/* The answer for meta-data/<p>: a listing or a leaf into b.  0 when there
 * is no such name.  A trailing '/' is allowed on a leaf too (botocore asks
 * for placement/availability-zone/), as EC2 does. */
static int meta(struct instance *in, const char *p, size_t n, struct sbuf *b)
{
	struct inst_meta m = inst_meta(in);
	struct inst_net net = inst_net(in);
	if (n && p[n - 1] == '/')
		n--;
	if (n == 0) {
		/* As EC2's listing, sorted: events/ always, spot/ while a
		 * termination is pending. */
		sbuf_puts(b, "events/\nhostname\ninstance-id\ninstance-type\nlocal-hostname");
		if (net.ipv4)
			sbuf_puts(b, "\nlocal-ipv4");
		if (in->zone || in->region)
			sbuf_puts(b, "\nplacement/");
		if (m.keys->n || m.cikeys->n)
			sbuf_puts(b, "\npublic-keys/");
		if (lc_get(&in->life)->state == LC_TERMINATE)
			sbuf_puts(b, "\nspot/");
		return 1;
	}
	if (is(p, n, "hostname") || is(p, n, "local-hostname")) {
		sbuf_puts(b, in->hostname);
	} else if (is(p, n, "instance-id")) {
		sbuf_puts(b, in->iid);
	} else if (is(p, n, "instance-type")) {
		sbuf_puts(b, in->instance_type);
	} else if (is(p, n, "local-ipv4") && net.ipv4) {
		sbuf_puts(b, net.ipv4);
	} else if (is(p, n, "placement") && (in->zone || in->region)) {
		if (in->zone)
			sbuf_puts(b, in->region ? "availability-zone\n" : "availability-zone");
		if (in->region)
			sbuf_puts(b, "region");
	} else if (is(p, n, "placement/availability-zone") && in->zone) {
		sbuf_puts(b, in->zone);
	} else if (is(p, n, "placement/region") && in->region) {
		sbuf_puts(b, in->region);
	} else if (is(p, n, "public-keys") && (m.keys->n || m.cikeys->n)) {
		/* The accessCredentials' keys first (cloud-init.go numbers them
		 * so), then the annotation's. */
		unsigned ck = m.cikeys->n;
		for (unsigned i = 0; i < ck; i++)
			sbuf_printf(b, "%s%u=access-credential-%u", i ? "\n" : "", i, i);
		for (unsigned i = 0; i < m.keys->n; i++) {
			sbuf_printf(b, "%s%u=", i + ck ? "\n" : "", i + ck);
			key_name(b, &m.keys->k[i]);
		}
	} else if (n > 12 && memcmp(p, "public-keys/", 12) == 0) {
		const char *k = p + 12;
		size_t kn = n - 12;
		const char *slash = memchr(k, '/', kn);
		size_t il = slash ? (size_t)(slash - k) : kn;
		unsigned ck = m.cikeys->n;
		int idx = key_index(k, il, m.keys->n + ck);
		if (idx < 0)
			return 0;
		if (!slash || il + 1 == kn)
			sbuf_puts(b, "openssh-key");
		else if (is(slash + 1, kn - il - 1, "openssh-key") && (unsigned)idx < ck)
			sbuf_put(b, m.cikeys->k[idx].v, m.cikeys->k[idx].n);
		else if (is(slash + 1, kn - il - 1, "openssh-key"))
			sbuf_puts(b, m.keys->k[(unsigned)idx - ck].line);
		else
			return 0;
	} else {
		return ev_ec2_meta(in, p, n, b);
	}
	return 1;
}

static void text(struct call *c, const struct sbuf *b)
{
	if (b->overflow)
		http_res_error(c->res, 500, "internal", "the answer does not fit");
	else
		call_data_text(c, "text/plain", b->p, b->len);
}

const struct session_dialect ec2_session = {"x-aws-ec2-metadata-token-ttl-seconds",
					      "X-aws-ec2-metadata-token-ttl-seconds",
					      "x-aws-ec2-metadata-token"};

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
	static const char with[] = "dynamic\nmeta-data\nuser-data";
	struct ec2 *e = c->self;
	struct blob *u = inst_user_data(e->inst);
	/* As EC2: user-data is listed only when there is some. */
	size_t n = u && u->len ? sizeof(with) - 1 : sizeof("dynamic\nmeta-data") - 1;
	http_res_text(c->res, 200, "text/plain", with, n);
}

void ec2_meta_data(struct call *c)
{
	struct ec2 *e = c->self;
	struct sbuf b = SBUF_INIT(e->out, sizeof(e->out));
	if (!meta(e->inst, c->rest.p, c->rest.n, &b)) {
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
		call_data(c, "application/octet-stream", u);
}

static void json_or_null(struct sbuf *b, const char *key, const char *v)
{
	if (v) {
		call_json_field(b, key, v, 1);
	} else {
		sbuf_printf(b, ",\"%s\":null", key);
	}
}

void ec2_dynamic(struct call *c)
{
	struct ec2 *e = c->self;
	struct instance *in = e->inst;
	const char *p = c->rest.p;
	size_t n = c->rest.n;
	if (n && p[n - 1] == '/')
		n--;
	if (n == 0) {
		http_res_text(c->res, 200, "text/plain", "instance-identity/",
			      sizeof("instance-identity/") - 1);
		return;
	}
	if (is(p, n, "instance-identity")) {
		http_res_text(c->res, 200, "text/plain", "document", sizeof("document") - 1);
		return;
	}
	if (!is(p, n, "instance-identity/document")) {
		http_res_error(c->res, 404, "not_found", "no such path");
		return;
	}
	/* As EC2's document, with what the instance knows; the rest is null. */
	struct inst_net net = inst_net(in);
	struct sbuf b = SBUF_INIT(e->out, sizeof(e->out));
#if defined(__x86_64__)
	sbuf_puts(&b, "{\"architecture\":\"x86_64\"");
#elif defined(__aarch64__)
	sbuf_puts(&b, "{\"architecture\":\"arm64\"");
#else
	sbuf_puts(&b, "{\"architecture\":null");
#endif
	json_or_null(&b, "availabilityZone", in->zone);
	call_json_field(&b, "instanceId", in->iid, 1);
	call_json_field(&b, "instanceType", in->instance_type, 1);
	json_or_null(&b, "privateIp", net.ipv4);
	json_or_null(&b, "region", in->region);
	sbuf_puts(&b, ",\"version\":\"2017-09-30\"}\n");
	text(c, &b);
}
