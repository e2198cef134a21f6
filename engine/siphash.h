/* siphash.h — SipHash-2-4 (Aumasson and Bernstein, "SipHash: a fast
 * short-input PRF", 2012): a keyed 64-bit MAC for short inputs, used to
 * authenticate file handles.  Checked against the paper's test vectors
 * (engine/siphash_test.c). */
#ifndef ENGINE_SIPHASH_H
#define ENGINE_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_SIZE 16

uint64_t siphash24(const uint8_t key[SIPHASH_KEY_SIZE], const void *msg, size_t len);

#endif
