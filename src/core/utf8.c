#include "utf8.h"

#include <errno.h>
#include <string.h>

size_t utf8_next(const unsigned char *s, size_t n, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2;
		min = 0x80;
		*cp = c & 0x1f;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3;
		min = 0x800;
		*cp = c & 0x0f;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4;
		min = 0x10000;
		*cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		*cp = *cp << 6 | (s[i] & 0x3f);
	}
	if (*cp < min || *cp > 0x10ffff || (*cp >= 0xd800 && *cp <= 0xdfff))
		return 0;
	return len;
}

size_t utf8_prefix(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		uint64_t w;
		if (n - i >= 8 && (memcpy(&w, p + i, 8), (w & 0x8080808080808080ull) == 0)) {
			i += 8;
			continue;
		}
		uint32_t cp;
		size_t l = utf8_next(p + i, n - i, &cp);
		if (!l)
			return i;
		i += l;
	}
	return n;
}

int utf8_valid(const char *s, size_t n)
{
	return utf8_prefix(s, n) == n ? 0 : -EINVAL;
}

size_t utf8_put(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}
