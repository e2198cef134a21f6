/* clock.h — the one clock helper of strata's C programs: nanoseconds on a clock, by
 * default CLOCK_MONOTONIC (intervals, deadlines) or CLOCK_REALTIME (wall-clock time). */
#ifndef STRATA_LIB_CLOCK_H
#define STRATA_LIB_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t clock_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

#endif
