#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

int config_parse_uint(const char *s, unsigned min, unsigned max, unsigned *out)
{
	if (!s || !*s || strlen(s) > 10)
		return -EINVAL;
	unsigned long long v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -EINVAL;
		v = v * 10 + (unsigned)(*p - '0');
	}
	if (v < min || v > max)
		return -EINVAL;
	*out = (unsigned)v;
	return 0;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

/* Identity strings end up in JSON and YAML; both need valid UTF-8 and
 * nothing of ours needs control characters. */
static int identity_ok(const char *name, const char *v, char *err, size_t errlen)
{
	if (!v)
		return 0;
	size_t n = strlen(v);
	if (n > 253 || utf8_valid(v, n) < 0) {
		snprintf(err, errlen, "%s: must be valid UTF-8 of at most 253 bytes", name);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
			snprintf(err, errlen, "%s: control characters are not allowed", name);
			return -EINVAL;
		}
	}
	return 0;
}

/* A key of a Secret (the name of a file in its volume): [-._a-zA-Z0-9],
 * at most 253 bytes, not "." or "..". */
static int secret_key_ok(const char *name, const char *v, char *err, size_t errlen)
{
	size_t n = strlen(v);
	int ok = n <= 253 && strcmp(v, ".") != 0 && strcmp(v, "..") != 0;
	for (size_t i = 0; ok && i < n; i++)
		ok = (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' && v[i] <= 'Z') ||
		     (v[i] >= '0' && v[i] <= '9') || v[i] == '-' || v[i] == '_' || v[i] == '.';
	if (!ok) {
		snprintf(err, errlen, "%s: '%.64s' is not a Secret key ([-._a-zA-Z0-9], at most 253)",
			 name, v);
		return -EINVAL;
	}
	return 0;
}

static int uint_var(const char *name, unsigned min, unsigned max, unsigned *out, const char *want,
		    char *err, size_t errlen)
{
	const char *v = getenv(name);
	if (!v)
		return 0;
	if (config_parse_uint(v, min, max, out) < 0) {
		snprintf(err, errlen, "%s: invalid value '%.40s' (want %s)", name, v, want);
		return -EINVAL;
	}
	return 0;
}

/* The network variables, shared by run and init. */
static int net_vars(struct imds_config *c, char *err, size_t errlen)
{
	const char *ifs = getenv("IMDS_INTERFACES");
	char why[200];

	c->listen_addr = env("IMDS_LISTEN_ADDR") ? env("IMDS_LISTEN_ADDR") : IMDS_DEFAULT_LISTEN;
	c->bridge_name = env("IMDS_BRIDGE_NAME");
	if (c->bridge_name && strlen(c->bridge_name) >= 16) {
		snprintf(err, errlen, "IMDS_BRIDGE_NAME: '%.40s' is longer than an interface name (15)",
			 c->bridge_name);
		return -EINVAL;
	}
	if (ifs) {
		if (ifaces_parse(ifs, strlen(ifs), &c->ifaces, why, sizeof(why)) < 0) {
			snprintf(err, errlen, "IMDS_INTERFACES: %s", why);
			return -EINVAL;
		}
		c->have_ifaces = 1;
	}
	return 0;
}

int config_net_from_env(struct imds_config *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->ns = env("IMDS_NAMESPACE");
	c->vm_name = env("IMDS_VM_NAME");
	if (identity_ok("IMDS_NAMESPACE", c->ns, err, errlen) < 0 ||
	    identity_ok("IMDS_VM_NAME", c->vm_name, err, errlen) < 0)
		return -EINVAL;
	return net_vars(c, err, errlen);
}

int config_from_env(struct imds_config *c, char *err, size_t errlen)
{
	struct http_limits lim = HTTP_LIMITS_DEFAULT;
	memset(c, 0, sizeof(*c));
	lim.max_body = IMDS_MAX_BODY;
	c->limits = lim;
	c->ns = env("IMDS_NAMESPACE");
	c->vm_name = env("IMDS_VM_NAME");
	c->pod_name = env("IMDS_POD_NAME");
	c->sa_name = env("IMDS_SA_NAME");
	c->instance_id = env("IMDS_INSTANCE_ID");
	c->token_path = env("IMDS_TOKEN_PATH") ? env("IMDS_TOKEN_PATH") : IMDS_DEFAULT_TOKEN_PATH;
	c->user_data = getenv("IMDS_USER_DATA");
	c->user_data_file = env("IMDS_USER_DATA_FILE");
	c->vendor_data_file = env("IMDS_VENDOR_DATA_FILE");
	c->network_config_file = env("IMDS_NETWORK_CONFIG_FILE");
	c->network_status_file = env("IMDS_NETWORK_STATUS_FILE");
	c->ssh_keys_dir = env("IMDS_SSH_KEYS_DIR");
	c->meta_data_file = env("IMDS_META_DATA_FILE");
	c->state_dir = env("IMDS_STATE_DIR");
	c->password_key = env("IMDS_PASSWORD_KEY");
	c->instance_type = env("IMDS_INSTANCE_TYPE");
	c->zone = env("IMDS_AVAILABILITY_ZONE");
	c->region = env("IMDS_REGION");
	c->lifecycle_dir = env("IMDS_LIFECYCLE_DIR");
	c->cloud_init = env("IMDS_CLOUD_INIT");
	c->cloud_init_dir = env("IMDS_CLOUD_INIT_DIR");
	c->rate_limit = IMDS_DEFAULT_RATE;
	c->hop_limit = IMDS_DEFAULT_HOP_LIMIT;
	c->busy_poll_us = IMDS_DEFAULT_BUSY_POLL_US;

	if (!c->ns) {
		snprintf(err, errlen, "IMDS_NAMESPACE: required (the VM's namespace)");
		return -EINVAL;
	}
	if (!c->vm_name) {
		snprintf(err, errlen, "IMDS_VM_NAME: required (the VM's name)");
		return -EINVAL;
	}
	if (identity_ok("IMDS_NAMESPACE", c->ns, err, errlen) < 0 ||
	    identity_ok("IMDS_VM_NAME", c->vm_name, err, errlen) < 0 ||
	    identity_ok("IMDS_POD_NAME", c->pod_name, err, errlen) < 0 ||
	    identity_ok("IMDS_SA_NAME", c->sa_name, err, errlen) < 0 ||
	    identity_ok("IMDS_INSTANCE_ID", c->instance_id, err, errlen) < 0 ||
	    identity_ok("IMDS_INSTANCE_TYPE", c->instance_type, err, errlen) < 0 ||
	    identity_ok("IMDS_AVAILABILITY_ZONE", c->zone, err, errlen) < 0 ||
	    identity_ok("IMDS_REGION", c->region, err, errlen) < 0)
		return -EINVAL;
	if (c->password_key && secret_key_ok("IMDS_PASSWORD_KEY", c->password_key, err, errlen) < 0)
		return -EINVAL;
	if (c->password_key && !c->ssh_keys_dir) {
		snprintf(err, errlen, "IMDS_PASSWORD_KEY: names an entry of IMDS_SSH_KEYS_DIR, which is "
				      "not set");
		return -EINVAL;
	}
	if (c->token_path[0] != '/') {
		snprintf(err, errlen, "IMDS_TOKEN_PATH: must be an absolute path, got '%.100s'",
			 c->token_path);
		return -EINVAL;
	}
	const char *sess = env("IMDS_SESSION");
	if (sess && strcmp(sess, "optional") != 0 && strcmp(sess, "required") != 0) {
		snprintf(err, errlen, "IMDS_SESSION: want optional or required, got '%.40s'", sess);
		return -EINVAL;
	}
	c->session_required = sess && strcmp(sess, "required") == 0;
	if (c->state_dir && c->state_dir[0] != '/') {
		snprintf(err, errlen, "IMDS_STATE_DIR: must be an absolute path, got '%.100s'",
			 c->state_dir);
		return -EINVAL;
	}
	if (c->lifecycle_dir && c->lifecycle_dir[0] != '/') {
		snprintf(err, errlen, "IMDS_LIFECYCLE_DIR: must be an absolute path, got '%.100s'",
			 c->lifecycle_dir);
		return -EINVAL;
	}
	if (c->cloud_init_dir && c->cloud_init_dir[0] != '/') {
		snprintf(err, errlen, "IMDS_CLOUD_INIT_DIR: must be an absolute path, got '%.100s'",
			 c->cloud_init_dir);
		return -EINVAL;
	}
	if (net_vars(c, err, errlen) < 0)
		return -EINVAL;
	if (uint_var("IMDS_HOP_LIMIT", 1, 64, &c->hop_limit, "an IP TTL 1..64", err, errlen) < 0 ||
	    uint_var("IMDS_RATE_LIMIT", 0, 1000000, &c->rate_limit,
		     "requests per second 0..1000000, 0 = off", err, errlen) < 0 ||
	    uint_var("IMDS_BUSY_POLL_US", 0, 1000, &c->busy_poll_us,
		     "microseconds 0..1000, 0 = off", err, errlen) < 0 ||
	    uint_var("IMDS_HEADER_TIMEOUT_MS", 10, 600000, &c->limits.header_timeout_ms,
		     "milliseconds 10..600000", err, errlen) < 0 ||
	    uint_var("IMDS_IDLE_TIMEOUT_MS", 10, 3600000, &c->limits.idle_timeout_ms,
		     "milliseconds 10..3600000", err, errlen) < 0 ||
	    uint_var("IMDS_MAX_CONNS", 1, 65536, &c->limits.max_conns, "a count 1..65536", err,
		     errlen) < 0)
		return -EINVAL;
	return 0;
}
