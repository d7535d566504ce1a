/* libFuzzer: the Multus network-status reader (netstatus_parse) on any
 * bytes.  Built from the real sources.
 *
 * Input: the document (no NUL termination; an exact-size heap copy).
 *
 * Invariants (abort on violation):
 *  - refused: the table is empty and the message says where;
 *  - accepted: at most NETSTATUS_MAX_NICS interfaces, each name and
 *    interface NUL-terminated within its cap and valid UTF-8, the IPv4 a
 *    dotted quad inet_pton reads;
 *  - the table written back as a document (JSON-escaped) parses to the
 *    same table. */
#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netstatus.h"
#include "sbuf.h"
#include "utf8.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct netstatus a, b;
static char doc[NETSTATUS_MAX_NICS * (NETSTATUS_NAME_MAX + NETSTATUS_IFACE_MAX) * 6 + 4096];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	char *p = malloc(size ? size : 1);
	if (!p)
		abort();
	memcpy(p, data, size);
	char err[128] = "";
	int r = netstatus_parse(p, size, &a, err, sizeof(err));
	free(p);
	if (r < 0) {
		CHECK(a.n == 0 && strstr(err, " at byte "));
		return 0;
	}
	CHECK(r == 0 && a.n <= NETSTATUS_MAX_NICS);
	struct sbuf d = SBUF_INIT(doc, sizeof(doc));
	sbuf_putc(&d, '[');
	for (unsigned i = 0; i < a.n; i++) {
		const struct netstatus_nic *n = &a.nic[i];
		size_t nl = strnlen(n->name, sizeof(n->name)), il = strnlen(n->iface, sizeof(n->iface));
		CHECK(nl <= NETSTATUS_NAME_MAX && il <= NETSTATUS_IFACE_MAX);
		CHECK(utf8_valid(n->name, nl) == 0 && utf8_valid(n->iface, il) == 0);
		unsigned char bin[4];
		CHECK(!n->ipv4[0] || inet_pton(AF_INET, n->ipv4, bin) == 1);
		sbuf_puts(&d, i ? ",{\"name\":\"" : "{\"name\":\"");
		sbuf_json_escape(&d, n->name, nl);
		sbuf_puts(&d, "\",\"interface\":\"");
		sbuf_json_escape(&d, n->iface, il);
		sbuf_putc(&d, '"');
		if (n->has_mac)
			sbuf_printf(&d, ",\"mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\"", n->mac[0], n->mac[1],
				    n->mac[2], n->mac[3], n->mac[4], n->mac[5]);
		if (n->ipv4[0])
			sbuf_printf(&d, ",\"ips\":[\"%s\"]", n->ipv4);
		sbuf_printf(&d, ",\"default\":%s}", n->is_default ? "true" : "false");
	}
	sbuf_putc(&d, ']');
	CHECK(!d.overflow);
	r = netstatus_parse(d.p, d.len, &b, err, sizeof(err));
	CHECK(r == 0 && b.n == a.n);
	for (unsigned i = 0; i < a.n; i++) {
		const struct netstatus_nic *x = &a.nic[i], *y = &b.nic[i];
		CHECK(strcmp(x->name, y->name) == 0 && strcmp(x->iface, y->iface) == 0);
		CHECK(x->has_mac == y->has_mac && (!x->has_mac || memcmp(x->mac, y->mac, 6) == 0));
		CHECK(strcmp(x->ipv4, y->ipv4) == 0 && x->is_default == y->is_default);
	}
	return 0;
}
