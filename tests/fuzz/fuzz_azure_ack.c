/* libFuzzer: Azure's acknowledgement body (events.c ev_azure_parse_ack) on
 * arbitrary bytes, the one guest body the lifecycle events parse.
 *
 * Invariants (abort on violation):
 *  - it returns 0 or -1; on -1 the message is non-empty;
 *  - on 0 there are at most EV_ACK_MAX ids, each a span inside the input of
 *    printable ASCII without '"' or '\', and a body written back from them
 *    parses to the same ids. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "events.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data;
	struct ev_ack a, b;
	char err[160] = "";
	int rc = ev_azure_parse_ack(p, size, &a, err, sizeof(err));
	CHECK(rc == 0 || rc == -1);
	if (rc < 0) {
		CHECK(err[0] != '\0');
		return 0;
	}
	CHECK(a.n <= EV_ACK_MAX);
	static char again[EV_ACK_MAX * 4200 + 64];
	size_t o = (size_t)snprintf(again, sizeof(again), "{\"StartRequests\":[");
	for (unsigned i = 0; i < a.n; i++) {
		CHECK(a.id[i] >= p && a.id[i] + a.idn[i] <= p + size);
		for (size_t k = 0; k < a.idn[i]; k++) {
			unsigned char ch = (unsigned char)a.id[i][k];
			CHECK(ch >= 0x20 && ch <= 0x7e && ch != '"' && ch != '\\');
		}
		if (a.idn[i] > 4096)
			return 0; /* past what the body limit lets in anyway */
		o += (size_t)snprintf(again + o, sizeof(again) - o, "%s{\"EventId\":\"%.*s\"}",
				      i ? "," : "", (int)a.idn[i], a.id[i]);
	}
	o += (size_t)snprintf(again + o, sizeof(again) - o, "]}");
	CHECK(o < sizeof(again));
	CHECK(ev_azure_parse_ack(again, o, &b, err, sizeof(err)) == 0);
	CHECK(b.n == a.n);
	for (unsigned i = 0; i < a.n; i++)
		CHECK(b.idn[i] == a.idn[i] && memcmp(b.id[i], a.id[i], a.idn[i]) == 0);
	return 0;
}
