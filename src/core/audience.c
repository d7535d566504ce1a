#include "audience.h"

#include <errno.h>

int audience_dir(const char *aud, size_t n, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	if (n == 0 || (n == 1 && aud[0] == '.') || (n == 2 && aud[0] == '.' && aud[1] == '.'))
		return -EINVAL;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)aud[i];
		if (c <= 0x20 || c >= 0x7f)
			return -EINVAL; /* audiences are printable ASCII */
		int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c == '.' || c == '_' || c == '-';
		if (o + (plain ? 1 : 3) >= cap)
			return -ENOSPC;
		if (plain) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
	return (int)o;
}
