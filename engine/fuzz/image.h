/* image.h (fuzz) — the device image an on-disk-format harness (l2arc.c,
 * zil.c) hands the engine: the fuzz input laid over zeroes, its checksums
 * made to match, written to a scratch file in /dev/shm; and the seeds, images
 * the engine's real writers made, read back from that file. */
#ifndef ENGINE_FUZZ_IMAGE_H
#define ENGINE_FUZZ_IMAGE_H

#include <stddef.h>
#include <stdint.h>

extern uint8_t *fuzz_img;      /* the image (the size given to fuzz_image_init) */
extern char fuzz_img_path[64]; /* the scratch file the engine opens */

/* From LLVMFuzzerInitialize: allocates the image and names the scratch file
 * after the harness (removed at exit).  With STRATA_FUZZ_SEEDS=DIR set, writes
 * the seeds and exits: for s = 0 .. nseeds-1, make_seed(s) runs the engine's
 * real writer on an empty scratch file, kept then as DIR/SEED-s (trailing
 * zeroes cut). */
void fuzz_image_init(const char *harness, size_t size, const char *seed, int nseeds, void (*make_seed)(int s));

/* The input laid over zeroes, repair() run on it when it holds a superblock
 * (sb_size bytes), then the scratch file written; -1 (nothing done) when the
 * input is larger than the image. */
int fuzz_image_prepare(const uint8_t *data, size_t size, size_t sb_size, void (*repair)(void));

/* Stores at ck_at the Fletcher-4 checksum of the len bytes at at (the
 * checksum's own bytes zeroed first when they lie among them). */
void fuzz_image_seal(size_t at, size_t len, size_t ck_at);

#endif
