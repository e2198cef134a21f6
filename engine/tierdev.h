/* tierdev.h — a cache or log device for the L2ARC and the ZIL: a file (created
 * at a given size when missing) or a block device, opened O_DIRECT when the
 * file system allows it, with whole-buffer aligned pread/pwrite.  Callers pass
 * TIERDEV_ALIGN-aligned buffers, offsets and lengths. */
#ifndef ENGINE_TIERDEV_H
#define ENGINE_TIERDEV_H

#include <stddef.h>
#include <stdint.h>

#define TIERDEV_ALIGN 4096u

struct tierdev {
	int fd;
	int direct;     /* opened with O_DIRECT */
	uint64_t size;  /* bytes */
	char path[256];
};

/* Opens path read-write and locks it (devlock.h: refused while another engine
 * holds it); a missing file is created and preallocated to
 * create_size bytes (0: do not create).  0, or -errno with a message in err. */
int tierdev_open(struct tierdev *d, const char *path, uint64_t create_size, char *err, size_t errsz);
void tierdev_close(struct tierdev *d);
/* Whole transfers: 0 or -errno (-EIO for a short transfer). */
int tierdev_pread(struct tierdev *d, void *buf, size_t len, uint64_t off);
int tierdev_pwrite(struct tierdev *d, const void *buf, size_t len, uint64_t off);
int tierdev_sync(struct tierdev *d);

/* Zeroed TIERDEV_ALIGN-aligned memory (aborts when out of memory); free(). */
void *tierdev_alloc(size_t len);
static inline uint64_t tier_roundup(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

#endif
