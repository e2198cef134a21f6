/* cksum.c — Fletcher-4 over 32-bit words (see cksum.h). */
#include "cksum.h"

#include <string.h>

void fletcher4(const void *buf, size_t len, struct cksum *out)
{
	const uint8_t *p = buf;
	uint64_t a = 0, b = 0, c = 0, d = 0;
	for (size_t i = 0; i + 4 <= len; i += 4) {
		uint32_t w;
		memcpy(&w, p + i, 4);
		a += w;
		b += a;
		c += b;
		d += c;
	}
	out->w[0] = a;
	out->w[1] = b;
	out->w[2] = c;
	out->w[3] = d;
}

int cksum_equal(const struct cksum *a, const struct cksum *b)
{
	return !memcmp(a, b, sizeof(*a));
}
