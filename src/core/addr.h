/* addr: socket address parsing for listen flags and env settings. */
#ifndef IMDS_ADDR_H
#define IMDS_ADDR_H

#include <stddef.h>
#include <sys/socket.h>

/* "A.B.C.D:PORT", "[V6]:PORT" or ":PORT" (any address, dual-stack).
 * 0 or -EINVAL. */
int addr_parse(const char *s, struct sockaddr_storage *ss, socklen_t *len);
/* "A.B.C.D" or "V6" into buf; returns buf. */
const char *addr_ntop(const struct sockaddr_storage *ss, char *buf, size_t len);

/* The bound address of a socket as "IP:PORT" or "[V6]:PORT" (so a test
 * that listens on port 0 can read the port from the log); returns buf. */
const char *addr_local(int fd, char *buf, size_t len);
/* The IP TTL (IPv4) and unicast hop limit (IPv6, and v4-mapped peers of a
 * dual-stack socket) of what fd sends; a listener passes it on to the
 * connections it accepts, and its SYN-ACKs carry it.  0 or -errno. */
int addr_set_hops(int fd, unsigned hops);

#endif
