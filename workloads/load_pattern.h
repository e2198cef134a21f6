/* load_pattern.h — the bytes strata-load writes: a pure function of
 * (tag, file index, byte offset), so any reader can check them. Setup writes
 * tag 0; run writes carry tag --seed. Each aligned 8-byte word w of a file is
 * splitmix64(tag * 0x9E3779B97F4A7C15 ^ file << 40 ^ w) in little-endian order
 * (twin: tests/load_util.py, expected_bytes()). */
#ifndef STRATA_LOAD_PATTERN_H
#define STRATA_LOAD_PATTERN_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t splitmix64(uint64_t x)
{
	x += 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

/* Fills buf with bytes [off, off + len) of file `file` under `tag`. */
static inline void pattern_fill(char *buf, size_t len, uint64_t tag, uint32_t file, uint64_t off)
{
	uint64_t key = tag * 0x9E3779B97F4A7C15ull ^ (uint64_t)file << 40;
	size_t i = 0;

	while (i < len) {
		uint64_t pos = off + i, w = splitmix64(key ^ (pos >> 3));
		unsigned b = (unsigned)(pos & 7);

		for (; b < 8 && i < len; b++, i++)
			buf[i] = (char)(w >> (8 * b));
	}
}

#endif
