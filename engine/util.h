/* util.h — small helpers shared by the engine: clocks, size/duration parsing, alloc, randomness,
 * JSON strings. */
#ifndef ENGINE_UTIL_H
#define ENGINE_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include "clock.h"
#include "parse_size.h"

void now_real(uint32_t *sec, uint32_t *nsec);

/* "5s", "500ms", "2" (seconds) -> milliseconds; -1 on bad input. */
int parse_duration_ms(const char *s, uint64_t *out);
/* "50us", "2ms", "1s", "100ns" (a bare number is seconds). */
int parse_duration_ns(const char *s, uint64_t *out);

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
/* Aligned buffer for O_DIRECT I/O (4096-byte alignment). */
void *xaligned(size_t n);
/* n bytes from the kernel's CSPRNG (getrandom); aborts if it has none. */
void xrandom(void *buf, size_t n);
/* s as the inside of a JSON string (malloc'ed): quotes and backslashes escaped, control
 * characters as \u00XX. */
char *json_escaped(const char *s);

#endif
