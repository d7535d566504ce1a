#include "yaml.h"

#include <stdint.h>
#include <strings.h>

#include "utf8.h"

/* YAML 1.1 resolves these (any case mix that PyYAML accepts, and the
 * single letters of the 1.1 spec) to bools or null. */
static const char *const reserved[] = {"true", "false", "yes", "no", "on", "off",
				       "y",    "n",     "null", NULL};

static int is_alpha(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

int yaml_plain_ok(const char *s, size_t n)
{
	if (n == 0 || !is_alpha((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!is_alpha(c) && !(c >= '0' && c <= '9') && c != '.' && c != '_' && c != '/' &&
		    c != '-')
			return 0;
	}
	for (const char *const *r = reserved; *r; r++) {
		size_t rl = 0;
		while ((*r)[rl])
			rl++;
		if (rl == n && strncasecmp(s, *r, n) == 0)
			return 0;
	}
	return 1;
}

/* Characters that cannot stand raw inside a double-quoted scalar: what
 * YAML forbids in a stream (C0 and C1 controls, DEL, U+FFFE, U+FFFF), and
 * the line breaks NEL, LS and PS, which a reader folds into a space. */
static int needs_escape(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 ||
	       cp == 0x2029 || cp == 0xfffe || cp == 0xffff;
}

void yaml_scalar(struct sbuf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	if (yaml_plain_ok(s, n)) {
		sbuf_put(b, s, n);
		return;
	}
	const unsigned char *u = (const unsigned char *)s;
	sbuf_putc(b, '"');
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t l = utf8_next(u + i, n - i, &cp);
		if (!l) {
			/* Not UTF-8: no YAML string can hold this byte; write the
			 * replacement character rather than an unreadable document. */
			sbuf_puts(b, "\\uFFFD");
			i++;
			continue;
		}
		if (cp == '"' || cp == '\\') {
			sbuf_putc(b, '\\');
			sbuf_putc(b, (char)cp);
		} else if (cp == '\n') {
			sbuf_puts(b, "\\n");
		} else if (cp == '\t') {
			sbuf_puts(b, "\\t");
		} else if (needs_escape(cp)) {
			char e[6] = {'\\', 'u', hex[cp >> 12 & 15], hex[cp >> 8 & 15], hex[cp >> 4 & 15],
				     hex[cp & 15]};
			sbuf_put(b, e, 6);
		} else {
			sbuf_put(b, u + i, l);
		}
		i += l;
	}
	sbuf_putc(b, '"');
}
