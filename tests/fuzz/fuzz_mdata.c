/* libFuzzer: the guest meta-data parsers on arbitrary bytes — every line
 * as an OpenSSH public key line (sshkeys.c), the whole input as the custom
 * meta-data object (metajson.c), and what each accepts re-checked.
 *
 * Invariants (abort on violation):
 *  - sshkey_line returns 1, 0 or -EINVAL; on 1 the normalized key is
 *    non-empty, within the input or the buffer, valid UTF-8, has no control
 *    byte but tab, starts with its type and a space, and is a fixed point
 *    (normalizing it again gives the same bytes, in place).
 *  - metajson_parse returns 0, -EINVAL (with a message) or -ENOMEM; on 0
 *    every key and value is valid UTF-8 of the stated length, keys are
 *    distinct, there are at most METAJSON_MAX_KEYS, and a document written
 *    back from the pairs parses to the same pairs. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metajson.h"
#include "sbuf.h"
#include "sshkeys.h"
#include "utf8.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char norm[SSHKEY_LINE_MAX + 1], norm2[SSHKEY_LINE_MAX + 1];

static void key_line(const char *l, size_t n)
{
	const char *out;
	size_t on;
	int r = sshkey_line(l, n, norm, sizeof(norm), &out, &on);
	CHECK(r == 1 || r == 0 || r == -EINVAL);
	if (r != 1)
		return;
	CHECK(on > 0 && on <= n);
	CHECK((out >= l && out + on <= l + n) || out == norm);
	CHECK(utf8_valid(out, on) == 0);
	for (size_t i = 0; i < on; i++)
		CHECK((unsigned char)out[i] >= 0x20 ? out[i] != 0x7f : out[i] == '\t');
	const char *sp = memchr(out, ' ', on);
	CHECK(sp && sp > out);
	const char *out2;
	size_t on2;
	CHECK(sshkey_line(out, on, norm2, sizeof(norm2), &out2, &on2) == 1);
	CHECK(on2 == on && out2 == out);
}

static void object(const char *s, size_t n)
{
	struct metajson m, m2;
	char err[256];
	int r = metajson_parse(s, n, &m, err, sizeof(err));
	CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r == -EINVAL)
		CHECK(err[0] != '\0');
	if (r != 0)
		return;
	CHECK(m.n <= METAJSON_MAX_KEYS);
	size_t cap = 16;
	for (size_t i = 0; i < m.n; i++) {
		CHECK(utf8_valid(m.kv[i].k, m.kv[i].kn) == 0 && m.kv[i].k[m.kv[i].kn] == '\0');
		CHECK(utf8_valid(m.kv[i].v, m.kv[i].vn) == 0 && m.kv[i].v[m.kv[i].vn] == '\0');
		for (size_t j = 0; j < i; j++)
			CHECK(m.kv[j].kn != m.kv[i].kn || memcmp(m.kv[j].k, m.kv[i].k, m.kv[i].kn));
		cap += (m.kv[i].kn + m.kv[i].vn) * 6 + 8;
	}
	char *doc = malloc(cap);
	CHECK(doc);
	struct sbuf b = SBUF_INIT(doc, cap);
	sbuf_putc(&b, '{');
	for (size_t i = 0; i < m.n; i++) {
		sbuf_puts(&b, i ? ",\"" : "\"");
		sbuf_json_escape(&b, m.kv[i].k, m.kv[i].kn);
		sbuf_puts(&b, "\":\"");
		sbuf_json_escape(&b, m.kv[i].v, m.kv[i].vn);
		sbuf_putc(&b, '"');
	}
	sbuf_putc(&b, '}');
	CHECK(!b.overflow);
	CHECK(metajson_parse(b.p, b.len, &m2, err, sizeof(err)) == 0);
	CHECK(m2.n == m.n);
	for (size_t i = 0; i < m.n; i++) {
		CHECK(m2.kv[i].kn == m.kv[i].kn && memcmp(m2.kv[i].k, m.kv[i].k, m.kv[i].kn) == 0);
		CHECK(m2.kv[i].vn == m.kv[i].vn && memcmp(m2.kv[i].v, m.kv[i].v, m.kv[i].vn) == 0);
	}
	metajson_free(&m2);
	metajson_free(&m);
	free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	for (size_t i = 0; i < size;) {
		const char *nl = memchr(s + i, '\n', size - i);
		size_t n = nl ? (size_t)(nl - (s + i)) : size - i;
		key_line(s + i, n);
		i += n + 1;
	}
	object(s, size);
	return 0;
}
