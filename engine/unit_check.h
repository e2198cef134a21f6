/* unit_check.h — the CHECK macro of the engine's C unit tests: a failed
 * condition prints file, line and a message and counts in `failures`; each
 * test's main returns non-zero when any failed. */
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

#endif
