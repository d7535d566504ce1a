#include "openstack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "log.h"
#include "sbuf.h"

static const char versions[] = "2012-08-10\n2013-04-04\n2013-10-17\n2015-10-15\n2016-06-30\n"
			       "2016-10-06\n2017-02-22\n2018-08-27\nlatest\n";
/* The files of a version: openstack.h's OPENSTACK_FILES, one row each. */
#define OPENSTACK_ENUM(id, ...) OPENSTACK_##id,
enum { OPENSTACK_FILES(OPENSTACK_ENUM) OPENSTACK_NFILES };
#undef OPENSTACK_ENUM
static const struct openstack_file {
	const char *name;
	const char *since;
} files[OPENSTACK_NFILES] = {
#define OPENSTACK_ROW(id, name, since, ...) [OPENSTACK_##id] = {name, since},
	OPENSTACK_FILES(OPENSTACK_ROW)
#undef OPENSTACK_ROW
};
_Static_assert(OPENSTACK_NFILES <= OPENSTACK_FILES_MAX, "OPENSTACK_FILES_MAX");

int openstack_version_ok(const char *v, size_t n)
{
	if (n == 6 && memcmp(v, "latest", 6) == 0)
		return 1;
	if (n != 10 || v[4] != '-' || v[7] != '-')
		return 0;
	for (size_t i = 0; i < n; i++)
		if (i != 4 && i != 7 && (v[i] < '0' || v[i] > '9'))
			return 0;
	return 1;
}

/* v is a version from date on. */
static int from(const char *v, size_t n, const char *date)
{
	return openstack_version_ok(v, n) &&
	       ((n == 6 && memcmp(v, "latest", 6) == 0) || (n == 10 && memcmp(v, date, 10) >= 0));
}

static int serves(const char *v, size_t n, const struct openstack_file *f)
{
	return f->since ? from(v, n, f->since) : openstack_version_ok(v, n);
}

#define OPENSTACK_SERVES(id, ...)                            \
	int openstack_serves_##id(const char *v, size_t n)   \
	{                                                    \
		return serves(v, n, &files[OPENSTACK_##id]); \
	}
OPENSTACK_FILES(OPENSTACK_SERVES)
#undef OPENSTACK_SERVES

const char *openstack_file_name(size_t i)
{
	return i < OPENSTACK_NFILES ? files[i].name : NULL;
}

/* OpenStack's name of key k: its entry, "-N" appended when the entry holds several. */
static void key_name(struct sbuf *b, const struct sshkey *k)
{
	sbuf_json_escape(b, k->entry, strlen(k->entry));
	if (k->of > 1)
		sbuf_printf(b, "-%u", k->nth);
}

static int is_rsa(const struct sshkey *k)
{
	return strncmp(k->line, "ssh-rsa ", 8) == 0;
}

/* The keys this layout lists, into sel (indexes into keys); their count.
 * Said in the log when the instance's keys changed (rendering). */
static unsigned pick_keys(const struct instance *in, const struct sshkeys *keys, unsigned *sel)
{
	const char *want = in->password_key;
	unsigned n = 0;
	if (!want) {
		for (unsigned i = 0; i < keys->n; i++)
			sel[n++] = i;
		/* Only a Windows guest cares: a note, not an error. */
		if (n > 1 || (n == 1 && !is_rsa(&keys->k[0])))
			log_info("openstack: %u SSH key(s)%s: on Windows, cloudbase-init encrypts its "
				 "password to an arbitrary one and fails on one that is not RSA; "
				 "imds.kubevirt.io/password-key names the entry of the key to use",
				 n, n == 1 ? ", not RSA" : "");
		return n;
	}
	for (unsigned i = 0; i < keys->n && !n; i++)
		if (strcmp(keys->k[i].entry, want) == 0 && is_rsa(&keys->k[i]))
			sel[n++] = i;
	if (n)
		log_info("openstack: listing the RSA key of entry '%s' alone (password-key), of %u SSH "
			 "key(s)", want, keys->n);
	else
		log_error("openstack: password-key '%s': no ssh-rsa key in that entry of the SSH keys "
			  "Secret; no key is listed (cloudbase-init will not post a password)", want);
	return n;
}

/* meta_data.json as cloudbase-init and cloud-init read it: uuid is the
 * instance id, hostname/name the VM name.  0 or -ENOMEM. */
static int render(struct openstack *os, const struct inst_meta *m)
{
	const struct instance *in = os->inst;
	const struct sshkeys *keys = m->keys;
	const struct metajson *cu = m->custom;
	/* Worst case: every byte escaped (\u00XX, 6 bytes) twice over. */
	size_t cap = 4096 + strlen(in->iid) * 12 + strlen(in->hostname) * 24 +
		     strlen(in->instance_type) * 6 + (in->zone ? strlen(in->zone) * 6 : 0);
	for (unsigned i = 0; i < keys->n; i++)
		cap += (strlen(keys->k[i].entry) * 2 + strlen(keys->k[i].line) * 3) * 6 + 128;
	for (size_t i = 0; i < cu->n; i++)
		cap += (cu->kv[i].kn + cu->kv[i].vn) * 12 + 32;
	const struct cikeys *ck = m->cikeys;
	for (unsigned i = 0; i < ck->n; i++)
		cap += ck->k[i].n * 6 + 32;
	cap += (strlen(in->uuid) + strlen(in->openstack_iid)) * 6;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	unsigned sel[SSHKEYS_MAX];
	unsigned nk = pick_keys(in, keys, sel);
	struct sbuf b = SBUF_INIT(buf, cap);
	sbuf_putc(&b, '{');
	/* KubeVirt's config drive (cloud-init.go:411-419): instance_id
	 * <name>.<namespace>, uuid the firmware UUID, which cloud-init's
	 * OpenStack reader takes as the instance-id. */
	answer_json_field(&b, "uuid", in->uuid, 0);
	answer_json_field(&b, "instance_id", in->openstack_iid, 1);
	answer_json_field(&b, "name", in->hostname, 1);
	answer_json_field(&b, "hostname", in->hostname, 1);
	answer_json_field(&b, "project_id", in->vm_ns, 1);
	/* The node's zone (the pod's topology label); unknown: no key, not
	 * an invented one. */
	if (in->zone)
		answer_json_field(&b, "availability_zone", in->zone, 1);
	/* Not Nova's, but read by Talos, which otherwise asks EC2's
	 * instance-type for minutes when it is missing. */
	answer_json_field(&b, "instance_type", in->instance_type, 1);
	sbuf_puts(&b, ",\"launch_index\":0,\"public_keys\":{");
	/* The accessCredentials' keys as KubeVirt numbers them, verbatim. */
	for (unsigned j = 0; j < ck->n; j++) {
		sbuf_printf(&b, "%s\"%u\":\"", j ? "," : "", j);
		sbuf_json_escape(&b, ck->k[j].v, ck->k[j].n);
		sbuf_putc(&b, '"');
	}
	for (unsigned j = 0; j < nk; j++) {
		const struct sshkey *k = &keys->k[sel[j]];
		sbuf_puts(&b, j || ck->n ? ",\"" : "\"");
		key_name(&b, k);
		sbuf_puts(&b, "\":\"");
		sbuf_json_escape(&b, k->line, strlen(k->line));
		sbuf_putc(&b, '"');
	}
	sbuf_putc(&b, '}');
	if (nk) /* as Nova: "keys" only for an instance with keys */
		sbuf_puts(&b, ",\"keys\":[");
	for (unsigned j = 0; j < nk; j++) {
		const struct sshkey *k = &keys->k[sel[j]];
		sbuf_puts(&b, j ? ",{\"name\":\"" : "{\"name\":\"");
		key_name(&b, k);
		sbuf_puts(&b, "\",\"type\":\"ssh\",\"data\":\"");
		sbuf_json_escape(&b, k->line, strlen(k->line));
		sbuf_puts(&b, "\"}");
	}
	sbuf_puts(&b, nk ? "],\"meta\":{" : ",\"meta\":{");
	answer_json_field(&b, "namespace", in->vm_ns, 0);
	answer_json_field(&b, "vmName", in->hostname, 1);
	for (size_t i = 0; i < cu->n; i++) {
		if (m->custom_use[i] != INST_CUSTOM_ALL)
			continue;
		sbuf_puts(&b, ",\"");
		sbuf_json_escape(&b, cu->kv[i].k, cu->kv[i].kn);
		sbuf_puts(&b, "\":\"");
		sbuf_json_escape(&b, cu->kv[i].v, cu->kv[i].vn);
		sbuf_putc(&b, '"');
	}
	sbuf_puts(&b, "}}\n");
	struct blob *md = answer_render(&b);
	free(buf);
	if (!md)
		return -ENOMEM;
	blob_unref(os->meta);
	os->meta = md;
	os->gen = m->gen;
	return 0;
}

int openstack_open(struct openstack *os, struct instance *in)
{
	memset(os, 0, sizeof(*os));
	os->inst = in;
	struct sbuf b = SBUF_INIT(os->listing, sizeof(os->listing));
	for (size_t i = 0; i < OPENSTACK_NFILES; i++) {
		os->listing_len[i] = b.len;
		sbuf_printf(&b, "%s\n", files[i].name);
	}
	os->listing_len[OPENSTACK_NFILES] = b.len;
	struct inst_meta m = inst_meta(in);
	return render(os, &m);
}

void openstack_close(struct openstack *os)
{
	blob_unref(os->meta);
	blob_unref(os->vendor_src);
	blob_unref(os->vendor_json);
	blob_unref(os->net);
	memset(os, 0, sizeof(*os));
}

void openstack_versions(struct call *c)
{
	http_res_text(c->res, 200, "text/plain", versions, sizeof(versions) - 1);
}

void openstack_files(struct call *c)
{
	struct openstack *os = c->self;
	size_t i = 0;
	while (i < OPENSTACK_NFILES && serves(c->ver.p, c->ver.n, &files[i]))
		i++;
	http_res_text(c->res, 200, "text/plain", os->listing, os->listing_len[i]);
}

void openstack_meta_data(struct call *c)
{
	struct openstack *os = c->self;
	struct inst_meta m = inst_meta(os->inst);
	if (m.gen != os->gen && render(os, &m) < 0)
		log_error("meta-data: out of memory, serving the previous answer");
	answer_data(c, "application/json", os->meta);
}

void openstack_user_data(struct call *c)
{
	struct openstack *os = c->self;
	struct blob *u = inst_user_data(os->inst);
	/* Nova answers 404 when an instance has no user data, and both
	 * cloudbase-init and cloud-init read that as "none". */
	if (!u || u->len == 0)
		http_res_error(c->res, 404, "not_found", "no user data");
	else
		answer_data(c, "application/octet-stream", u);
}

/* Vendor data goes in the "cloud-init" key, which cloud-init's OpenStack
 * datasource unwraps; rendered again only when the vendor-data changed. */
void openstack_vendor_data(struct call *c)
{
	struct openstack *os = c->self;
	struct blob *v = inst_vendor_data(os->inst);
	if (!v || v->len == 0) {
		answer_data_text(c, "application/json", "{}\n", 3);
		return;
	}
	if (v != os->vendor_src || !os->vendor_json) {
		size_t cap = v->len * 6 + 32;
		char *tmp = malloc(cap);
		if (!tmp) {
			http_res_error(c->res, 500, "internal", "out of memory");
			return;
		}
		struct sbuf b = SBUF_INIT(tmp, cap);
		sbuf_puts(&b, "{\"cloud-init\":\"");
		sbuf_json_escape(&b, v->data, v->len);
		sbuf_puts(&b, "\"}\n");
		struct blob *j = answer_render(&b);
		free(tmp);
		if (!j) {
			http_res_error(c->res, 500, "internal", "out of memory");
			return;
		}
		blob_unref(os->vendor_json);
		blob_unref(os->vendor_src);
		os->vendor_json = j;
		/* Held, so that its address is never another blob's. */
		os->vendor_src = blob_ref(v);
	}
	answer_data(c, "application/json", os->vendor_json);
}

void openstack_vendor_data2(struct call *c)
{
	/* Nova's dynamic vendor data comes from external services; there are
	 * none, and cloud-init reads {} as no vendor data. */
	answer_data_text(c, "application/json", "{}\n", 3);
}

/* A link id: the pod's interface name, which cloudbase-init gives the
 * guest's adapter; "link<N>" when it has bytes an adapter name cannot. */
static void link_id(struct sbuf *b, const struct netstatus_nic *nic, unsigned i)
{
	int ok = nic->iface[0] != '\0';
	for (const char *p = nic->iface; *p && ok; p++)
		ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		     *p == '-' || *p == '_' || *p == '.';
	if (ok)
		sbuf_puts(b, nic->iface);
	else
		sbuf_printf(b, "link%u", i);
}

/* network_data.json from the pod's network-status: a link per interface
 * of a secondary network (Multus), with its MAC, which is the VM's with
 * the bridge and SR-IOV bindings; DHCP on it when the network gave it an
 * IPv4 (KubeVirt's DHCP then hands that address to the guest).  The pod
 * network's interface only when the VM is bridged to it (inst->pod_nic_bridged):
 * with masquerade (the default) or passt the MAC there is the pod's, which
 * the guest does not have, and a link no adapter matches stops cloud-init
 * and cloudbase-init.  (A MAC the VMI sets itself is the guest's, not the
 * pod interface's: such a NIC's link names a MAC the guest lacks.) */
static int render_net(struct openstack *os, const struct inst_net *net)
{
	const struct netstatus *ns = net->ns;
	int pod_nic = os->inst->pod_nic_bridged;
	size_t cap = 256 + (size_t)ns->n * (NETSTATUS_NAME_MAX * 6 + NETSTATUS_IFACE_MAX * 2 + 256);
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	struct sbuf b = SBUF_INIT(buf, cap);
	unsigned nl = 0, nn = 0;
	sbuf_puts(&b, "{\"links\":[");
	for (unsigned i = 0; i < ns->n; i++) {
		const struct netstatus_nic *nic = &ns->nic[i];
		if ((nic->is_default && !pod_nic) || !nic->has_mac)
			continue;
		sbuf_puts(&b, nl++ ? ",{\"id\":\"" : "{\"id\":\"");
		link_id(&b, nic, i);
		sbuf_printf(&b, "\",\"type\":\"phy\",\"ethernet_mac_address\":"
				"\"%02x:%02x:%02x:%02x:%02x:%02x\"",
			    nic->mac[0], nic->mac[1], nic->mac[2], nic->mac[3], nic->mac[4], nic->mac[5]);
		answer_json_field(&b, "vif_id", nic->name, 1);
		sbuf_putc(&b, '}');
	}
	sbuf_puts(&b, "],\"networks\":[");
	for (unsigned i = 0; i < ns->n; i++) {
		const struct netstatus_nic *nic = &ns->nic[i];
		if ((nic->is_default && !pod_nic) || !nic->has_mac || !nic->ipv4[0])
			continue;
		sbuf_printf(&b, "%s{\"id\":\"network%u\",\"type\":\"ipv4_dhcp\",\"link\":\"",
			    nn++ ? "," : "", i);
		link_id(&b, nic, i);
		sbuf_putc(&b, '"');
		answer_json_field(&b, "network_id", nic->name, 1);
		sbuf_putc(&b, '}');
	}
	sbuf_puts(&b, "],\"services\":[]}\n");
	struct blob *j = answer_render(&b);
	free(buf);
	if (!j)
		return -ENOMEM;
	blob_unref(os->net);
	os->net = j;
	os->net_gen = net->gen;
	os->net_links = nl;
	return 0;
}

void openstack_network_data(struct call *c)
{
	struct openstack *os = c->self;
	/* A config drive volume's network data, as KubeVirt's disk has it. */
	struct blob *given = inst_openstack_network_data(os->inst);
	if (given) {
		answer_data(c, "application/json", given);
		return;
	}
	struct inst_net net = inst_net(os->inst);
	if ((net.gen != os->net_gen || !os->net) && render_net(os, &net) < 0 && !os->net) {
		http_res_error(c->res, 500, "internal", "out of memory");
		return;
	}
	/* No link the guest's MAC matches: a network_data.json with none
	 * makes cloud-init apply an empty network configuration (eth0 stays
	 * down: seen in a Debian 12 guest under DataSourceOpenStackLocal).
	 * KubeVirt's config drive has no network_data.json without
	 * networkData, and cloud-init's reader takes a 404 as "none" with no
	 * retry (helpers/openstack.py, optional file; should_retry_cb stops
	 * at >= 400): it then configures the first NIC by DHCP. */
	if (os->net_links == 0) {
		http_res_error(c->res, 404, "not_found",
			       "no network data: no interface of the VM is known by its own MAC "
			       "(the pod network with masquerade or passt, no secondary network)");
		return;
	}
	answer_data(c, "application/json", os->net);
}
