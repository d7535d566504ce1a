/* libFuzzer: ndp's pure half, built from the real ndp.c — the neighbour
 * solicitation parser, the classifier and the advertisement builder on
 * arbitrary frames, and the IPv6 SYN learner's source reader.  The first
 * byte picks the target; the frames are what the VM's steered port hands
 * veth-imds. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arp.h"
#include "ndp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t mac[6] = {0x02, 0xa9, 0xfe, 0x11, 0x22, 0x33};

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		uint8_t m[6], ip[16];
		int r = ndp_parse_syn(data + 1, size - 1, m, ip);
		if (r != 0 && r != -EBADMSG && r != -EINVAL)
			abort();
		if (r == 0 && (!arp_mac_is_unicast(m) || ip[0] == 0xff))
			abort();
		return 0;
	}
	struct ndp_ns ns;
	int r = ndp_parse_ns(data + 1, size - 1, &ns);
	if (r != 0 && r != -EBADMSG && r != -EPROTONOSUPPORT)
		abort();
	if (r != 0 || ndp_classify(&ns, ndp_imds_addr, 2) != NDP_ANSWER)
		return 0;
	uint8_t out[NDP_NA_LEN];
	if (ndp_build_na(&ns, mac, out, sizeof(out)) != NDP_NA_LEN)
		abort();
	/* the answer is an advertisement with a valid checksum, never a
	 * solicitation we would answer, and it says our MAC for the target */
	struct ndp_ns back;
	if (ndp_parse_ns(out, sizeof(out), &back) != -EPROTONOSUPPORT ||
	    ndp_icmp6_csum(out + 22, out + 38, out + 54, 32) != 0 ||
	    memcmp(out + 62, ns.target, 16) != 0 || memcmp(out + 80, mac, 6) != 0)
		abort();
	return 0;
}
