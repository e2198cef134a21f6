/* parse_size.h — the one size parser of strata's C programs' options: "4096", "128k",
 * "1M", "2GiB" (k, m, g, t: powers of 1024, an optional "i", an optional "b") to bytes. */
#ifndef STRATA_LIB_PARSE_SIZE_H
#define STRATA_LIB_PARSE_SIZE_H

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* 0 with the bytes in *out, or -1 on bad input. */
static inline int parse_size(const char *s, uint64_t *out)
{
	uint64_t v, mult = 1;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (tolower((unsigned char)*end)) {
	case 'k': mult = 1ull << 10; end++; break;
	case 'm': mult = 1ull << 20; end++; break;
	case 'g': mult = 1ull << 30; end++; break;
	case 't': mult = 1ull << 40; end++; break;
	}
	if (mult > 1 && (*end == 'i' || *end == 'I'))
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end || (v && mult > UINT64_MAX / v))
		return -1;
	*out = v * mult;
	return 0;
}

#endif
