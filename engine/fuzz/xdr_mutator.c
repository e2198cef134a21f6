/* xdr_mutator.c — structure-aware mutation for the RPC harness (rpc.c).
 * Inputs are ONC RPC call bodies: a sequence of 4-byte XDR words.  Besides
 * libFuzzer's byte mutations, this mutator works on whole words: it sets a
 * word to a value the decoders branch on (lengths at their limits, procedure
 * numbers, enum values, all-ones), retargets the call (program, procedure),
 * inserts or deletes words (alignment kept), or copies a file handle onto
 * another handle or points a handle at another object, so the argument decoders see well-formed neighbours of
 * the recorded calls rather than noise. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fh.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* Offsets in a call body: xid, msg_type, rpcvers, prog, vers, proc. */
#define OFF_PROG 12
#define OFF_PROC 20

static const uint32_t interesting[] = {
	0, 1, 2, 3, 4, 5, 7, 8, 16, 22, 28, 32, 63, 64, 255, 256, 1023, 1024, 4095, 4096, 4097,
	8192, 65535, 65536, 1u << 20, (1u << 20) + 1, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu,
	100003, 100005, FH_SIZE, FH_MAX, FH_MAX + 1,
};

static uint64_t rng_next(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = v;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	uint64_t s = seed;
	size_t words = size / 4;
	switch (rng_next(&s) % 8) {
	case 0: /* a word to a boundary value, or one off it */
		if (words) {
			uint32_t v = interesting[rng_next(&s) % (sizeof(interesting) / sizeof(interesting[0]))];
			put32(data + 4 * (rng_next(&s) % words), v + (uint32_t)(rng_next(&s) % 3) - 1);
			return size;
		}
		break;
	case 1: /* another procedure (or program) with the same arguments */
		if (size >= OFF_PROC + 4) {
			if (rng_next(&s) % 4 == 0)
				put32(data + OFF_PROG, rng_next(&s) % 2 ? 100003 : 100005);
			put32(data + OFF_PROC, (uint32_t)(rng_next(&s) % 24));
			return size;
		}
		break;
	case 2: /* insert a word */
		if (size + 4 <= max_size) {
			size_t at = 4 * (rng_next(&s) % (words + 1));
			memmove(data + at + 4, data + at, size - at);
			put32(data + at, interesting[rng_next(&s) % (sizeof(interesting) / sizeof(interesting[0]))]);
			return size + 4;
		}
		break;
	case 3: /* delete a word */
		if (words > 6) {
			size_t at = 4 * (6 + rng_next(&s) % (words - 6));
			memmove(data + at, data + at + 4, size - at - 4);
			return size - 4;
		}
		break;
	case 4: { /* one handle copied over another (a second handle argument) */
		size_t at[2], n = 0;
		for (size_t p = 0; p + FH_SIZE <= size && n < 2; p += 4)
			if (!memcmp(data + p, "STFH", 4))
				at[n++] = p, p += FH_SIZE - 4;
		if (n == 2) {
			int from = (int)(rng_next(&s) % 2);
			memcpy(data + at[!from], data + at[from], FH_SIZE);
			return size;
		}
		break;
	}
	case 5: /* a handle names another object of the session's tree (ids are small) */
		for (size_t p = 0; p + FH_SIZE <= size; p += 4)
			if (!memcmp(data + p, "STFH", 4) && rng_next(&s) % 2) {
				put32(data + p + 8, 0);
				put32(data + p + 12, (uint32_t)(1 + rng_next(&s) % 24));
				return size;
			}
		break;
	default:
		break;
	}
	return LLVMFuzzerMutate(data, size, max_size);
}
