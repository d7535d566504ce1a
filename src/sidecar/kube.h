/* kube: what the guest gets of Kubernetes — its identity (namespace,
 * ServiceAccount, VM, pod, instance id) and the pod's projected
 * ServiceAccount token, re-read from its file on every request (kubelet
 * rotates it), for ?audience=A from <token dir>/<A percent-encoded>/token.
 * The wiring guards both (Metadata: true, no proxies, no-store). */
#ifndef IMDS_KUBE_H
#define IMDS_KUBE_H

#include <stddef.h>

#include "blob.h"
#include "instance.h"

struct kube {
	struct instance *inst;
	struct blob *identity; /* built once */
	char token_dir[4096];
	char *tok;             /* KUBE_TOKEN_MAX + 1: the file's bytes */
	char *body;            /* the answer */
	size_t body_cap;
};

/* Projected service-account tokens are 1-2 KiB; 64 KiB bounds a broken
 * file without ever cutting a real token. */
#define KUBE_TOKEN_MAX 65536

/* 0, or -errno with a message in err. */
int kube_open(struct kube *k, struct instance *in, char *err, size_t errlen);
void kube_close(struct kube *k);

struct call;
/* Handlers; c->self is the struct kube. */
void kube_identity(struct call *c);
void kube_token(struct call *c);

#endif
