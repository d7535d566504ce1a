#include "k8s_names.h"

#include "utf8.h"

int k8s_utf8_ok(const char *s, size_t n)
{
	return utf8_valid(s, n) == 0;
}

/* What the sidecar accepts for IMDS_VM_NAME and IMDS_INSTANCE_ID
 * (src/core/config.c): UTF-8, at most 253 bytes, no control bytes. */
int k8s_identity_ok(struct str s)
{
	if (s.n == 0 || s.n > 253 || !k8s_utf8_ok(s.p, s.n))
		return 0;
	for (size_t i = 0; i < s.n; i++)
		if ((unsigned char)s.p[i] < 0x20 || s.p[i] == 0x7f)
			return 0;
	return 1;
}

/* A Secret or ConfigMap name: a DNS-1123 subdomain. */
int k8s_dns1123_subdomain(struct str s)
{
	if (s.n == 0 || s.n > 253)
		return 0;
	size_t label = 0;
	for (size_t i = 0; i < s.n; i++) {
		char c = s.p[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (c == '.') {
			if (label == 0 || s.p[i - 1] == '-')
				return 0;
			label = 0;
			continue;
		}
		if (!alnum && c != '-')
			return 0;
		if (c == '-' && label == 0)
			return 0;
		label++;
	}
	return label > 0 && s.p[s.n - 1] != '-';
}

/* A Linux interface name, as dev_valid_name() takes it. */
int k8s_ifname_ok(struct str s)
{
	if (s.n == 0 || s.n > 15 || str_is(s, ".") || str_is(s, ".."))
		return 0;
	for (size_t i = 0; i < s.n; i++) {
		unsigned char c = (unsigned char)s.p[i];
		if (c <= 0x20 || c == 0x7f || c == '/' || c == ':')
			return 0;
	}
	return 1;
}

/* A key of a Secret or ConfigMap (apimachinery's IsConfigMapKey). */
int k8s_secret_key_ok(struct str s)
{
	if (s.n == 0 || s.n > 253 || str_is(s, ".") || str_is(s, ".."))
		return 0;
	for (size_t i = 0; i < s.n; i++) {
		char c = s.p[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
		      c == '_' || c == '.'))
			return 0;
	}
	return 1;
}
