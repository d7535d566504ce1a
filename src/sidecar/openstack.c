#include "openstack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "log.h"
#include "sbuf.h"

static const char versions[] = "2012-08-10\n2013-04-04\n2013-10-17\n2015-10-15\n2016-06-30\n"
			       "2016-10-06\n2017-02-22\n2018-08-27\nlatest\n";
static const char files[] = "meta_data.json\nuser_data\nvendor_data.json\nnetwork_data.json\n";
/* Nova has the password from 2013-04-04 on. */
static const char files_pw[] =
	"meta_data.json\nuser_data\nvendor_data.json\nnetwork_data.json\npassword\n";

int os_version_ok(const char *v, size_t n)
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

int os_password_version_ok(const char *v, size_t n)
{
	return os_version_ok(v, n) &&
	       ((n == 6 && memcmp(v, "latest", 6) == 0) || (n == 10 && memcmp(v, "2013-04-04", 10) >= 0));
}

/* OpenStack's name of key k: its entry, "-N" appended when the entry holds several. */
static void key_name(struct sbuf *b, const struct sshkey *k)
{
	sbuf_json_escape(b, k->entry, strlen(k->entry));
	if (k->of > 1)
		sbuf_printf(b, "-%u", k->nth);
}

/* meta_data.json as cloudbase-init and cloud-init read it: uuid is the
 * instance id, hostname/name the VM name.  0 or -ENOMEM. */
static int render(struct openstack *os, const struct inst_meta *m)
{
	const struct instance *in = os->inst;
	const struct sshkeys *keys = m->keys;
	const struct metajson *cu = m->custom;
	/* Worst case: every byte escaped (\u00XX, 6 bytes) twice over. */
	size_t cap = 4096 + strlen(in->iid) * 12 + strlen(in->hostname) * 24;
	for (unsigned i = 0; i < keys->n; i++)
		cap += (strlen(keys->k[i].entry) * 2 + strlen(keys->k[i].line) * 3) * 6 + 128;
	for (size_t i = 0; i < cu->n; i++)
		cap += (cu->kv[i].kn + cu->kv[i].vn) * 12 + 32;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	struct sbuf b = SBUF_INIT(buf, cap);
	sbuf_putc(&b, '{');
	call_json_field(&b, "uuid", in->iid, 0);
	call_json_field(&b, "name", in->hostname, 1);
	call_json_field(&b, "hostname", in->hostname, 1);
	call_json_field(&b, "project_id", in->cfg->ns, 1);
	sbuf_puts(&b, ",\"availability_zone\":\"\",\"launch_index\":0,\"public_keys\":{");
	for (unsigned i = 0; i < keys->n; i++) {
		sbuf_puts(&b, i ? ",\"" : "\"");
		key_name(&b, &keys->k[i]);
		sbuf_puts(&b, "\":\"");
		sbuf_json_escape(&b, keys->k[i].line, strlen(keys->k[i].line));
		sbuf_putc(&b, '"');
	}
	sbuf_putc(&b, '}');
	if (keys->n) /* as Nova: "keys" only for an instance with keys */
		sbuf_puts(&b, ",\"keys\":[");
	for (unsigned i = 0; i < keys->n; i++) {
		sbuf_puts(&b, i ? ",{\"name\":\"" : "{\"name\":\"");
		key_name(&b, &keys->k[i]);
		sbuf_puts(&b, "\",\"type\":\"ssh\",\"data\":\"");
		sbuf_json_escape(&b, keys->k[i].line, strlen(keys->k[i].line));
		sbuf_puts(&b, "\"}");
	}
	sbuf_puts(&b, keys->n ? "],\"meta\":{" : ",\"meta\":{");
	call_json_field(&b, "namespace", in->cfg->ns, 0);
	call_json_field(&b, "vmName", in->hostname, 1);
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
	struct blob *md = call_render(&b);
	free(buf);
	if (!md)
		return -ENOMEM;
	blob_unref(os->meta);
	os->meta = md;
	os->gen = m->gen;
	return 0;
}

int os_open(struct openstack *os, struct instance *in)
{
	memset(os, 0, sizeof(*os));
	os->inst = in;
	struct inst_meta m = inst_meta(in);
	return render(os, &m);
}

void os_close(struct openstack *os)
{
	blob_unref(os->meta);
	blob_unref(os->vendor_src);
	blob_unref(os->vendor_json);
	memset(os, 0, sizeof(*os));
}

void os_versions(struct call *c)
{
	http_res_text(c->res, 200, "text/plain", versions, sizeof(versions) - 1);
}

void os_files(struct call *c)
{
	if (os_password_version_ok(c->ver.p, c->ver.n))
		http_res_text(c->res, 200, "text/plain", files_pw, sizeof(files_pw) - 1);
	else
		http_res_text(c->res, 200, "text/plain", files, sizeof(files) - 1);
}

void os_meta_data(struct call *c)
{
	struct openstack *os = c->self;
	struct inst_meta m = inst_meta(os->inst);
	if (m.gen != os->gen && render(os, &m) < 0)
		log_error("meta-data: out of memory, serving the previous answer");
	call_data(c, "application/json", os->meta);
}

void os_user_data(struct call *c)
{
	struct openstack *os = c->self;
	struct blob *u = inst_user_data(os->inst);
	/* Nova answers 404 when an instance has no user data, and both
	 * cloudbase-init and cloud-init read that as "none". */
	if (!u || u->len == 0)
		http_res_error(c->res, 404, "not_found", "no user data");
	else
		call_data(c, "application/octet-stream", u);
}

/* Vendor data goes in the "cloud-init" key, which cloud-init's OpenStack
 * datasource unwraps; rendered again only when the vendor-data changed. */
void os_vendor_data(struct call *c)
{
	struct openstack *os = c->self;
	struct blob *v = inst_vendor_data(os->inst);
	if (!v || v->len == 0) {
		call_data_text(c, "application/json", "{}\n", 3);
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
		struct blob *j = call_render(&b);
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
	call_data(c, "application/json", os->vendor_json);
}

void os_network_data(struct call *c)
{
	/* network-config is cloud-init YAML (v1/v2), which has no OpenStack
	 * form without a YAML parser; guests of this layout (Windows) take
	 * DHCP, so an empty network_data is exact. */
	static const char empty[] = "{\"links\":[],\"networks\":[],\"services\":[]}\n";
	call_data_text(c, "application/json", empty, sizeof(empty) - 1);
}
