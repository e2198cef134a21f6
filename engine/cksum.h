/* cksum.h — Fletcher-4 checksum (as in ZFS: four 64-bit running sums over
 * little-endian 32-bit words) used for every record and metadata block. */
#ifndef ENGINE_CKSUM_H
#define ENGINE_CKSUM_H

#include <stddef.h>
#include <stdint.h>

struct cksum { uint64_t w[4]; };

/* len must be a multiple of 4 (records and blocks are 4 KiB multiples). */
void fletcher4(const void *buf, size_t len, struct cksum *out);
int cksum_equal(const struct cksum *a, const struct cksum *b);

#endif
