/* steer_commit: commits the ruleset of tests/unit/net/steer_golden.h
 * into the current network namespace, through the sidecar's own nft.c, for
 * tests/fixtures/nft/regen.sh (which lists it and has nft encode the
 * listing: the golden file).  Needs CAP_NET_ADMIN and the golden's
 * ifindexes (regen.sh makes them). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nl.h"
#include "nft.h"
#include "steer.h"
#include "../unit/net/steer_golden.h"

int main(void)
{
	static uint8_t buf[65536];
	struct steer_state st = golden_state();
	struct nft_batch b;
	struct nl_sock s;
	char err[512];

	nl_sock_init(&s);
	if (nft_open(&s, 0, err, sizeof(err))) {
		fprintf(stderr, "steer_commit: %s\n", err);
		return 1;
	}
	nft_batch_init(&b, buf, sizeof(buf), 1);
	if (steer_build(&st, &b) || nft_batch_finish(&b)) {
		fprintf(stderr, "steer_commit: building the ruleset: error %d\n", b.err);
		return 1;
	}
	if (nft_commit(&s, &b, err, sizeof(err))) {
		fprintf(stderr, "steer_commit: %s\n", err);
		return 1;
	}
	return 0;
}
