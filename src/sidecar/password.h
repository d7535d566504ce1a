/* password: the guest's encrypted administrator password (Nova's
 * semantics, what cloudbase-init uses on Windows).
 *
 * The guest posts the password it generated, encrypted to an SSH key of
 * the instance and base64-encoded; it is stored once (409 after that), in
 * IMDS_STATE_DIR when there is one (written whole: a temporary file, fsync,
 * rename), so a restarted sidecar still has it, and written to the log once
 * for the owner of the private key.  GET answers the stored bytes. */
#ifndef IMDS_PASSWORD_H
#define IMDS_PASSWORD_H

#include <stddef.h>

#include "blob.h"

/* The most a guest may POST (Nova's limit is close: four 255-byte
 * chunks); more gets 400. */
#define PASSWORD_MAX 1024

struct password {
	char path[4096];   /* IMDS_STATE_DIR/password; "" without a state dir */
	struct blob *pw;   /* NULL: none stored yet */
};

/* Reads a stored password from state_dir (NULL: memory only).  0, or
 * -errno with a message naming IMDS_STATE_DIR. */
int password_open(struct password *p, const char *state_dir, char *err, size_t errlen);
void password_close(struct password *p);

struct call;
/* GET, HEAD: the stored bytes (200, empty when none); POST: store the body
 * once (400 for a bad one, 403 through a proxy, 409 when one is stored, 500
 * when it cannot be written).  Always Cache-Control: no-store.  c->self is
 * the struct password. */
void password_serve(struct call *c);

#endif
