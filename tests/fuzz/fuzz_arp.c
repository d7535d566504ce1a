/* libFuzzer: arp's pure half, built from the real arp.c — the frame
 * parser, the classifier and the reply builder on arbitrary frames, the
 * SYN learner's source reader, and the network-status MAC scanner on
 * arbitrary text.  The first byte picks
 * the target: frames come off the wire from the VM, the network-status
 * file from the pod's annotations. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t ip[4] = {169, 254, 169, 254};
	static const uint8_t mac[6] = {0x0e, 0xd6, 0x7d, 0xda, 0x50, 0x41};

	if (size < 1)
		return 0;
	if (data[0] & 2) {
		uint8_t m[6], a[4];
		int r = arp_parse_syn(data + 1, size - 1, m, a);
		if (r != 0 && r != -EBADMSG && r != -EINVAL)
			abort();
		if (r == 0 && !arp_mac_is_unicast(m))
			abort();
	} else if (data[0] & 1) {
		struct arp_pkt p;
		uint8_t out[ARP_FRAME_LEN];
		if (arp_parse(data + 1, size - 1, &p) == 0 && arp_classify(&p, ip) == ARP_ANSWER) {
			if (arp_build_reply(&p, mac, ip, out, sizeof(out)) != ARP_FRAME_LEN)
				abort();
			/* a reply is never itself a request we would answer */
			struct arp_pkt back;
			if (arp_parse(out, sizeof(out), &back) || arp_classify(&back, ip) == ARP_ANSWER)
				abort();
		}
	} else {
		struct arp_macset set = {0};
		int n = arp_scan_macs((const char *)data + 1, size - 1, &set);
		if (n < -ENOSPC || set.n > ARP_MACSET_MAX)
			abort();
		for (unsigned i = 0; i < set.n; i++)
			if (!arp_mac_is_unicast(set.mac[i]) || !arp_macset_has(&set, set.mac[i]))
				abort();
	}
	return 0;
}
