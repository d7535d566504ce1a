#include "nft.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <linux/netfilter/nfnetlink.h>

#define AL4(x) (((size_t)(x) + 3u) & ~(size_t)3u)
#define MSGHDR (AL4(sizeof(struct nlmsghdr)) + AL4(sizeof(struct nfgenmsg)))

static void seterr(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* ---- the pure batch builder ------------------------------------------- */

static struct nlmsghdr *at(struct nft_batch *b, size_t off)
{
	return (struct nlmsghdr *)(void *)(b->buf + off);
}

/* Opens a message at the end of the batch; its offset, or 0 on error
 * (offset 0 is BATCH_BEGIN's, never one we return). */
static size_t msg_open(struct nft_batch *b, uint16_t type, uint16_t flags, uint8_t family,
		       uint16_t res_id)
{
	size_t off = AL4(b->len);
	struct nlmsghdr h = {0};
	struct nfgenmsg g = {.nfgen_family = family, .version = NFNETLINK_V0,
			     .res_id = htons(res_id)};

	if (b->err)
		return 0;
	if (off > b->cap || b->cap - off < MSGHDR) {
		b->err = -EMSGSIZE;
		return 0;
	}
	h.nlmsg_len = (uint32_t)MSGHDR;
	h.nlmsg_type = type;
	h.nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags);
	h.nlmsg_seq = b->seq++;
	memset(b->buf + off, 0, MSGHDR);
	memcpy(b->buf + off, &h, sizeof(h));
	memcpy(b->buf + off + AL4(sizeof(h)), &g, sizeof(g));
	if (flags & NLM_F_ACK)
		b->nacks++;
	return off;
}

static void msg_close(struct nft_batch *b, size_t off)
{
	if (!b->err)
		b->len = off + AL4(at(b, off)->nlmsg_len);
}

/* Attribute helpers on the message at off (maxlen: what is left). */
static void put(struct nft_batch *b, size_t off, uint16_t type, const void *data, size_t len)
{
	if (!b->err && nl_attr_put(at(b, off), b->cap - off, type, data, len))
		b->err = -EMSGSIZE;
}

static void put_str(struct nft_batch *b, size_t off, uint16_t type, const char *s)
{
	put(b, off, type, s, strlen(s) + 1);
}

static void put_be32(struct nft_batch *b, size_t off, uint16_t type, uint32_t v)
{
	uint32_t be = htonl(v);
	put(b, off, type, &be, sizeof(be));
}

/* A nest, as an offset from the message start (pointers would not survive
 * a failed put, and the buffer is the caller's). */
static size_t nest_begin(struct nft_batch *b, size_t off, uint16_t type)
{
	struct rtattr *n;
	if (b->err)
		return 0;
	n = nl_nest_begin(at(b, off), b->cap - off, type);
	if (!n) {
		b->err = -EMSGSIZE;
		return 0;
	}
	return (size_t)((uint8_t *)n - b->buf);
}

static void nest_end(struct nft_batch *b, size_t off, size_t nest)
{
	if (!b->err)
		nl_nest_end(at(b, off), (struct rtattr *)(void *)(b->buf + nest));
}

static void batch_mark(struct nft_batch *b, uint16_t type)
{
	size_t off = msg_open(b, type, 0, AF_UNSPEC, NFNL_SUBSYS_NFTABLES);
	msg_close(b, off);
}

void nft_batch_init(struct nft_batch *b, uint8_t *buf, size_t cap, uint32_t seq)
{
	memset(b, 0, sizeof(*b));
	b->buf = buf;
	b->cap = cap;
	b->seq0 = seq;
	b->seq = seq;
	batch_mark(b, NFNL_MSG_BATCH_BEGIN);
}

int nft_batch_finish(struct nft_batch *b)
{
	if (b->rule && !b->err)
		b->err = -EINVAL; /* a rule left open */
	batch_mark(b, NFNL_MSG_BATCH_END);
	return b->err;
}

static uint16_t nft_type(unsigned msg)
{
	return (uint16_t)((NFNL_SUBSYS_NFTABLES << 8) | msg);
}

void nft_add_table(struct nft_batch *b, uint8_t family, const char *table)
{
	size_t off = msg_open(b, nft_type(NFT_MSG_NEWTABLE), NLM_F_CREATE | NLM_F_ACK, family, 0);
	if (!off)
		return;
	put_str(b, off, NFTA_TABLE_NAME, table);
	put_be32(b, off, NFTA_TABLE_FLAGS, 0);
	msg_close(b, off);
}

void nft_del_table(struct nft_batch *b, uint8_t family, const char *table)
{
	size_t off = msg_open(b, nft_type(NFT_MSG_DELTABLE), NLM_F_ACK, family, 0);
	if (!off)
		return;
	put_str(b, off, NFTA_TABLE_NAME, table);
	msg_close(b, off);
}

void nft_add_chain(struct nft_batch *b, uint8_t family, const char *table, const char *chain,
		   unsigned hook, int32_t prio, const char *dev, unsigned policy)
{
	size_t off = msg_open(b, nft_type(NFT_MSG_NEWCHAIN), NLM_F_CREATE | NLM_F_ACK, family, 0);
	size_t h;
	if (!off)
		return;
	put_str(b, off, NFTA_CHAIN_TABLE, table);
	put_str(b, off, NFTA_CHAIN_NAME, chain);
	h = nest_begin(b, off, NFTA_CHAIN_HOOK);
	put_be32(b, off, NFTA_HOOK_HOOKNUM, hook);
	put_be32(b, off, NFTA_HOOK_PRIORITY, (uint32_t)prio);
	if (dev)
		put_str(b, off, NFTA_HOOK_DEV, dev);
	nest_end(b, off, h);
	put_be32(b, off, NFTA_CHAIN_POLICY, policy);
	put_str(b, off, NFTA_CHAIN_TYPE, "filter");
	msg_close(b, off);
}

void nft_rule_begin(struct nft_batch *b, uint8_t family, const char *table, const char *chain)
{
	size_t off;
	if (b->rule) {
		b->err = b->err ? b->err : -EINVAL;
		return;
	}
	off = msg_open(b, nft_type(NFT_MSG_NEWRULE), NLM_F_CREATE | NLM_F_APPEND | NLM_F_ACK,
		       family, 0);
	if (!off)
		return;
	put_str(b, off, NFTA_RULE_TABLE, table);
	put_str(b, off, NFTA_RULE_CHAIN, chain);
	b->rule = off;
	b->exprs = nest_begin(b, off, NFTA_RULE_EXPRESSIONS);
}

void nft_rule_end(struct nft_batch *b)
{
	if (!b->rule) {
		b->err = b->err ? b->err : -EINVAL;
		return;
	}
	nest_end(b, b->rule, b->exprs);
	msg_close(b, b->rule);
	b->rule = 0;
	b->exprs = 0;
}

/* One NFTA_LIST_ELEM { NFTA_EXPR_NAME, NFTA_EXPR_DATA { ... } } of the
 * open rule; returns the data nest's offset (0 when the expression takes
 * no data, or on error: expr_end copes with both). */
struct expr {
	size_t elem, data;
};

static struct expr expr_begin(struct nft_batch *b, const char *name, int has_data)
{
	struct expr e = {0, 0};
	if (!b->rule) {
		b->err = b->err ? b->err : -EINVAL;
		return e;
	}
	e.elem = nest_begin(b, b->rule, NFTA_LIST_ELEM);
	put_str(b, b->rule, NFTA_EXPR_NAME, name);
	if (has_data)
		e.data = nest_begin(b, b->rule, NFTA_EXPR_DATA);
	return e;
}

static void expr_end(struct nft_batch *b, struct expr e)
{
	if (!b->rule)
		return;
	if (e.data)
		nest_end(b, b->rule, e.data);
	if (e.elem)
		nest_end(b, b->rule, e.elem);
}

/* NFTA_DATA_VALUE inside a nest of type attr. */
static void put_value(struct nft_batch *b, uint16_t attr, const void *data, size_t len)
{
	size_t n = nest_begin(b, b->rule, attr);
	put(b, b->rule, NFTA_DATA_VALUE, data, len);
	nest_end(b, b->rule, n);
}

void nft_e_meta(struct nft_batch *b, uint32_t key, uint32_t dreg)
{
	struct expr e = expr_begin(b, "meta", 1);
	put_be32(b, b->rule, NFTA_META_KEY, key);
	put_be32(b, b->rule, NFTA_META_DREG, dreg);
	expr_end(b, e);
}

void nft_e_meta_set(struct nft_batch *b, uint32_t key, uint32_t sreg)
{
	struct expr e = expr_begin(b, "meta", 1);
	put_be32(b, b->rule, NFTA_META_KEY, key);
	put_be32(b, b->rule, NFTA_META_SREG, sreg);
	expr_end(b, e);
}

void nft_e_cmp(struct nft_batch *b, uint32_t sreg, uint32_t op, const void *data, size_t len)
{
	struct expr e = expr_begin(b, "cmp", 1);
	put_be32(b, b->rule, NFTA_CMP_SREG, sreg);
	put_be32(b, b->rule, NFTA_CMP_OP, op);
	put_value(b, NFTA_CMP_DATA, data, len);
	expr_end(b, e);
}

void nft_e_payload(struct nft_batch *b, uint32_t base, uint32_t off, uint32_t len, uint32_t dreg)
{
	struct expr e = expr_begin(b, "payload", 1);
	put_be32(b, b->rule, NFTA_PAYLOAD_DREG, dreg);
	put_be32(b, b->rule, NFTA_PAYLOAD_BASE, base);
	put_be32(b, b->rule, NFTA_PAYLOAD_OFFSET, off);
	put_be32(b, b->rule, NFTA_PAYLOAD_LEN, len);
	expr_end(b, e);
}

void nft_e_payload_set(struct nft_batch *b, uint32_t base, uint32_t off, uint32_t len,
		       uint32_t sreg, uint32_t csum_type, uint32_t csum_off, uint32_t csum_flags)
{
	struct expr e = expr_begin(b, "payload", 1);
	put_be32(b, b->rule, NFTA_PAYLOAD_SREG, sreg);
	put_be32(b, b->rule, NFTA_PAYLOAD_BASE, base);
	put_be32(b, b->rule, NFTA_PAYLOAD_OFFSET, off);
	put_be32(b, b->rule, NFTA_PAYLOAD_LEN, len);
	put_be32(b, b->rule, NFTA_PAYLOAD_CSUM_TYPE, csum_type);
	put_be32(b, b->rule, NFTA_PAYLOAD_CSUM_OFFSET, csum_off);
	if (csum_flags)
		put_be32(b, b->rule, NFTA_PAYLOAD_CSUM_FLAGS, csum_flags);
	expr_end(b, e);
}

void nft_e_imm(struct nft_batch *b, uint32_t dreg, const void *data, size_t len)
{
	struct expr e = expr_begin(b, "immediate", 1);
	put_be32(b, b->rule, NFTA_IMMEDIATE_DREG, dreg);
	put_value(b, NFTA_IMMEDIATE_DATA, data, len);
	expr_end(b, e);
}

void nft_e_verdict(struct nft_batch *b, int32_t code)
{
	struct expr e = expr_begin(b, "immediate", 1);
	size_t d, v;
	put_be32(b, b->rule, NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT);
	d = nest_begin(b, b->rule, NFTA_IMMEDIATE_DATA);
	v = nest_begin(b, b->rule, NFTA_DATA_VERDICT);
	put_be32(b, b->rule, NFTA_VERDICT_CODE, (uint32_t)code);
	nest_end(b, b->rule, v);
	nest_end(b, b->rule, d);
	expr_end(b, e);
}

void nft_e_fwd(struct nft_batch *b, uint32_t sreg_dev)
{
	struct expr e = expr_begin(b, "fwd", 1);
	put_be32(b, b->rule, NFTA_FWD_SREG_DEV, sreg_dev);
	expr_end(b, e);
}

void nft_e_dup(struct nft_batch *b, uint32_t sreg_dev)
{
	struct expr e = expr_begin(b, "dup", 1);
	put_be32(b, b->rule, NFTA_DUP_SREG_DEV, sreg_dev);
	expr_end(b, e);
}

void nft_e_notrack(struct nft_batch *b)
{
	expr_end(b, expr_begin(b, "notrack", 0));
}

void nft_e_reject(struct nft_batch *b, uint32_t type, uint8_t code)
{
	struct expr e = expr_begin(b, "reject", 1);
	put_be32(b, b->rule, NFTA_REJECT_TYPE, type);
	put(b, b->rule, NFTA_REJECT_ICMP_CODE, &code, 1);
	expr_end(b, e);
}

void nft_e_counter(struct nft_batch *b)
{
	expr_end(b, expr_begin(b, "counter", 0));
}

void nft_ifname(uint8_t out[16], const char *name)
{
	size_t n = strnlen(name, 15);
	memset(out, 0, 16);
	memcpy(out, name, n);
}

/* ---- the pure event parser ------------------------------------------- */

int nft_parse_msg(const struct nl_msgview *m, struct nft_msg *out)
{
	struct nfgenmsg g;
	const uint8_t *p;
	size_t n;

	memset(out, 0, sizeof(*out));
	out->type = NFT_MSG_MAX;
	if ((m->type >> 8) != NFNL_SUBSYS_NFTABLES)
		return -ENOMSG;
	if (m->payload.n < sizeof(g))
		return -EBADMSG;
	memcpy(&g, m->payload.p, sizeof(g));
	out->type = m->type & 0xffu;
	out->family = g.nfgen_family;
	if (out->type == NFT_MSG_NEWGEN)
		return 0; /* its attribute 1 is the generation id */
	p = m->payload.p + AL4(sizeof(g));
	n = m->payload.n > AL4(sizeof(g)) ? m->payload.n - AL4(sizeof(g)) : 0;
	/* Attribute 1 names the table in every message kind that has one
	 * (NFTA_TABLE_NAME, NFTA_CHAIN_TABLE, NFTA_RULE_TABLE, NFTA_SET_TABLE,
	 * NFTA_SET_ELEM_LIST_TABLE, NFTA_OBJ_TABLE, NFTA_FLOWTABLE_TABLE). */
	while (n >= 4) {
		struct rtattr a;
		memcpy(&a, p, sizeof(a));
		if (a.rta_len < 4 || a.rta_len > n)
			return -EBADMSG;
		if ((a.rta_type & NLA_TYPE_MASK) == 1) {
			size_t len = a.rta_len - 4u;
			const uint8_t *s = p + 4;
			const uint8_t *nul = memchr(s, 0, len);
			if (nul)
				len = (size_t)(nul - s);
			if (len >= sizeof(out->table))
				len = sizeof(out->table) - 1;
			memcpy(out->table, s, len);
			out->table[len] = '\0';
		}
		size_t step = AL4(a.rta_len);
		if (step >= n)
			break;
		p += step;
		n -= step;
	}
	return 0;
}

/* ---- sockets ----------------------------------------------------------- */

int nft_open(struct nl_sock *s, int events, char *err, size_t errlen)
{
	static const unsigned groups[] = {NFNLGRP_NFTABLES};
	return nl_open_proto(s, NETLINK_NETFILTER, events ? groups : NULL, events ? 1 : 0, err,
			     errlen);
}

int nft_commit(struct nl_sock *s, struct nft_batch *b, char *err, size_t errlen)
{
	uint8_t buf[8192];
	unsigned acked = 0;
	int first = 0, ret;

	seterr(err, errlen, "%s", "");
	if (b->err)
		return b->err;
	/* Our numbering, from the socket's: replies to an earlier process's
	 * batch on a recycled port id cannot match. */
	for (size_t off = 0; off < b->len;) {
		struct nlmsghdr *h = at(b, off);
		h->nlmsg_seq = h->nlmsg_seq - b->seq0 + s->seq + 1;
		off += AL4(h->nlmsg_len);
	}
	uint32_t lo = s->seq + 1, hi = s->seq + (b->seq - b->seq0);
	s->seq = hi;
	if ((ret = nl_send_raw(s, b->buf, b->len)))
		return ret;
	while (acked < b->nacks) {
		size_t len = 0, off = 0;
		struct nl_msgview m;
		if ((ret = nl_recv(s, buf, sizeof(buf), &len)))
			return ret == -EAGAIN ? -ETIMEDOUT : ret;
		while ((ret = nl_next(buf, len, &off, &m)) > 0) {
			struct nl_error e;
			if (m.type != NLMSG_ERROR || m.seq < lo || m.seq > hi || m.portid != s->portid)
				continue;
			if ((ret = nl_parse_error(&m, &e)))
				return ret;
			acked++;
			if (e.error && !first) {
				first = e.error;
				if (e.msg.n)
					seterr(err, errlen, "%.*s", (int)e.msg.n, (const char *)e.msg.p);
			}
			/* An error on BATCH_BEGIN (no permission, no nf_tables)
			 * is the only answer the batch gets. */
			if (e.error && m.seq == lo)
				return first;
		}
		if (ret < 0)
			return ret;
	}
	return first;
}
