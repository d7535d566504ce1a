/* libFuzzer: nl's reply parser, built from the real nl.c.  The input is a
 * netlink datagram as the kernel (or anything able to write to our
 * socket, were the sender check gone) could deliver it: every message is
 * walked with nl_next and handed to every parser under every message type
 * it could claim, so each parser sees each shape (nf_tables' event parser,
 * nft.c, among them, under each of its message types).  ASan checks that no
 * parser reads past the message's own length: each message is copied to
 * a heap buffer of exactly that size first. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/netfilter/nfnetlink.h>

#include "nft.h"
#include "nl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NFT(t) (uint16_t)((NFNL_SUBSYS_NFTABLES << 8) | (t))
static const uint16_t types[] = {RTM_NEWLINK,           RTM_DELLINK,          RTM_NEWADDR,
				 RTM_NEWROUTE,          RTM_NEWRULE,          RTM_NEWNEIGH,
				 NLMSG_ERROR,           NLMSG_DONE,           NFT(NFT_MSG_NEWTABLE),
				 NFT(NFT_MSG_DELCHAIN), NFT(NFT_MSG_NEWGEN),  NFT(NFT_MSG_DELRULE)};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nl_msgview m;
	size_t off = 0;
	int n = 0;

	while (nl_next(data, size, &off, &m) > 0 && n++ < 64) {
		uint8_t *copy = malloc(m.payload.n ? m.payload.n : 1);
		if (!copy)
			return 0;
		if (m.payload.n)
			memcpy(copy, m.payload.p, m.payload.n);
		for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
			struct nl_msgview v = m;
			struct nl_link l;
			struct nl_addr a;
			struct nl_route r;
			struct nl_rule ru;
			struct nl_neigh nb;
			struct nl_error e;

			v.type = types[t];
			v.payload.p = copy;
			nl_parse_link(&v, &l);
			nl_parse_addr(&v, &a);
			nl_parse_route(&v, &r);
			nl_parse_rule(&v, &ru);
			nl_parse_neigh(&v, &nb);
			{
				struct nft_msg nm;
				if (nft_parse_msg(&v, &nm) == 0 &&
				    (nm.type >= NFT_MSG_MAX || strlen(nm.table) >= sizeof(nm.table)))
					abort();
			}
			if (nl_parse_error(&v, &e) == 0 && e.msg.n) {
				/* the ext-ack span lies inside the message */
				if (e.msg.p < copy || e.msg.p + e.msg.n > copy + m.payload.n)
					abort();
			}
		}
		free(copy);
	}
	return 0;
}
