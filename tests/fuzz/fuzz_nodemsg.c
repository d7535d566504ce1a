/* libFuzzer: imds-node's message reader (src/core/nodemsg.c), which the
 * agent runs on whatever a pod's socket sends and the sidecar on what comes
 * back: any bytes give a message or an error naming the line; a message
 * read is written back byte for byte (the reader takes only the writer's
 * form), and its fields are in their bounds. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nodemsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct nodemsg m;
	static char back[NODEMSG_MAX + 1];
	char err[200];
	int r = nodemsg_decode((const char *)data, size, &m, err, sizeof(err));
	if (r != 0 && r != -EINVAL && r != -EPROTO)
		abort();
	if (r) {
		if (!err[0] || strlen(err) >= sizeof(err))
			abort();
		return 0;
	}
	if (m.type < NODEMSG_CONFIG || m.type > NODEMSG_SERVING)
		abort();
	if (m.type == NODEMSG_CONFIG && (m.port < 1 || m.port > 65535 || m.hops < 1 || m.hops > 64))
		abort();
	if (m.type == NODEMSG_LISTENERS && (m.nfds < 1 || m.nfds > NODEMSG_FDS_MAX))
		abort();
	int n = nodemsg_encode(&m, back, sizeof(back));
	if (n < 0 || (size_t)n != size || memcmp(back, data, size) != 0)
		abort();
	return 0;
}
