/* pool.h — the storage pool: vdevs (files or block devices opened O_DIRECT),
 * their labels, aligned I/O with vdev_io probes, and the block allocator with
 * its space map.  Layout of every vdev:
 *   [0, 4K)      label (pool guid, vdev index, vdev count, size, recordsize,
 *                embedded log size, the pool's secret)
 *   [4K, 8K)     holder block: host, pid and start of the engine serving it
 *   [8K, 16K)    two uberblock slots (used on vdev 0 only; see txg.c)
 *   [64K, size)  allocatable space, in 4 KiB blocks. */
#ifndef ENGINE_POOL_H
#define ENGINE_POOL_H

#include <pthread.h>
#include <stdint.h>

#include "cksum.h"
#include "siphash.h"
#include "xdr.h"

struct devmodel;

#define POOL_BLOCK       4096u
#define POOL_DATA_START  (64u * 1024u)
#define POOL_UB_OFFSET(slot) (8192u + (slot) * 4096u)
#define POOL_MIN_RECORD  (4u * 1024u)
#define POOL_MAX_RECORD  (1024u * 1024u)

/* Where a record lives and how to check it.  psize == 0 means a hole. */
struct blkptr {
	uint32_t vdev;
	uint32_t psize;  /* bytes on disk (multiple of POOL_BLOCK) */
	uint64_t offset; /* byte offset in the vdev */
	uint32_t lsize;  /* logical bytes held by the record */
	uint64_t birth;  /* txg that wrote it */
	struct cksum ck; /* fletcher4 of the psize bytes */
};

struct vdev {
	int fd;
	char *path;
	uint64_t size;
	uint64_t nblocks;
	uint8_t *bitmap; /* 1 = allocated, one bit per 4 KiB block */
	uint64_t rotor;
	uint64_t free_blocks;
	struct devmodel *model; /* latency model of this device, e.g. its own spindle (NULL: none) */
	uint64_t reads, writes, flushes; /* atomics: I/Os issued, one per vdev_io probe pair */
};

struct pool_extent { uint32_t vdev; uint64_t offset, size; };

struct pool {
	uint32_t nvdevs;
	struct vdev *vdevs;
	uint64_t guid;
	uint32_t recordsize; /* pool default */
	int direct;          /* all vdevs opened O_DIRECT */
	pthread_mutex_t lock; /* allocator state */
	uint32_t next_vdev;
	struct pool_extent *deferred;   /* freed in the open txg */
	size_t ndeferred, capdeferred;
	struct pool_extent *committing; /* freed by the txg being synced */
	size_t ncommitting, capcommitting;
	uint64_t bytes_read, bytes_written, reads, writes; /* atomics */
	uint64_t log_offset, log_size; /* embedded ZIL region on vdev 0 (log_size 0: none) */
	uint64_t read_delay_ns;        /* fault injection: added to every vdev read */
	uint8_t secret[SIPHASH_KEY_SIZE]; /* key of the file-handle MAC, from the labels */
	int has_secret;                /* 0: a pool labelled before secrets existed */
};

/* mkpool: create (sparse files of `size` when missing) and label the vdevs;
 * vdev 0 reserves log_size bytes at its end for the embedded ZIL (0: none,
 * POOL_LOG_DEFAULT: pool_default_log_size). */
#define POOL_LOG_DEFAULT UINT64_MAX
int pool_create(char **paths, uint32_t n, uint64_t size, uint32_t recordsize, uint64_t log_size,
		char *err, size_t errsz);
/* vdev size / 16, within 4 MiB..64 MiB. */
uint64_t pool_default_log_size(uint64_t vdev_size);
/* Open, lock (devlock.h: one engine per pool; refused naming the holder) and
 * verify the labels; vdevs may be given in any order. */
struct pool *pool_open(char **paths, uint32_t n, char *err, size_t errsz);
void pool_close(struct pool *p);
/* Write this process as the pool's holder (host, pid, now) on every vdev. */
int pool_claim(struct pool *p, char *err, size_t errsz);
/* A pool labelled before it had a secret gets one now, written to every
 * label: 1 when created, 0 when it had one, -1 (err filled) on failure. */
int pool_ensure_secret(struct pool *p, char *err, size_t errsz);

/* Aligned I/O (buf 4 KiB aligned, len/off multiples of 4 KiB); 0 or -errno. */
int pool_read(struct pool *p, uint32_t vdev, uint64_t off, void *buf, uint32_t len);
int pool_write(struct pool *p, uint32_t vdev, uint64_t off, const void *buf, uint32_t len);
int pool_flush(struct pool *p);

/* Allocator: contiguous `size` bytes (rounded to 4 KiB), round-robin over vdevs. */
int pool_alloc(struct pool *p, uint64_t size, uint32_t *vdev, uint64_t *off);
/* Frees are deferred: a block freed in txg N is reusable only once txg N is
 * on disk.  The sync cuts the list when it closes a txg and applies it after
 * the uberblock write. */
void pool_free_deferred(struct pool *p, uint32_t vdev, uint64_t off, uint64_t size);
void pool_deferred_cut(struct pool *p);
void pool_apply_deferred(struct pool *p);
void pool_mark_allocated(struct pool *p, uint32_t vdev, uint64_t off, uint64_t size);
uint64_t pool_total_bytes(const struct pool *p);
uint64_t pool_free_bytes(struct pool *p);

/* Space map: allocated extents as they will be after this txg commits
 * (its cut frees applied), except `skip` (the metadata block itself). */
void pool_spacemap_encode(struct pool *p, struct xdr_out *o, const struct pool_extent *skip);
int pool_spacemap_decode(struct pool *p, struct xdr_in *x);

#endif
