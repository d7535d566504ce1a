/* The state behind tests/fixtures/nft/steer.golden: two served taps
 * (tap0=3, tap1=5), veth-imds-br=6, veth-imds=7, one pod-local address of
 * each family (the pod IP, its /128), no passt.  Shared by test_steer.c and
 * tests/lib/steer_commit.c, which commits it for tests/fixtures/nft/regen.sh. */
#ifndef IMDS_TESTS_STEER_GOLDEN_H
#define IMDS_TESTS_STEER_GOLDEN_H

#include <stdint.h>
#include <string.h>

#include "steer.h"

static inline struct steer_state golden_state(void)
{
	struct steer_state st = {0};
	static const uint8_t ip[4] = {169, 254, 169, 254}, mac[6] = {0x02, 0xa9, 0xfe, 1, 2, 3};
	static const uint8_t local[4] = {10, 244, 1, 5};
	memcpy(st.ip, ip, 4);
	memcpy(st.vmac, mac, 6);
	st.port = 80;
	st.veth = 7;
	st.peer = 6;
	st.ntaps = 2;
	st.taps[0] = (struct steer_tap){"tap0", 3};
	st.taps[1] = (struct steer_tap){"tap1", 5};
	st.nlocal = 1;
	memcpy(st.local[0], local, 4);
	static const uint8_t local6[16] = {0xfd, 0, 0, 0x10, 0x02, 0x44, 0, 1, 0, 0, 0, 0, 0, 0, 0, 5};
	st.nlocal6 = 1;
	memcpy(st.local6[0], local6, 16);
	return st;
}

#endif
