/* siphash_test.c — SipHash-2-4 against the reference vectors of the paper
 * (key 00 01 .. 0f, message 00 01 .. n-1, for n = 0..18: within one word,
 * one whole word, and across the second). */
#include <stdio.h>

#include "siphash.h"
#include "unit_check.h"

static const uint64_t vectors[] = {
	0x726fdb47dd0e0e31ull, 0x74f839c593dc67fdull, 0x0d6c8009d9a94f5aull, 0x85676696d7fb7e2dull,
	0xcf2794e0277187b7ull, 0x18765564cd99a68dull, 0xcbc9466e58fee3ceull, 0xab0200f58b01d137ull,
	0x93f5f5799a932462ull, 0x9e0082df0ba9e4b0ull, 0x7a5dbbc594ddb9f3ull, 0xf4b32f46226bada7ull,
	0x751e8fbc860ee5fbull, 0x14ea5627c0843d90ull, 0xf723ca908e7af2eeull, 0xa129ca6149be45e5ull,
	0x3f2acc7f57c29bdbull, 0x699ae9f52cbe4794ull, 0x4bc1b3f0968dd39cull,
};

int main(void)
{
	uint8_t key[SIPHASH_KEY_SIZE], msg[32];
	for (int i = 0; i < SIPHASH_KEY_SIZE; i++)
		key[i] = (uint8_t)i;
	for (int i = 0; i < (int)sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	for (size_t n = 0; n < sizeof(vectors) / sizeof(vectors[0]); n++) {
		uint64_t h = siphash24(key, msg, n);
		CHECK(h == vectors[n], "length %zu: %016llx, want %016llx", n, (unsigned long long)h,
		      (unsigned long long)vectors[n]);
	}
	key[0] ^= 1;
	CHECK(siphash24(key, msg, 0) != vectors[0], "another key, another MAC");
	return unit_result("siphash_test");
}
