/* nft: nf_tables over raw netlink (NETLINK_NETFILTER), only what the
 * sidecar programs: tables, base chains (netdev ingress hooks on a device,
 * ip/bridge hooks), and rules built from a handful of expressions.
 *
 * Why raw netlink and not libnftnl/libmnl: the sidecar ships as one static
 * musl binary on `scratch`; Debian builds libnftnl for glibc only, and the
 * kernel interface we use is small and stable (the same messages `nft
 * --debug=netlink` prints for our rules, see tests/unit/net/test_steer.c; the builder and
 * the socket side on their own: test_nft.c).
 * The rtnetlink half (nl.c) is raw for the same reason.
 *
 * Two halves, as nl.c:
 *  - a pure batch builder (bytes into a caller's buffer, no syscalls): a
 *    transaction is NFNL_MSG_BATCH_BEGIN, the messages, NFNL_MSG_BATCH_END,
 *    and the kernel applies it atomically (packets see the old ruleset or
 *    the new one, never a mix), and a pure parser of the events other
 *    processes' changes emit;
 *  - the socket side: send a batch, collect one ack per message. */
#ifndef IMDS_NFT_H
#define IMDS_NFT_H

#include <stddef.h>
#include <stdint.h>

#include <linux/netfilter/nf_tables.h>

#include "nl.h"

#define NFT_NAMESIZ 32 /* our table and chain names are short */

/* From <linux/netfilter.h>, which pulls in <linux/in.h> and fights libc's
 * <netinet/in.h> (glibc and musl alike): the few values we use. */
enum {
	NFT_V_DROP = 0,   /* NF_DROP */
	NFT_V_ACCEPT = 1, /* NF_ACCEPT */
};
enum {
	NFT_FAMILY_INET = 1,    /* NFPROTO_INET */
	NFT_FAMILY_IPV4 = 2,    /* NFPROTO_IPV4 */
	NFT_FAMILY_NETDEV = 5,  /* NFPROTO_NETDEV */
	NFT_FAMILY_BRIDGE = 7,  /* NFPROTO_BRIDGE */
	NFT_FAMILY_IPV6 = 10,   /* NFPROTO_IPV6 */
};
enum {
	NFT_HOOK_PREROUTING = 0, /* NF_INET_PRE_ROUTING, NF_BR_PRE_ROUTING */
	NFT_HOOK_INPUT = 1,      /* NF_INET_LOCAL_IN, NF_BR_LOCAL_IN */
	NFT_HOOK_FORWARD = 2,    /* NF_INET_FORWARD, NF_BR_FORWARD */
	NFT_HOOK_OUTPUT = 3,     /* NF_INET_LOCAL_OUT, NF_BR_LOCAL_OUT */
	NFT_HOOK_POSTROUTING = 4,
	NFT_HOOK_INGRESS = 0,    /* NF_NETDEV_INGRESS */
};

/* ---- the pure batch builder ------------------------------------------- */

struct nft_batch {
	uint8_t *buf;
	size_t cap, len;
	uint32_t seq0;        /* sequence number of BATCH_BEGIN */
	uint32_t seq;         /* the next one */
	unsigned nacks;       /* messages that ask for an ack */
	int err;              /* sticky: -EMSGSIZE, -EINVAL (misuse) */
	size_t rule;          /* offset of the rule being built, 0: none */
	size_t exprs;         /* offset of its NFTA_RULE_EXPRESSIONS nest */
};

/* Starts a transaction in buf[0..cap) with BATCH_BEGIN as sequence seq. */
void nft_batch_init(struct nft_batch *b, uint8_t *buf, size_t cap, uint32_t seq);
/* Adds BATCH_END.  0, or the first error any step met. */
int nft_batch_finish(struct nft_batch *b);

/* NFT_MSG_NEWTABLE (create if absent: no NLM_F_EXCL) / NFT_MSG_DELTABLE. */
void nft_add_table(struct nft_batch *b, uint8_t family, const char *table);
void nft_del_table(struct nft_batch *b, uint8_t family, const char *table);
/* A base chain of type filter on hook at prio; dev names the device of a
 * netdev ingress hook (NULL for other families); policy NF_ACCEPT/NF_DROP. */
void nft_add_chain(struct nft_batch *b, uint8_t family, const char *table, const char *chain,
		   unsigned hook, int32_t prio, const char *dev, unsigned policy);

/* A rule appended to chain: begin, expressions, end. */
void nft_rule_begin(struct nft_batch *b, uint8_t family, const char *table, const char *chain);
void nft_rule_end(struct nft_batch *b);

/* Expressions (registers: NFT_REG_VERDICT or NFT_REG_1..4). */
void nft_e_meta(struct nft_batch *b, uint32_t key, uint32_t dreg);
void nft_e_meta_set(struct nft_batch *b, uint32_t key, uint32_t sreg); /* meta KEY set sreg */
void nft_e_cmp(struct nft_batch *b, uint32_t sreg, uint32_t op, const void *data, size_t len);
void nft_e_payload(struct nft_batch *b, uint32_t base, uint32_t off, uint32_t len, uint32_t dreg);
void nft_e_payload_set(struct nft_batch *b, uint32_t base, uint32_t off, uint32_t len,
		       uint32_t sreg, uint32_t csum_type, uint32_t csum_off, uint32_t csum_flags);
void nft_e_imm(struct nft_batch *b, uint32_t dreg, const void *data, size_t len);
void nft_e_verdict(struct nft_batch *b, int32_t code); /* NF_DROP, NF_ACCEPT, ... */
void nft_e_fwd(struct nft_batch *b, uint32_t sreg_dev);
void nft_e_dup(struct nft_batch *b, uint32_t sreg_dev);
void nft_e_notrack(struct nft_batch *b);
void nft_e_reject(struct nft_batch *b, uint32_t type, uint8_t code);
void nft_e_counter(struct nft_batch *b);

/* The 16 bytes meta iifname/oifname compare against (NUL-padded). */
void nft_ifname(uint8_t out[16], const char *name);

/* ---- the pure event parser ------------------------------------------- */

/* One nf_tables message (an event another process's change emitted, or a
 * reply): its NFT_MSG_* type, family, and the table it concerns. */
struct nft_msg {
	unsigned type;  /* NFT_MSG_*; NFT_MSG_MAX when not an nf_tables message */
	uint8_t family;
	char table[NFT_NAMESIZ]; /* "" when the message names none */
};
/* 0; -ENOMSG when m is not an nf_tables message; -EBADMSG when it is but
 * malformed.  A table name longer than NFT_NAMESIZ-1 is cut (it is not
 * ours then anyway, ours are shorter). */
int nft_parse_msg(const struct nl_msgview *m, struct nft_msg *out);

/* ---- sockets ----------------------------------------------------------- */

/* A NETLINK_NETFILTER socket: with events, non-blocking and subscribed to
 * NFNLGRP_NFTABLES; without, a blocking request socket (5 s timeout). */
int nft_open(struct nl_sock *s, int events, char *err, size_t errlen);
/* Sends the finished batch and collects its acks: 0, or the first error
 * with the kernel's text in err (the whole transaction is then void). */
int nft_commit(struct nl_sock *s, struct nft_batch *b, char *err, size_t errlen);

#endif
