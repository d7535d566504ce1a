/* tls: OpenSSL 3 under the shared HTTP core, with live certificate reload.
 *
 * Handshakes are non-blocking and happen inside the first reads of a
 * connection, on the process's one event loop.  The certificate and key are
 * re-read when their directory changes: kubelet updates a mounted Secret by
 * swapping a `..data` symlink, which a watch on the files themselves would
 * miss, so the directory is watched (inotify, an fd in the loop).  New
 * handshakes get the new pair; open connections keep theirs; a pair that
 * does not load is refused with a log line and the old one stays. */
#ifndef IMDS_TLS_H
#define IMDS_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "http.h"
#include "loop.h"

struct tls_server;

/* Watches the files' directories and loads the pair if it is there.  A
 * missing pair is not an error (not ready until it appears); a missing
 * directory is.  NULL with a message in err. */
struct tls_server *tls_server_new(struct loop *l, const char *cert_file, const char *key_file,
				  char *err, size_t errlen);
void tls_server_free(struct tls_server *t);

const struct http_transport *tls_server_transport(struct tls_server *t);

/* A certificate is loaded. */
int tls_server_ready(const struct tls_server *t);
/* notAfter of the loaded certificate (unix seconds), 0 when none. */
int64_t tls_server_not_after(const struct tls_server *t);
unsigned tls_server_reloads(const struct tls_server *t);
unsigned tls_server_reload_failures(const struct tls_server *t);
unsigned tls_server_handshake_failures(const struct tls_server *t);

/* Loads a pair into a new context (for tests and start-up checks).
 * 0 or -EINVAL with the OpenSSL reason in err. */
int tls_check_pair(const char *cert_file, const char *key_file, char *err, size_t errlen);

#endif
