/* image.c (fuzz) — the device image of the on-disk-format harnesses (image.h). */
#include "fuzz/image.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cksum.h"

uint8_t *fuzz_img;
char fuzz_img_path[64];
static size_t fuzz_img_size;

static void remove_scratch(void)
{
	unlink(fuzz_img_path);
}

/* The scratch file: fuzz_img_size bytes, the first n of them from the image. */
static void write_scratch(size_t n)
{
	int fd = open(fuzz_img_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, (off_t)fuzz_img_size) || pwrite(fd, fuzz_img, n, 0) != (ssize_t)n)
		abort();
	close(fd);
}

/* The scratch file, read back into the image, as DIR/SEED-s without its trailing zeroes. */
static void save_seed(const char *dir, const char *seed, int s)
{
	int fd = open(fuzz_img_path, O_RDONLY);
	if (fd < 0 || pread(fd, fuzz_img, fuzz_img_size, 0) != (ssize_t)fuzz_img_size)
		abort();
	close(fd);
	size_t n = fuzz_img_size;
	while (n && !fuzz_img[n - 1])
		n--;
	char out[512];
	snprintf(out, sizeof(out), "%s/%s-%d", dir, seed, s);
	FILE *f = fopen(out, "wb");
	if (!f || fwrite(fuzz_img, 1, n, f) != n)
		abort();
	fclose(f);
}

void fuzz_image_init(const char *harness, size_t size, const char *seed, int nseeds, void (*make_seed)(int s))
{
	snprintf(fuzz_img_path, sizeof(fuzz_img_path), "/dev/shm/strata-fuzz-%s-%d", harness, (int)getpid());
	fuzz_img_size = size;
	fuzz_img = calloc(1, size);
	if (!fuzz_img)
		abort();
	atexit(remove_scratch);
	const char *dir = getenv("STRATA_FUZZ_SEEDS");
	if (!dir)
		return;
	for (int s = 0; s < nseeds; s++) {
		write_scratch(0);
		make_seed(s);
		save_seed(dir, seed, s);
	}
	exit(0);
}

int fuzz_image_prepare(const uint8_t *data, size_t size, size_t sb_size, void (*repair)(void))
{
	if (size > fuzz_img_size)
		return -1;
	memset(fuzz_img, 0, fuzz_img_size);
	memcpy(fuzz_img, data, size);
	if (size >= sb_size)
		repair();
	write_scratch(fuzz_img_size);
	return 0;
}

void fuzz_image_seal(size_t at, size_t len, size_t ck_at)
{
	struct cksum ck = { 0 };
	if (ck_at < at + len && ck_at + sizeof(ck) > at)
		memcpy(fuzz_img + ck_at, &ck, sizeof(ck));
	fletcher4(fuzz_img + at, len, &ck);
	memcpy(fuzz_img + ck_at, &ck, sizeof(ck));
}
