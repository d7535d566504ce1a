#include "diag.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fib_rules.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nf_tables.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "binding.h"
#include "config.h"
#include "imds.h"
#include "log.h"
#include "ndp.h"
#include "nft.h"
#include "nl.h"
#include "plumb.h"
#include "sbuf.h"
#include "steer.h"

/* ---- the running sidecar's status file ------------------------------------- */

static struct {
	char path[512], tmp[512];
	char version[64];
	char started[32];
	char state[16];
	char detail[256];
	char agent[3][256]; /* enum diag_agent_key; "": not agent mode */
} st;

void diag_now_stamp(char out[32])
{
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	if (strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		out[0] = '\0';
}

/* Quiet on failure: it runs from the error hook and must not log one. */
static void status_write(void)
{
	if (!st.path[0])
		return;
	char buf[6144], at[32];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	diag_now_stamp(at);
	sbuf_printf(&b, "version %s\npid %ld\nstarted %s\nupdated %s\nstate %s\nserving %s\nerrors_total %lu\n",
		    st.version, (long)getpid(), st.started, at, st.state, st.detail, log_error_count());
	const char *errs[LOG_RECENT_MAX];
	size_t n = log_recent_errors(errs, LOG_RECENT_MAX);
	for (size_t k = 0; k < 3; k++)
		if (st.agent[k][0])
			sbuf_printf(&b, "%s %s\n", diag_status_keys[7 + k], st.agent[k]);
	for (size_t i = 0; i < n; i++)
		sbuf_printf(&b, "error %s\n", errs[i]);
	if (b.overflow)
		return; /* bounded by construction: 11 lines of 256 and a few short ones */
	int fd = open(st.tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	ssize_t w = write(fd, buf, b.len);
	int bad = w < 0 || (size_t)w != b.len;
	if (close(fd) < 0 || bad || rename(st.tmp, st.path) < 0)
		unlink(st.tmp);
}

void diag_status_start(const char *state_dir, const char *version)
{
	if (!state_dir)
		return;
	int a = snprintf(st.path, sizeof(st.path), "%s/" DIAG_STATUS_FILE, state_dir);
	int b = snprintf(st.tmp, sizeof(st.tmp), "%s/." DIAG_STATUS_FILE ".tmp", state_dir);
	if (a < 0 || (size_t)a >= sizeof(st.path) || b < 0 || (size_t)b >= sizeof(st.tmp)) {
		st.path[0] = '\0';
		log_info("diag: IMDS_STATE_DIR too long for the status file; diag will not see this run");
		return;
	}
	snprintf(st.version, sizeof(st.version), "%s", version);
	diag_now_stamp(st.started);
	snprintf(st.state, sizeof(st.state), "starting");
	log_on_error(status_write);
	status_write();
}

void diag_status_set(const char *state, const char *detail)
{
	if (!detail)
		detail = "";
	if (strcmp(st.state, state) == 0 && strcmp(st.detail, detail) == 0)
		return;
	snprintf(st.state, sizeof(st.state), "%s", state);
	snprintf(st.detail, sizeof(st.detail), "%s", detail);
	status_write();
}

void diag_status_agent(enum diag_agent_key k, const char *value)
{
	if ((unsigned)k > DIAG_LISTEN || strcmp(st.agent[k], value) == 0)
		return;
	snprintf(st.agent[k], sizeof(st.agent[k]), "%s", value);
	status_write();
}

/* ---- output: one tree, as text or JSON ------------------------------------- */

struct out {
	struct sbuf *b;
	int json;
	int depth;
	int first[16]; /* per level: nothing written yet */
	int inarr[16]; /* per level: an array (items have no key) */
};

static void o_key(struct out *o, const char *key, int scalar)
{
	int was_first = o->first[o->depth];
	o->first[o->depth] = 0;
	if (o->json) {
		if (!was_first)
			sbuf_putc(o->b, ',');
		if (!o->inarr[o->depth]) {
			sbuf_putc(o->b, '"');
			sbuf_puts(o->b, key);
			sbuf_puts(o->b, "\":");
		}
		return;
	}
	for (int i = 1; i < o->depth; i++)
		sbuf_puts(o->b, "  ");
	if (o->inarr[o->depth])
		sbuf_puts(o->b, "- ");
	else
		sbuf_printf(o->b, scalar ? "%s: " : "%s:", key);
}

static void o_open(struct out *o, const char *key, int arr)
{
	o_key(o, key, 0);
	if (o->json)
		sbuf_putc(o->b, arr ? '[' : '{');
	else if (!o->inarr[o->depth] || arr)
		sbuf_putc(o->b, '\n');
	if (o->depth < 15)
		o->depth++;
	o->first[o->depth] = 1;
	o->inarr[o->depth] = arr;
	/* text: an object in a list starts on the "- " line; its first
	 * member goes on that line, the next ones below */
	if (!o->json && !arr && o->inarr[o->depth - 1])
		o->first[o->depth] = 2;
}

static void o_obj(struct out *o, const char *key) { o_open(o, key, 0); }
static void o_arr(struct out *o, const char *key) { o_open(o, key, 1); }

static void o_close(struct out *o)
{
	if (o->json)
		sbuf_putc(o->b, o->inarr[o->depth] ? ']' : '}');
	else if (o->first[o->depth] == 1 && o->inarr[o->depth]) {
		for (int i = 1; i < o->depth; i++)
			sbuf_puts(o->b, "  ");
		sbuf_puts(o->b, "(none)\n");
	}
	if (o->depth > 0)
		o->depth--;
}

/* text: a member of an object that is a list item, the first on the "- "
 * line (already written by o_key of the item) */
static void o_lead(struct out *o, const char *key)
{
	if (!o->json && o->first[o->depth] == 2) {
		sbuf_printf(o->b, "%s: ", key);
		o->first[o->depth] = 0;
		return;
	}
	o_key(o, key, 1);
}

static void o_str(struct out *o, const char *key, const char *v)
{
	o_lead(o, key);
	if (o->json) {
		if (!v) {
			sbuf_puts(o->b, "null");
		} else {
			sbuf_putc(o->b, '"');
			sbuf_json_escape(o->b, v, strlen(v));
			sbuf_putc(o->b, '"');
		}
		return;
	}
	/* text: one line each; a control byte would forge a line */
	if (!v)
		v = "-";
	for (const char *c = v; *c; c++) {
		if ((unsigned char)*c < 0x20)
			sbuf_putc(o->b, '?');
		else
			sbuf_putc(o->b, *c);
	}
	sbuf_putc(o->b, '\n');
}

static void o_num(struct out *o, const char *key, long long v)
{
	o_lead(o, key);
	sbuf_printf(o->b, o->json ? "%lld" : "%lld\n", v);
}

static void o_bool(struct out *o, const char *key, int v)
{
	o_lead(o, key);
	sbuf_puts(o->b, o->json ? (v ? "true" : "false") : (v ? "yes\n" : "no\n"));
}

/* ---- the sidecar's own word ------------------------------------------------ */

/* The running sidecar's pid (its status file), 0 when unknown; *lport the
 * port of the first listener the node agent passed (agent mode's "listen":
 * "169.254.169.254:50254, ..." in passt's pods), else 0. */
static long put_status(struct out *o, const struct imds_config *c, unsigned *lport)
{
	long pid = 0;
	o_obj(o, "sidecar");
	if (!c->state_dir) {
		o_str(o, "status_file", NULL);
		o_str(o, "note", "IMDS_STATE_DIR is not set: no status file (not the webhook's sidecar)");
		o_close(o);
		return 0;
	}
	char path[600];
	snprintf(path, sizeof(path), "%s/" DIAG_STATUS_FILE, c->state_dir);
	o_str(o, "status_file", path);
	static char buf[8192];
	ssize_t n = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf));
		close(fd);
	}
	if (n < 0) {
		o_bool(o, "found", 0);
		o_str(o, "note", "no status file: `imds-server run` has not started in this container");
		o_close(o);
		return 0;
	}
	o_bool(o, "found", 1);
	struct diag_status ds;
	diag_status_parse(buf, (size_t)n, &ds);
	for (size_t k = 0; k < DIAG_STATUS_NKEYS; k++) {
		char val[300];
		const struct diag_span *v = &ds.key[k];
		if (!v->p) {
			if (k >= 7 && !o->json)
				continue; /* agent mode's, in text only when there */
			o_str(o, diag_status_keys[k], NULL);
			continue;
		}
		size_t vl = v->n < sizeof(val) - 1 ? v->n : sizeof(val) - 1;
		memcpy(val, v->p, vl);
		val[vl] = '\0';
		if (k == 1) /* pid */
			pid = strtol(val, NULL, 10);
		const char *colon = strchr(val, ':');
		if (k == 9 && val[0] >= '0' && val[0] <= '9' && colon) { /* listen */
			char *end;
			unsigned long p = strtoul(colon + 1, &end, 10);
			if (end != colon + 1 && (*end == ',' || *end == ' ') && p >= 1 && p <= 65535)
				*lport = (unsigned)p;
		}
		if (k == 1 || k == 6) /* pid, errors_total */
			o_num(o, diag_status_keys[k], strtoll(val, NULL, 10));
		else
			o_str(o, diag_status_keys[k], val);
	}
	o_arr(o, "errors");
	for (unsigned i = 0; i < ds.nerr; i++) {
		char val[300];
		size_t vl = ds.err[i].n < sizeof(val) - 1 ? ds.err[i].n : sizeof(val) - 1;
		memcpy(val, ds.err[i].p, vl);
		val[vl] = '\0';
		o_str(o, NULL, val);
	}
	o_close(o);
	o_close(o);
	return pid;
}

const char *const diag_status_keys[DIAG_STATUS_NKEYS] = {
	"version", "pid", "started", "updated", "state", "serving", "errors_total", "agent", "guard", "listen"};

void diag_status_parse(const char *buf, size_t len, struct diag_status *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t at = 0; at < len;) {
		const char *line = buf + at;
		const char *nl = memchr(line, '\n', len - at);
		size_t ll = nl ? (size_t)(nl - line) : len - at;
		at += ll + (nl ? 1 : 0);
		if (ll > 6 && memcmp(line, "error ", 6) == 0) {
			if (out->nerr < DIAG_STATUS_MAX_ERRORS)
				out->err[out->nerr++] = (struct diag_span){line + 6, ll - 6};
			continue;
		}
		for (size_t k = 0; k < DIAG_STATUS_NKEYS; k++) {
			size_t kl = strlen(diag_status_keys[k]);
			if (ll >= kl && memcmp(line, diag_status_keys[k], kl) == 0 &&
			    (ll == kl || line[kl] == ' ')) {
				size_t skip = ll == kl ? kl : kl + 1;
				out->key[k] = (struct diag_span){line + skip, ll - skip};
				break;
			}
		}
	}
}

/* ---- what it serves ------------------------------------------------------------ */

/* A file's size, or -errno. */
static long long fsize(const char *path)
{
	struct stat s;
	if (stat(path, &s) < 0)
		return -errno;
	return (long long)s.st_size;
}

/* A data file: its path and size, or why not; never its content. */
static void put_file(struct out *o, const char *key, const char *path)
{
	o_obj(o, key);
	o_str(o, "path", path);
	if (path) {
		long long n = fsize(path);
		if (n >= 0)
			o_num(o, "bytes", n);
		else
			o_str(o, "error", strerror((int)-n));
	}
	o_close(o);
}

static void put_serving(struct out *o, const struct imds_config *c)
{
	o_obj(o, "identity");
	o_str(o, "namespace", c->ns);
	o_str(o, "vm_name", c->vm_name);
	o_str(o, "pod_name", c->pod_name);
	o_str(o, "service_account", c->sa_name);
	o_str(o, "instance_id", c->instance_id);
	o_close(o);
	o_obj(o, "placement");
	o_str(o, "zone", c->zone);
	o_str(o, "region", c->region);
	o_close(o);
	o_obj(o, "http");
	o_str(o, "listen", c->listen_addr);
	o_num(o, "rate_limit", c->rate_limit);
	o_num(o, "hop_limit", c->hop_limit);
	o_num(o, "busy_poll_us", c->busy_poll_us);
	o_bool(o, "session_required", c->session_required);
	o_close(o);

	static const char *const layouts[][2] = {
		{"NoCloud", "/v1/meta-data, /v1/user-data, /v1/vendor-data, /v1/network-config"},
		{"EC2", "/latest/ (and dated versions): meta-data/, user-data, dynamic/, api/token"},
		{"OpenStack", "/openstack/<version>/: meta_data.json, user_data, network_data.json, ..."},
		{"GCE", "/computeMetadata/v1/instance/ (Metadata-Flavor: Google)"},
		{"Azure", "/metadata/instance, /metadata/scheduledevents (Metadata: true)"},
		{"Kubernetes", "/v1/identity, /v1/token, /v1/session, /v1/lifecycle"},
	};
	o_arr(o, "layouts");
	for (size_t i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++) {
		o_obj(o, NULL);
		o_str(o, "name", layouts[i][0]);
		o_str(o, "paths", layouts[i][1]);
		o_close(o);
	}
	o_close(o);
	o_arr(o, "routes");
	for (size_t i = 0; imds_route_pattern(i); i++)
		o_str(o, NULL, imds_route_pattern(i));
	o_close(o);

	o_obj(o, "data");
	o_obj(o, "user_data");
	if (c->user_data_file) {
		/* "a:b": the first that exists is served (a Secret's keys) */
		char paths[1024];
		snprintf(paths, sizeof(paths), "%s", c->user_data_file);
		const char *served = NULL;
		for (char *save = NULL, *p = strtok_r(paths, ":", &save); p; p = strtok_r(NULL, ":", &save))
			if (!served && fsize(p) >= 0)
				served = p;
		o_str(o, "source", "file");
		o_str(o, "candidates", c->user_data_file);
		o_str(o, "path", served);
		if (served)
			o_num(o, "bytes", fsize(served));
	} else if (c->user_data) {
		o_str(o, "source", "IMDS_USER_DATA");
		o_num(o, "bytes", (long long)strlen(c->user_data));
	} else if (c->cloud_init) {
		o_str(o, "source", "the VM's cloud-init (IMDS_CLOUD_INIT)");
	} else {
		o_str(o, "source", "none");
	}
	o_close(o);
	put_file(o, "vendor_data", c->vendor_data_file);
	put_file(o, "network_config", c->network_config_file);
	put_file(o, "meta_data", c->meta_data_file);
	put_file(o, "network_status", c->network_status_file);
	o_obj(o, "ssh_keys");
	o_str(o, "dir", c->ssh_keys_dir);
	if (c->ssh_keys_dir) {
		DIR *d = opendir(c->ssh_keys_dir);
		long long k = 0;
		if (d) {
			for (struct dirent *e; (e = readdir(d));)
				if (e->d_name[0] != '.')
					k++;
			closedir(d);
			o_num(o, "files", k);
		} else {
			o_str(o, "error", strerror(errno));
		}
	}
	o_close(o);
	/* The token: whether it is there, never a byte of it. */
	put_file(o, "token", c->token_path);
	o_close(o);
}

static void put_interfaces(struct out *o, const struct imds_config *c)
{
	o_obj(o, "interfaces");
	o_bool(o, "set", c->have_ifaces);
	o_str(o, "bridge", c->bridge_name);
	if (!c->have_ifaces)
		o_str(o, "note", c->bridge_name ? "IMDS_INTERFACES not set: the taps of IMDS_BRIDGE_NAME"
						: "IMDS_INTERFACES not set: the taps of every k6t-* bridge");
	o_arr(o, "entries");
	for (size_t i = 0; c->have_ifaces && i < c->ifaces.n; i++) {
		const struct ifaces_entry *e = &c->ifaces.e[i];
		const char *why = ifaces_kind_unserved(e->kind);
		o_obj(o, NULL);
		o_str(o, "name", e->name);
		o_str(o, "binding", ifaces_kind_name(e->kind));
		o_str(o, "tap", e->tap[0] ? e->tap : NULL);
		o_bool(o, "served", !why);
		if (why)
			o_str(o, "why", why);
		o_close(o);
	}
	o_close(o);
	o_close(o);
}

/* ---- the plumbing, read-only ---------------------------------------------------- */

struct dumped {
	struct out *o;
	int veth;  /* veth-imds's ifindex, 0: absent */
	int count;
};

static const char *ntop(uint8_t family, const uint8_t *a, char *buf, size_t n)
{
	if (!inet_ntop(family, a, buf, (socklen_t)n))
		snprintf(buf, n, "?");
	return buf;
}

static int on_addr(const struct nl_msgview *m, void *ud)
{
	struct dumped *d = ud;
	struct nl_addr a;
	if (nl_parse_addr(m, &a) || a.ifindex != d->veth || !a.has_local)
		return 0;
	char ip[INET6_ADDRSTRLEN], s[80];
	snprintf(s, sizeof(s), "%s/%u", ntop(a.family, a.local, ip, sizeof(ip)), a.prefixlen);
	o_str(d->o, NULL, s);
	return 0;
}

static int on_rule(const struct nl_msgview *m, void *ud)
{
	struct dumped *d = ud;
	struct nl_rule r;
	if (nl_parse_rule(m, &r) || r.table != PLUMB_TABLE)
		return 0;
	char ip[INET6_ADDRSTRLEN], s[160];
	snprintf(s, sizeof(s), "pref %u from %s/%u lookup %u", r.priority,
		 r.has_src ? ntop(r.family, r.src, ip, sizeof(ip)) : "all", r.src_len, r.table);
	o_str(d->o, NULL, s);
	return 0;
}

static int on_route(const struct nl_msgview *m, void *ud)
{
	struct dumped *d = ud;
	struct nl_route r;
	if (nl_parse_route(m, &r) || r.table != PLUMB_TABLE)
		return 0;
	char ip[INET6_ADDRSTRLEN], gw[INET6_ADDRSTRLEN], dev[IF_NAMESIZE] = "?", s[200];
	if (r.oif && !if_indextoname((unsigned)r.oif, dev))
		snprintf(dev, sizeof(dev), "#%d", r.oif);
	char dst[INET6_ADDRSTRLEN + 8] = "default";
	if (r.has_dst)
		snprintf(dst, sizeof(dst), "%s/%u", ntop(r.family, r.dst, ip, sizeof(ip)), r.dst_len);
	snprintf(s, sizeof(s), "%s%s%s dev %s table %u", dst,
		 r.has_gw ? " via " : "", r.has_gw ? ntop(r.family, r.gw, gw, sizeof(gw)) : "", dev,
		 r.table);
	o_str(d->o, NULL, s);
	return 0;
}

static int on_table(const struct nl_msgview *m, void *ud)
{
	struct dumped *d = ud;
	struct nft_msg t;
	if (nft_parse_msg(m, &t) || t.type != NFT_MSG_NEWTABLE || !t.table[0])
		return 0;
	const char *fam = t.family == NFPROTO_INET   ? "inet"
			  : t.family == NFPROTO_IPV4 ? "ip"
			  : t.family == NFPROTO_IPV6 ? "ip6"
			  : t.family == NFPROTO_NETDEV ? "netdev"
			  : t.family == NFPROTO_BRIDGE ? "bridge"
			  : t.family == NFPROTO_ARP    ? "arp"
						       : "?";
	char s[NFT_NAMESIZ + 16];
	snprintf(s, sizeof(s), "%s %s", fam, t.table);
	o_str(d->o, NULL, s);
	if (strcmp(t.table, STEER_TABLE) == 0)
		d->count++;
	return 0;
}

static void put_link(struct out *o, struct nl_sock *s, const char *key, const char *name, int *index)
{
	char err[256];
	struct nl_link l = {0};
	o_obj(o, key);
	o_str(o, "name", name);
	int r = nl_get_link(s, name, &l, err, sizeof(err));
	o_bool(o, "present", r == 0);
	if (r == 0) {
		char mac[18], master[IF_NAMESIZE] = "";
		snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", l.mac[0], l.mac[1], l.mac[2],
			 l.mac[3], l.mac[4], l.mac[5]);
		o_num(o, "ifindex", l.ifindex);
		o_bool(o, "up", (l.flags & IFF_UP) != 0);
		o_num(o, "mtu", l.mtu);
		o_str(o, "mac", l.has_mac ? mac : NULL);
		if (l.master && !if_indextoname((unsigned)l.master, master))
			snprintf(master, sizeof(master), "#%d", l.master);
		o_str(o, "master", l.master ? master : NULL);
		if (index)
			*index = l.ifindex;
	} else if (r != -ENODEV) {
		o_str(o, "error", err);
	}
	o_close(o);
}

static void put_plumbing(struct out *o)
{
	char err[256];
	struct nl_sock s;
	nl_sock_init(&s);
	o_obj(o, "plumbing");
	if (nl_open(&s, NULL, 0, err, sizeof(err))) {
		o_str(o, "error", err);
		o_close(o);
		return;
	}
	struct dumped d = {.o = o};
	put_link(o, &s, "veth", PLUMB_VETH, &d.veth);
	put_link(o, &s, "peer", PLUMB_PEER, NULL);
	o_arr(o, "addresses");
	if (d.veth && nl_dump_all(&s, RTM_GETADDR, AF_UNSPEC, on_addr, &d, err, sizeof(err)))
		o_str(o, NULL, err);
	o_close(o);
	o_arr(o, "rules");
	if (nl_dump_all(&s, RTM_GETRULE, AF_INET, on_rule, &d, err, sizeof(err)) ||
	    nl_dump_all(&s, RTM_GETRULE, AF_INET6, on_rule, &d, err, sizeof(err)))
		o_str(o, NULL, err);
	o_close(o);
	o_arr(o, "routes");
	if (nl_dump_all(&s, RTM_GETROUTE, AF_INET, on_route, &d, err, sizeof(err)) ||
	    nl_dump_all(&s, RTM_GETROUTE, AF_INET6, on_route, &d, err, sizeof(err)))
		o_str(o, NULL, err);
	o_close(o);
	nl_close(&s);

	/* nf_tables: the tables present (reading them needs CAP_NET_ADMIN,
	 * which the sidecar's container has; elsewhere the error says so). */
	o_obj(o, "nftables");
	struct {
		struct nlmsghdr n;
		struct nfgenmsg g;
	} req;
	memset(&req, 0, sizeof(req));
	req.n.nlmsg_len = sizeof(req);
	req.n.nlmsg_type = (NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_GETTABLE;
	req.g.nfgen_family = AF_UNSPEC;
	req.g.version = NFNETLINK_V0;
	int r = nft_open(&s, 0, err, sizeof(err));
	o_arr(o, "tables");
	if (!r)
		r = nl_dump(&s, &req.n, on_table, &d, err, sizeof(err));
	o_close(o);
	nl_close(&s);
	if (r) {
		char why[320];
		snprintf(why, sizeof(why), "%s%s%s", strerror(-r), err[0] ? ": " : "", err);
		o_str(o, "error", why);
	} else {
		o_bool(o, "ours", d.count > 0);
	}
	o_close(o);
	o_close(o);
}

/* ---- the listener, as the kernel lists it ------------------------------------------ */

/* Every TCP socket listening on the service's port at its addresses
 * (IMDS_LISTEN_ADDR's, fd00:ec2::254, fe80::a9fe:a9fe) or the wildcard, with
 * the UID that made it (in agent mode the node agent, 0) and who holds it
 * (the sidecar: the socket is among its descriptors), from /proc/net/tcp and
 * tcp6 of this network namespace (readable without privilege): is the
 * sidecar's listener bound, or does another process hold the port. */
/* Whether pid holds the socket of that inode (its /proc fd folder: the
 * same UID reads it, as diag runs where the sidecar runs); -1 unknown. */
static int holds(long pid, unsigned long ino)
{
	char dir[64], link[64], want[48];
	if (pid <= 0)
		return -1;
	snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
	snprintf(want, sizeof(want), "socket:[%lu]", ino);
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int found = 0;
	for (struct dirent *e; !found && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		ssize_t n = readlinkat(dirfd(d), e->d_name, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = '\0';
			found = strcmp(link, want) == 0;
		}
	}
	closedir(d);
	return found;
}

/* n hex digits at s as a number; -1 when one is not a hex digit */
static long long hexn(const char *s, size_t n)
{
	long long v = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
						      : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return -1;
		v = v * 16 + d;
	}
	return v;
}

/* One line of /proc/net/tcp(6) (net/ipv4/tcp_ipv4.c get_tcp4_sock,
 * net/ipv6/tcp_ipv6.c get_tcp6_sock): "sl: ADDR:PORT REM:PORT ST TX:RX
 * TR:WHEN RETR UID TIMEOUT INODE ...", ADDR 8 or 32 hex digits.  0 or -1. */
static int tcp_line(char *line, int v6, uint8_t a[16], unsigned *port, unsigned *state,
		    unsigned long *uid, unsigned long *ino)
{
	char *tok[10], *save = NULL;
	size_t n = 0, alen = v6 ? 32 : 8;
	for (char *t = strtok_r(line, " \t\n", &save); t && n < 10; t = strtok_r(NULL, " \t\n", &save))
		tok[n++] = t;
	if (n < 10 || strlen(tok[1]) != alen + 5 || tok[1][alen] != ':' || strlen(tok[3]) != 2)
		return -1;
	for (size_t w = 0; w < alen / 8; w++) {
		long long v = hexn(tok[1] + w * 8, 8);
		if (v < 0)
			return -1;
		/* the kernel prints each 32-bit word of the address as it is in
		 * memory, read as a host integer: copied back, the bytes */
		uint32_t u = (uint32_t)v;
		memcpy(a + w * 4, &u, 4);
	}
	long long p = hexn(tok[1] + alen + 1, 4), s = hexn(tok[3], 2);
	char *e1, *e2;
	*uid = strtoul(tok[7], &e1, 10);
	*ino = strtoul(tok[9], &e2, 10);
	if (p < 0 || s < 0 || *e1 || *e2)
		return -1;
	*port = (unsigned)p;
	*state = (unsigned)s;
	return 0;
}

static void scan_tcp(struct out *o, int v6, const uint8_t *want4, uint16_t port, long pid, int *bound)
{
	FILE *f = fopen(v6 ? "/proc/net/tcp6" : "/proc/net/tcp", "re");
	char line[512];
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		unsigned p, state;
		unsigned long uid, ino;
		uint8_t a[16] = {0};
		if (tcp_line(line, v6, a, &p, &state, &uid, &ino) || state != 0x0A /* LISTEN */ ||
		    p != port)
			continue;
		static const uint8_t any[16];
		int exact = v6 ? (!memcmp(a, ndp_imds_addr[0], 16) || !memcmp(a, ndp_imds_addr[1], 16))
			       : !memcmp(a, want4, 4);
		if (!exact && memcmp(a, any, v6 ? 16 : 4) != 0)
			continue;
		char ip[INET6_ADDRSTRLEN], s[INET6_ADDRSTRLEN + 60];
		int h = holds(pid, ino);
		ntop(v6 ? AF_INET6 : AF_INET, a, ip, sizeof(ip));
		snprintf(s, sizeof(s), v6 ? "[%s]:%u (uid %lu), %s" : "%s:%u (uid %lu), %s", ip, p, uid,
			 h > 0 ? "held by the sidecar" : h < 0 ? "holder unknown" : "held by another process");
		o_str(o, NULL, s);
		if (exact && !v6 && h > 0)
			*bound = 1;
	}
	(void)fclose(f);
}

static void put_listener(struct out *o, const struct imds_config *c, long pid, unsigned lport)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int bound = 0;
	o_obj(o, "listener");
	o_str(o, "address", c->listen_addr);
	if (!c->listen_addr || addr_parse(c->listen_addr, &ss, &sl) || ss.ss_family != AF_INET) {
		o_str(o, "note", "not an IPv4 address: not looked for");
		o_close(o);
		return;
	}
	const struct sockaddr_in *sin = (const struct sockaddr_in *)&ss;
	/* passt's pods: the agent's listener is on another port (plumb.h
	 * PLUMB_PASST_LPORT), which its "listen" line names */
	uint16_t port = lport ? (uint16_t)lport : ntohs(sin->sin_port);
	o_num(o, "port", port);
	o_arr(o, "sockets");
	scan_tcp(o, 0, (const uint8_t *)&sin->sin_addr, port, pid, &bound);
	scan_tcp(o, 1, NULL, port, pid, &bound);
	o_close(o);
	o_bool(o, "bound", bound);
	o_close(o);
}

/* ---- the subcommand ------------------------------------------------------------- */

int diag_main(int argc, char **argv, const char *version)
{
	int json = 0;
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs("usage: imds-server diag [--json]\n"
			      "  what this sidecar serves, to which interfaces, the state of its plumbing\n"
			      "  and its last errors; no secrets (sizes only). See docs/sidecar.md.\n",
			      stdout);
			return 0;
		} else {
			fprintf(stderr, "imds-server diag: unknown argument '%s' (usage: imds-server diag [--json])\n",
				argv[i]);
			return 2;
		}
	}
	char err[512];
	struct imds_config c;
	int full = config_from_env(&c, err, sizeof(err)) == 0;
	if (!full) {
		/* Still say what it can: the network settings alone. */
		char err2[512];
		if (config_net_from_env(&c, err2, sizeof(err2)) < 0) {
			fprintf(stderr, "imds-server diag: %s\n", err2);
			return 2;
		}
	}
	static char buf[1 << 16];
	struct sbuf b = SBUF_INIT(buf, sizeof(buf));
	struct out o = {.b = &b, .json = json};
	o.first[0] = 1;
	if (json)
		sbuf_putc(&b, '{');
	o.depth = json ? 0 : 1;
	o.first[o.depth] = 1;
	o_str(&o, "diag_version", version);
	if (!full)
		o_str(&o, "config_error", err);
	unsigned lport = 0;
	long pid = put_status(&o, &c, &lport);
	if (full)
		put_serving(&o, &c);
	put_interfaces(&o, &c);
	put_listener(&o, &c, pid, lport);
	put_plumbing(&o);
	if (json)
		sbuf_puts(&b, "}\n");
	if (b.overflow) {
		fputs("imds-server diag: output over 64 KiB, cut\n", stderr);
		return 1;
	}
	size_t w = fwrite(buf, 1, b.len, stdout);
	return w == b.len && fflush(stdout) == 0 ? 0 : 1;
}
