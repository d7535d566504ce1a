/* What test_nft.c and test_steer.c share: a decoder of an nf_tables batch
 * into the text `nft --debug=netlink` prints for the same rules (one line
 * per rule, "family table chain", then one "[ expression ]" per line), for
 * the expressions nft.h builds.  Include after cmocka.h. */
#ifndef IMDS_TEST_SIDECAR_NFT_DECODE_H
#define IMDS_TEST_SIDECAR_NFT_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>

#include "nft.h"

#define AL4(x) (((size_t)(x) + 3u) & ~(size_t)3u)

struct attr {
	uint16_t type;
	const uint8_t *p;
	size_t n;
};

/* The attributes in p[0..n) into tb (by type, up to max). */
static inline void attrs(const uint8_t *p, size_t n, struct attr *tb, unsigned max)
{
	memset(tb, 0, sizeof(*tb) * (max + 1));
	while (n >= 4) {
		uint16_t len, type;
		memcpy(&len, p, 2);
		memcpy(&type, p + 2, 2);
		assert_true(len >= 4 && len <= n);
		type &= NLA_TYPE_MASK;
		if (type <= max)
			tb[type] = (struct attr){type, p + 4, len - 4u};
		size_t step = AL4(len);
		if (step > n)
			step = n;
		p += step;
		n -= step;
	}
	assert_int_equal(n, 0);
}

static inline uint32_t be32at(struct attr a)
{
	uint32_t v;
	assert_int_equal(a.n, 4);
	memcpy(&v, a.p, 4);
	return ntohl(v);
}

/* "0x... 0x..." as nft prints register data: 32-bit words, host order. */
static inline void words(char *out, size_t cap, struct attr data)
{
	struct attr tb[NFTA_DATA_MAX + 1];
	size_t at = 0;
	attrs(data.p, data.n, tb, NFTA_DATA_MAX);
	assert_non_null(tb[NFTA_DATA_VALUE].p);
	for (size_t i = 0; i < tb[NFTA_DATA_VALUE].n; i += 4) {
		uint8_t w[4] = {0};
		size_t k = tb[NFTA_DATA_VALUE].n - i < 4 ? tb[NFTA_DATA_VALUE].n - i : 4;
		uint32_t v;
		memcpy(w, tb[NFTA_DATA_VALUE].p + i, k);
		memcpy(&v, w, 4);
		at += (size_t)snprintf(out + at, cap - at, "%s0x%08x", i ? " " : "", v);
	}
}

static inline const char *base_name(uint32_t b)
{
	return b == NFT_PAYLOAD_LL_HEADER ? "link" : b == NFT_PAYLOAD_NETWORK_HEADER ? "network" : "transport";
}

static inline const char *meta_name(uint32_t k)
{
	switch (k) {
	case NFT_META_PROTOCOL: return "protocol";
	case NFT_META_L4PROTO: return "l4proto";
	case NFT_META_IIFNAME: return "iifname";
	case NFT_META_OIFNAME: return "oifname";
	case NFT_META_IIFTYPE: return "iiftype";
	case NFT_META_MARK: return "mark";
	default: return "?";
	}
}

/* One expression as `[ ... ]`. */
static inline void expr_text(struct attr elem, char *out, size_t cap)
{
	struct attr e[NFTA_EXPR_MAX + 1], d[16];
	char name[32], w[128];
	attrs(elem.p, elem.n, e, NFTA_EXPR_MAX);
	assert_non_null(e[NFTA_EXPR_NAME].p);
	snprintf(name, sizeof(name), "%.*s", (int)e[NFTA_EXPR_NAME].n, (const char *)e[NFTA_EXPR_NAME].p);
	attrs(e[NFTA_EXPR_DATA].p, e[NFTA_EXPR_DATA].n, d, 15);
	if (!strcmp(name, "meta") && d[NFTA_META_SREG].p) {
		snprintf(out, cap, "[ meta set %s with reg %u ]", meta_name(be32at(d[NFTA_META_KEY])),
			 be32at(d[NFTA_META_SREG]));
	} else if (!strcmp(name, "meta")) {
		snprintf(out, cap, "[ meta load %s => reg %u ]", meta_name(be32at(d[NFTA_META_KEY])),
			 be32at(d[NFTA_META_DREG]));
	} else if (!strcmp(name, "cmp")) {
		words(w, sizeof(w), d[NFTA_CMP_DATA]);
		snprintf(out, cap, "[ cmp %s reg %u %s ]", be32at(d[NFTA_CMP_OP]) == NFT_CMP_EQ ? "eq" : "neq",
			 be32at(d[NFTA_CMP_SREG]), w);
	} else if (!strcmp(name, "payload") && d[NFTA_PAYLOAD_SREG].p) {
		snprintf(out, cap, "[ payload write reg %u => %ub @ %s header + %u csum_type %u csum_off %u csum_flags 0x%x ]",
			 be32at(d[NFTA_PAYLOAD_SREG]), be32at(d[NFTA_PAYLOAD_LEN]),
			 base_name(be32at(d[NFTA_PAYLOAD_BASE])), be32at(d[NFTA_PAYLOAD_OFFSET]),
			 be32at(d[NFTA_PAYLOAD_CSUM_TYPE]), be32at(d[NFTA_PAYLOAD_CSUM_OFFSET]),
			 d[NFTA_PAYLOAD_CSUM_FLAGS].p ? be32at(d[NFTA_PAYLOAD_CSUM_FLAGS]) : 0);
	} else if (!strcmp(name, "payload")) {
		snprintf(out, cap, "[ payload load %ub @ %s header + %u => reg %u ]", be32at(d[NFTA_PAYLOAD_LEN]),
			 base_name(be32at(d[NFTA_PAYLOAD_BASE])), be32at(d[NFTA_PAYLOAD_OFFSET]),
			 be32at(d[NFTA_PAYLOAD_DREG]));
	} else if (!strcmp(name, "immediate") && be32at(d[NFTA_IMMEDIATE_DREG]) == NFT_REG_VERDICT) {
		struct attr v[NFTA_DATA_MAX + 1], c[NFTA_VERDICT_MAX + 1];
		attrs(d[NFTA_IMMEDIATE_DATA].p, d[NFTA_IMMEDIATE_DATA].n, v, NFTA_DATA_MAX);
		attrs(v[NFTA_DATA_VERDICT].p, v[NFTA_DATA_VERDICT].n, c, NFTA_VERDICT_MAX);
		snprintf(out, cap, "[ immediate reg 0 %s ]",
			 be32at(c[NFTA_VERDICT_CODE]) == NFT_V_DROP ? "drop" : "accept");
	} else if (!strcmp(name, "immediate")) {
		words(w, sizeof(w), d[NFTA_IMMEDIATE_DATA]);
		snprintf(out, cap, "[ immediate reg %u %s ]", be32at(d[NFTA_IMMEDIATE_DREG]), w);
	} else if (!strcmp(name, "fwd")) {
		snprintf(out, cap, "[ fwd sreg_dev %u ]", be32at(d[NFTA_FWD_SREG_DEV]));
	} else if (!strcmp(name, "dup")) {
		snprintf(out, cap, "[ dup sreg_dev %u ]", be32at(d[NFTA_DUP_SREG_DEV]));
	} else if (!strcmp(name, "reject")) {
		snprintf(out, cap, "[ reject type %u code %u ]", be32at(d[NFTA_REJECT_TYPE]),
			 d[NFTA_REJECT_ICMP_CODE].p[0]);
	} else if (!strcmp(name, "counter")) {
		snprintf(out, cap, "[ counter pkts 0 bytes 0 ]");
	} else {
		snprintf(out, cap, "[ %s ]", name);
	}
}

static inline const char *family_name(uint8_t f)
{
	return f == NFT_FAMILY_NETDEV ? "netdev"
	       : f == NFT_FAMILY_IPV4 ? "ip"
	       : f == NFT_FAMILY_IPV6 ? "ip6"
	       : f == NFT_FAMILY_BRIDGE ? "bridge"
				       : "?";
}

/* Every rule of the batch, in nft's debug format, into out. */
static inline size_t decode_rules(const uint8_t *buf, size_t len, char *out, size_t cap)
{
	size_t at = 0;
	for (size_t off = 0; off < len;) {
		struct nlmsghdr h;
		struct nfgenmsg g;
		memcpy(&h, buf + off, sizeof(h));
		memcpy(&g, buf + off + AL4(sizeof(h)), sizeof(g));
		if (h.nlmsg_type == ((NFNL_SUBSYS_NFTABLES << 8) | NFT_MSG_NEWRULE)) {
			struct attr r[NFTA_RULE_MAX + 1];
			size_t hdr = AL4(sizeof(h)) + AL4(sizeof(g));
			attrs(buf + off + hdr, h.nlmsg_len - hdr, r, NFTA_RULE_MAX);
			at += (size_t)snprintf(out + at, cap - at, "%s %.*s %.*s\n", family_name(g.nfgen_family),
					       (int)r[NFTA_RULE_TABLE].n - 1, (const char *)r[NFTA_RULE_TABLE].p,
					       (int)r[NFTA_RULE_CHAIN].n - 1, (const char *)r[NFTA_RULE_CHAIN].p);
			const uint8_t *p = r[NFTA_RULE_EXPRESSIONS].p;
			size_t n = r[NFTA_RULE_EXPRESSIONS].n;
			while (n >= 4) {
				uint16_t alen;
				char line[256];
				memcpy(&alen, p, 2);
				expr_text((struct attr){0, p + 4, alen - 4u}, line, sizeof(line));
				at += (size_t)snprintf(out + at, cap - at, "  %s\n", line);
				size_t step = AL4(alen) < n ? AL4(alen) : n;
				p += step;
				n -= step;
			}
		}
		off += AL4(h.nlmsg_len);
	}
	return at;
}

#endif
