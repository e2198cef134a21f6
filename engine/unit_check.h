/* unit_check.h — the checks of the engine's C unit tests: CHECK prints file,
 * line and a message for a failed condition and counts it in `failures`;
 * REQUIRE also ends the (void) test function; main returns unit_result(). */
#ifndef ENGINE_UNIT_CHECK_H
#define ENGINE_UNIT_CHECK_H

#include <stdio.h>

static int failures;
#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);    \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			failures++;                                             \
		}                                                               \
	} while (0)
#define REQUIRE(cond, ...)                                                      \
	do {                                                                    \
		if (!(cond)) {                                                  \
			CHECK(0, __VA_ARGS__);                                  \
			return;                                                 \
		}                                                               \
	} while (0)

/* "NAME: ok" on stdout and 0, or "NAME: N failure(s)" on stderr and 1. */
static inline int unit_result(const char *name)
{
	if (failures) {
		fprintf(stderr, "%s: %d failure(s)\n", name, failures);
		return 1;
	}
	printf("%s: ok\n", name);
	return 0;
}

#endif
