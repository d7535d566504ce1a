/* After a test closes its end of a connection: wait, bounded, for the
 * server to drop its end.
 *
 * close() hangs a socket up at once only when it drops the last reference
 * to the socket's file.  Any other holder defers the hangup to the moment
 * that holder lets go: a fork's copy, a dup, or another process looking at
 * /proc/PID/fd (readlink there takes a reference to the file for the time
 * of the call; process monitors, `ss -p` and `lsof` do it).  Under such a
 * reader the server's EPOLLHUP arrives a little after close() returned, so
 * a harness that drains the loop without waiting sees the connection still
 * counted although nothing is wrong (issue 19: fuzz_http aborted once in
 * ~10 CPU-hours, and within seconds with a readlink loop beside it).
 *
 * Returns the connections still counted after timeout_ms: 0 is the
 * invariant, anything else a connection that outlived its peer. */
#ifndef IMDS_TESTS_PEER_CLOSE_H
#define IMDS_TESTS_PEER_CLOSE_H

#include <time.h>

#include "http.h"
#include "loop.h"

static inline long peer_close_ms_since(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000L + (t.tv_nsec - t0->tv_nsec) / 1000000L;
}

static inline unsigned drain_after_peer_close(struct loop *loop, struct http_server *srv,
					      long timeout_ms)
{
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* what is queued already, without waiting */
	while (loop_once(loop, 0) > 0)
		;
	while (http_server_conn_count(srv) != 0 && peer_close_ms_since(&t0) < timeout_ms)
		loop_once(loop, 10);
	return http_server_conn_count(srv);
}

#endif
