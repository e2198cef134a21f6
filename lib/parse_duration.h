/* parse_duration.h — durations in strata's C programs' options as seconds: "10", "2.5",
 * "2s", "500ms", "1.5m", "1h" (a bare number is seconds; units us, ms, s, m, h). */
#ifndef STRATA_LIB_PARSE_DURATION_H
#define STRATA_LIB_PARSE_DURATION_H

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 0 with the seconds in *out, or -1 on bad input (no number, unknown unit, not finite, < 0). */
static inline int parse_duration_s(const char *s, double *out)
{
	static const struct { const char *unit; double s; } units[] = {
		{ "", 1 }, { "s", 1 }, { "ms", 1e-3 }, { "us", 1e-6 }, { "m", 60 }, { "h", 3600 },
	};
	char *end;

	if (!s || !(isdigit((unsigned char)*s) || *s == '.'))
		return -1;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || !isfinite(v))
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].unit) == 0) {
			*out = v * units[i].s;
			return 0;
		}
	return -1;
}

#endif
