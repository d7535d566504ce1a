#include "nodemsg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *const type_names[] = {
	[NODEMSG_CONFIG] = "config",
	[NODEMSG_GUARD] = "guard",
	[NODEMSG_LISTENERS] = "listeners",
	[NODEMSG_REFUSED] = "refused",
	[NODEMSG_SERVING] = "serving",
};

const char *nodemsg_type_name(enum nodemsg_type t)
{
	return t >= NODEMSG_CONFIG && t <= NODEMSG_SERVING ? type_names[t] : "?";
}

/* ---- field checks (the writer and the reader use the same) --------------- */

static int dns_ok(const char *s, size_t n, size_t max, int dots)
{
	if (n < 1 || n > max)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || (dots && c == '.')))
			return 0;
	}
	return 1;
}

/* printable ASCII; with space or without */
static int text_ok(const char *s, size_t n, size_t min, size_t max, int space)
{
	if (n < min || n > max)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (s[i] < (space ? 0x20 : 0x21) || s[i] > 0x7e)
			return 0;
	return 1;
}

static int bridge_ok(const char *s, size_t n)
{
	if (!text_ok(s, n, 1, NODEMSG_BRIDGE_MAX, 0))
		return 0;
	return memchr(s, '/', n) == NULL;
}

/* ---- the writer ---------------------------------------------------------- */

int nodemsg_encode(const struct nodemsg *m, char *out, size_t cap)
{
	int n;

	switch (m->type) {
	case NODEMSG_CONFIG:
		if (!dns_ok(m->ns, strlen(m->ns), NODEMSG_NS_MAX, 0) ||
		    !dns_ok(m->name, strlen(m->name), NODEMSG_NAME_MAX, 1) || m->port < 1 ||
		    m->port > 65535 || m->hops < 1 || m->hops > 64 ||
		    (m->have_bridge && !bridge_ok(m->bridge, strlen(m->bridge))) ||
		    (m->have_ifaces && !text_ok(m->ifaces, strlen(m->ifaces), 0, IFACES_TEXT_MAX, 1)))
			return -EINVAL;
		if (m->have_serving && (m->serving_if < 1 || m->serving_if > INT32_MAX ||
					m->serving_n < 1 || m->serving_n > NODEMSG_FDS_MAX))
			return -EINVAL;
		n = snprintf(out, cap, "imds-node %u config\nvm %s %s\nport %u\nhops %u\n%s%s%s%s%s%s",
			     NODEMSG_VERSION, m->ns, m->name, m->port, m->hops,
			     m->have_bridge ? "bridge " : "", m->have_bridge ? m->bridge : "",
			     m->have_bridge ? "\n" : "", m->have_ifaces ? "interfaces " : "",
			     m->have_ifaces ? m->ifaces : "", m->have_ifaces ? "\n" : "");
		if (n >= 0 && (size_t)n < cap && m->have_serving) {
			int k = snprintf(out + n, cap - (size_t)n, "serving %u %u\n", m->serving_if,
					 m->serving_n);
			n = k < 0 ? k : n + k;
		}
		break;
	case NODEMSG_GUARD:
		if (!m->generation)
			return -EINVAL;
		n = snprintf(out, cap, "imds-node %u guard %llu\n", NODEMSG_VERSION,
			     (unsigned long long)m->generation);
		break;
	case NODEMSG_LISTENERS:
		if (!m->generation || m->nfds < 1 || m->nfds > NODEMSG_FDS_MAX)
			return -EINVAL;
		n = snprintf(out, cap, "imds-node %u listeners %llu %u\n", NODEMSG_VERSION,
			     (unsigned long long)m->generation, m->nfds);
		break;
	case NODEMSG_REFUSED:
		if (!text_ok(m->reason, strlen(m->reason), 1, NODEMSG_REASON_MAX, 1))
			return -EINVAL;
		n = snprintf(out, cap, "imds-node %u refused %s\n", NODEMSG_VERSION, m->reason);
		break;
	case NODEMSG_SERVING:
		if (!text_ok(m->reason, strlen(m->reason), 1, NODEMSG_REASON_MAX, 1))
			return -EINVAL;
		n = snprintf(out, cap, "imds-node %u serving %s\n", NODEMSG_VERSION, m->reason);
		break;
	default:
		return -EINVAL;
	}
	if (n < 0 || (size_t)n >= cap || (size_t)n > NODEMSG_MAX)
		return -ENOSPC;
	return n;
}

/* ---- the reader ---------------------------------------------------------- */

struct cursor {
	const char *p, *end;
	int line;
};

/* The next line (without its '\n') into *s, *n; 0 at the end, -1 when the
 * last line has no '\n'. */
static int next_line(struct cursor *c, const char **s, size_t *n)
{
	if (c->p == c->end)
		return 0;
	const char *nl = memchr(c->p, '\n', (size_t)(c->end - c->p));
	if (!nl)
		return -1;
	*s = c->p;
	*n = (size_t)(nl - c->p);
	c->p = nl + 1;
	c->line++;
	return 1;
}

/* "key " at the start of the line: the value after it */
static int key(const char *s, size_t n, const char *k, const char **v, size_t *vn)
{
	size_t kl = strlen(k);
	if (n <= kl || memcmp(s, k, kl) != 0 || s[kl] != ' ')
		return 0;
	*v = s + kl + 1;
	*vn = n - kl - 1;
	return 1;
}

/* a decimal number without leading zeros in [min, max] */
static int number(const char *s, size_t n, unsigned long long min, unsigned long long max,
		  unsigned long long *out)
{
	unsigned long long v = 0;
	if (n < 1 || n > 20 || (n > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (~0ULL - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static void copy(char *dst, const char *s, size_t n)
{
	memcpy(dst, s, n);
	dst[n] = '\0';
}

#define BAD(...)                                       \
	do {                                           \
		snprintf(err, errlen, __VA_ARGS__);    \
		return -EINVAL;                        \
	} while (0)

static int decode_config(struct cursor *c, struct nodemsg *m, char *err, size_t errlen)
{
	const char *s, *v;
	size_t n, vn;
	unsigned long long u;
	int r;

	if (next_line(c, &s, &n) != 1 || !key(s, n, "vm", &v, &vn))
		BAD("line %d: want 'vm <namespace> <name>'", c->line);
	const char *sp = memchr(v, ' ', vn);
	if (!sp || !dns_ok(v, (size_t)(sp - v), NODEMSG_NS_MAX, 0) ||
	    !dns_ok(sp + 1, vn - (size_t)(sp - v) - 1, NODEMSG_NAME_MAX, 1))
		BAD("line %d: 'vm': want a namespace (a DNS label) and a name (a DNS subdomain)",
		    c->line);
	copy(m->ns, v, (size_t)(sp - v));
	copy(m->name, sp + 1, vn - (size_t)(sp - v) - 1);
	if (next_line(c, &s, &n) != 1 || !key(s, n, "port", &v, &vn) || number(v, vn, 1, 65535, &u))
		BAD("line %d: want 'port <1..65535>'", c->line);
	m->port = (unsigned)u;
	if (next_line(c, &s, &n) != 1 || !key(s, n, "hops", &v, &vn) || number(v, vn, 1, 64, &u))
		BAD("line %d: want 'hops <1..64>'", c->line);
	m->hops = (unsigned)u;
	r = next_line(c, &s, &n);
	if (r == 1 && key(s, n, "bridge", &v, &vn)) {
		if (!bridge_ok(v, vn))
			BAD("line %d: 'bridge': want an interface name (1..15 bytes, no space or '/')",
			    c->line);
		copy(m->bridge, v, vn);
		m->have_bridge = 1;
		r = next_line(c, &s, &n);
	}
	if (r == 1 && key(s, n, "interfaces", &v, &vn)) {
		if (!text_ok(v, vn, 0, IFACES_TEXT_MAX, 1))
			BAD("line %d: 'interfaces': want printable text of at most %u bytes", c->line,
			    (unsigned)IFACES_TEXT_MAX);
		copy(m->ifaces, v, vn);
		m->have_ifaces = 1;
		r = next_line(c, &s, &n);
	}
	if (r == 1 && key(s, n, "serving", &v, &vn)) {
		const char *sp2 = memchr(v, ' ', vn);
		if (!sp2 || number(v, (size_t)(sp2 - v), 1, INT32_MAX, &u))
			BAD("line %d: 'serving': want an ifindex and a count 1..%u", c->line,
			    NODEMSG_FDS_MAX);
		m->serving_if = (unsigned)u;
		if (number(sp2 + 1, vn - (size_t)(sp2 - v) - 1, 1, NODEMSG_FDS_MAX, &u))
			BAD("line %d: 'serving': want an ifindex and a count 1..%u", c->line,
			    NODEMSG_FDS_MAX);
		m->serving_n = (unsigned)u;
		m->have_serving = 1;
		r = next_line(c, &s, &n);
	}
	if (r != 0)
		BAD("line %d: unexpected after the config's fields", c->line);
	return 0;
}

int nodemsg_decode(const char *buf, size_t len, struct nodemsg *m, char *err, size_t errlen)
{
	struct cursor c = {buf, buf + len, 0};
	const char *s, *v;
	size_t n, vn;
	unsigned long long u;

	memset(m, 0, sizeof(*m));
	err[0] = '\0';
	if (len > NODEMSG_MAX)
		BAD("a message of %zu bytes (at most %u)", len, (unsigned)NODEMSG_MAX);
	if (next_line(&c, &s, &n) != 1 || !key(s, n, "imds-node", &v, &vn))
		BAD("line 1: want 'imds-node <version> <type>'");
	const char *sp = memchr(v, ' ', vn);
	if (!sp || number(v, (size_t)(sp - v), 1, 1000000, &u))
		BAD("line 1: want 'imds-node <version> <type>'");
	if (u != NODEMSG_VERSION) {
		snprintf(err, errlen, "protocol version %llu, this side speaks %u", u, NODEMSG_VERSION);
		return -EPROTO;
	}
	s = sp + 1;
	n = vn - (size_t)(sp - v) - 1;
	if (n == 6 && !memcmp(s, "config", 6)) {
		m->type = NODEMSG_CONFIG;
		return decode_config(&c, m, err, errlen);
	}
	if (key(s, n, "guard", &v, &vn)) {
		m->type = NODEMSG_GUARD;
		if (number(v, vn, 1, ~0ULL, &u))
			BAD("line 1: 'guard': want a generation from 1");
		m->generation = u;
	} else if (key(s, n, "listeners", &v, &vn)) {
		m->type = NODEMSG_LISTENERS;
		sp = memchr(v, ' ', vn);
		if (!sp || number(v, (size_t)(sp - v), 1, ~0ULL, &u))
			BAD("line 1: 'listeners': want a generation from 1 and a count");
		m->generation = u;
		if (number(sp + 1, vn - (size_t)(sp - v) - 1, 1, NODEMSG_FDS_MAX, &u))
			BAD("line 1: 'listeners': want a count 1..%u", NODEMSG_FDS_MAX);
		m->nfds = (unsigned)u;
	} else if (key(s, n, "refused", &v, &vn)) {
		m->type = NODEMSG_REFUSED;
		if (!text_ok(v, vn, 1, NODEMSG_REASON_MAX, 1))
			BAD("line 1: 'refused': want printable text of 1..%u bytes", NODEMSG_REASON_MAX);
		copy(m->reason, v, vn);
	} else if (key(s, n, "serving", &v, &vn)) {
		m->type = NODEMSG_SERVING;
		if (!text_ok(v, vn, 1, NODEMSG_REASON_MAX, 1))
			BAD("line 1: 'serving': want printable text of 1..%u bytes", NODEMSG_REASON_MAX);
		copy(m->reason, v, vn);
	} else {
		BAD("line 1: unknown type (want config, guard, listeners, refused or serving)");
	}
	if (c.p != c.end)
		BAD("line 2: unexpected after a one-line message");
	return 0;
}
