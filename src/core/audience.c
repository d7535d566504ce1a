#include "audience.h"

#include <errno.h>
#include <string.h>

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
		/* A leading '.' is encoded: names like `..data` belong to
		 * kubelet's atomic writer in the same volume. */
		int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    (c == '.' && i > 0) || c == '_' || c == '-';
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
	/* `token` is the default token's own file in the same volume: write
	 * its first byte encoded, like a leading '.'. */
	if (o == 5 && memcmp(out, "token", 5) == 0) {
		if (cap < 8)
			return -ENOSPC;
		memcpy(out, "%74oken", 8);
		o = 7;
	}
	return (int)o;
}
