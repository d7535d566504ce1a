/* k8s_names: the names and values Kubernetes and the sidecar accept, checked
 * before they go into a patch (a pod the API server or the sidecar would
 * refuse is denied at admission, with a message, instead). */
#ifndef IMDS_WH_K8S_NAMES_H
#define IMDS_WH_K8S_NAMES_H

#include <stddef.h>

#include "str.h"

/* 1 when s[0..n) is valid UTF-8. */
int k8s_utf8_ok(const char *s, size_t n);
/* What the sidecar takes for IMDS_VM_NAME and IMDS_INSTANCE_ID: UTF-8 of
 * 1..253 bytes, no control bytes. */
int k8s_identity_ok(struct str s);
/* A Secret or ConfigMap name: a DNS-1123 subdomain. */
int k8s_dns1123_subdomain(struct str s);
/* A key of a Secret or ConfigMap (a file name in its volume):
 * [-._a-zA-Z0-9]{1,253}, not "." or "..". */
int k8s_secret_key_ok(struct str s);
/* A Linux interface name, as the kernel's dev_valid_name() takes it. */
int k8s_ifname_ok(struct str s);

#endif
