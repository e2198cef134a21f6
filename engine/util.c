/* util.c — clocks, size/duration parsing, allocation and randomness helpers for the engine. */
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

void now_real(uint32_t *sec, uint32_t *nsec)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	*sec = (uint32_t)ts.tv_sec;
	*nsec = (uint32_t)ts.tv_nsec;
}

static int parse_number(const char *s, uint64_t *val, const char **rest)
{
	char *end;
	if (!s || !isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	*val = v;
	*rest = end;
	return 0;
}

int parse_duration_ms(const char *s, uint64_t *out)
{
	uint64_t v;
	const char *r;
	if (parse_number(s, &v, &r))
		return -1;
	if (!strcmp(r, "ms"))
		*out = v;
	else if (!strcmp(r, "s") || !*r)
		*out = v * 1000;
	else if (!strcmp(r, "m"))
		*out = v * 60000;
	else
		return -1;
	return 0;
}

int parse_duration_ns(const char *s, uint64_t *out)
{
	static const struct { const char *unit; uint64_t ns; } units[] = {
		{ "ns", 1 }, { "us", 1000 }, { "ms", 1000000 }, { "s", 1000000000 }, { "", 1000000000 },
	};
	uint64_t v;
	const char *r;
	if (parse_number(s, &v, &r))
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(r, units[i].unit)) {
			if (v > UINT64_MAX / units[i].ns)
				return -1;
			*out = v * units[i].ns;
			return 0;
		}
	return -1;
}

static void oom(void)
{
	fputs("strata-engine: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t m)
{
	void *p = calloc(n ? n : 1, m ? m : 1);
	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		oom();
	return p;
}

void *xaligned(size_t n)
{
	void *p = NULL;
	if (posix_memalign(&p, 4096, n ? n : 4096))
		oom();
	return p;
}

void xrandom(void *buf, size_t n)
{
	for (size_t done = 0; done < n;) {
		ssize_t r = getrandom((uint8_t *)buf + done, n - done, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			fputs("strata-engine: getrandom failed\n", stderr);
			abort();
		}
		done += (size_t)r;
	}
}

char *json_escaped(const char *s)
{
	char *out = xmalloc(6 * strlen(s) + 1), *p = out;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c < 0x20) {
			p += sprintf(p, "\\u%04x", c);
			continue;
		}
		if (c == '"' || c == '\\')
			*p++ = '\\';
		*p++ = (char)c;
	}
	*p = 0;
	return out;
}
