#include "nocloud.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "answer.h"
#include "log.h"
#include "sbuf.h"
#include "yaml.h"

static void yaml_line(struct sbuf *b, const char *key, const char *v, size_t vn)
{
	sbuf_puts(b, key);
	yaml_scalar(b, v, vn);
	sbuf_putc(b, '\n');
}

/* meta-data for m.  0 or -ENOMEM (the previous rendering stays). */
static int render(struct nocloud *nc, const struct inst_meta *m)
{
	const struct instance *in = nc->inst;
	const struct sshkeys *keys = m->keys;
	const struct metajson *cu = m->custom;
	/* Worst case: every byte escaped (\u00XX, 6 bytes) twice over. */
	size_t cap = 4096 + strlen(in->iid) * 12 + strlen(in->hostname) * 24;
	const struct cikeys *ck = m->cikeys;
	for (unsigned i = 0; i < keys->n; i++)
		cap += (strlen(keys->k[i].entry) * 2 + strlen(keys->k[i].line) * 3) * 6 + 128;
	for (unsigned i = 0; i < ck->n; i++)
		cap += ck->k[i].n * 6 + 32;
	for (size_t i = 0; i < cu->n; i++)
		cap += (cu->kv[i].kn + cu->kv[i].vn) * 12 + 32;
	cap += strlen(in->instance_type) * 6;
	char *buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	struct sbuf b = SBUF_INIT(buf, cap);
	/* KubeVirt's fields (cloud-init.go:80-85): instance-type only when
	 * the VM has one (its instancetype annotations or IMDS_INSTANCE_TYPE). */
	if (in->instance_type_known)
		yaml_line(&b, "instance-type: ", in->instance_type, strlen(in->instance_type));
	yaml_line(&b, "instance-id: ", in->iid, strlen(in->iid));
	yaml_line(&b, "local-hostname: ", in->hostname, strlen(in->hostname));
	if (keys->n || ck->n)
		sbuf_puts(&b, "public-keys:\n");
	if (ck->n) {
		/* KubeVirt's map of verbatim keys, "0", "1", ...; the
		 * annotation's keys numbered on after them. */
		for (unsigned i = 0; i < ck->n; i++) {
			sbuf_printf(&b, "  \"%u\": ", i);
			yaml_scalar(&b, ck->k[i].v, ck->k[i].n);
			sbuf_putc(&b, '\n');
		}
		for (unsigned i = 0; i < keys->n; i++) {
			sbuf_printf(&b, "  \"%u\": ", ck->n + i);
			yaml_scalar(&b, keys->k[i].line, strlen(keys->k[i].line));
			sbuf_putc(&b, '\n');
		}
	} else {
		for (unsigned i = 0; i < keys->n; i++)
			yaml_line(&b, "  - ", keys->k[i].line, strlen(keys->k[i].line));
	}
	for (size_t i = 0; i < cu->n; i++) {
		if (m->custom_use[i] == INST_CUSTOM_RESERVED)
			continue;
		yaml_scalar(&b, cu->kv[i].k, cu->kv[i].kn);
		yaml_line(&b, ": ", cu->kv[i].v, cu->kv[i].vn);
	}
	struct blob *md = answer_render(&b);
	free(buf);
	if (!md)
		return -ENOMEM;
	blob_unref(nc->meta);
	nc->meta = md;
	nc->gen = m->gen;
	return 0;
}

int nocloud_open(struct nocloud *nc, struct instance *in)
{
	memset(nc, 0, sizeof(*nc));
	nc->inst = in;
	struct inst_meta m = inst_meta(in);
	return render(nc, &m);
}

void nocloud_close(struct nocloud *nc)
{
	blob_unref(nc->meta);
	nc->meta = NULL;
}

void nocloud_meta_data(struct call *c)
{
	struct nocloud *nc = c->self;
	struct inst_meta m = inst_meta(nc->inst);
	if (m.gen != nc->gen && render(nc, &m) < 0)
		log_error("meta-data: out of memory, serving the previous answer");
	answer_data(c, "text/yaml", nc->meta);
}

/* cloud-init asks for network-config before user-data from 24.3 on, and
 * never over HTTP before that: a network-config nobody asked for by the
 * first user-data request has no effect on this guest.  Said once. */
static void netcfg_unasked(struct nocloud *nc)
{
	if (nc->netcfg_asked || nc->netcfg_told || !nc->inst->netcfg_given)
		return;
	nc->netcfg_told = 1;
	struct blob *b = inst_network_config(nc->inst);
	if (b && b->len)
		log_info("network-config: configured, but the guest asked for user-data without asking "
			 "for network-config first: it is not applied (cloud-init before 24.3 does not "
			 "fetch network-config over HTTP)");
}

void nocloud_user_data(struct call *c)
{
	struct nocloud *nc = c->self;
	netcfg_unasked(nc);
	answer_data(c, "application/octet-stream", inst_user_data(nc->inst));
}

void nocloud_vendor_data(struct call *c)
{
	struct nocloud *nc = c->self;
	answer_data(c, "application/octet-stream", inst_vendor_data(nc->inst));
}

void nocloud_network_config(struct call *c)
{
	struct nocloud *nc = c->self;
	nc->netcfg_asked = 1;
	answer_data(c, "text/yaml", inst_network_config(nc->inst));
}
