/* l2arc_log.h — an L2ARC device as l2arc_log.c keeps it on disk: its ring, its
 * superblock and the chain of log blocks that lists its buffers (for a rebuild).
 *
 * Device layout: [0, 4K) superblock; [4K, end) the ring.  Positions in the
 * ring are logical (lpos, only ever growing); phys = ring_start + lpos % ring_len,
 * and a write that would cross the ring's end skips to the next lap.  Data
 * below evict_lpos may have been overwritten.  Buffers sit on 512-byte
 * boundaries inside a feed write; each feed write starts 4 KiB aligned. */
#ifndef ENGINE_L2ARC_LOG_H
#define ENGINE_L2ARC_LOG_H

#include <pthread.h>
#include <stdint.h>

#include "arc.h"
#include "cksum.h"
#include "tierdev.h"

#define L2_SECTOR      512u
#define L2_LB_MAX_ENTRIES 1024u

#define L2F_COMPRESSED 0x1

static inline uint32_t l2_asize(uint32_t psize) { return (psize + L2_SECTOR - 1) / L2_SECTOR * L2_SECTOR; }

/* On-device pointer to a log block (its checksum covers the whole block). */
struct l2_lbptr {
	uint64_t lpos;
	uint32_t size;
	uint32_t pad;
	struct cksum ck;
};

/* Log block entry: one buffer. */
struct l2_lbent {
	struct arc_key key;
	uint64_t lpos;
	struct cksum ck;
	uint32_t lsize;
	uint32_t psize_flags;  /* psize | flags << 24 */
};

struct l2_lbhdr {
	uint64_t magic;
	uint64_t guid;         /* the device's format */
	uint64_t lpos;         /* where this block lives */
	struct l2_lbptr prev;  /* the previous (older) log block; size 0: none */
	uint32_t nentries;
	uint32_t pad;
};

static inline uint32_t l2_lb_bytes(uint32_t n)
{
	return l2_asize((uint32_t)(sizeof(struct l2_lbhdr) + n * sizeof(struct l2_lbent)));
}

struct l2dev {
	struct tierdev io;
	uint32_t index;
	uint64_t guid;
	uint64_t ring_start, ring_end, ring_len;
	uint64_t hand_lpos, evict_lpos;
	int filled;                 /* the hand has wrapped once: no more boost */
	struct l2_lbptr head;       /* newest log block */
	uint32_t order_head, order_tail;
	uint64_t evict_gen;         /* bumped whenever a region is about to be overwritten */
	int rebuilding;
	int rebuild_thread_live;
	pthread_t rebuild_thread;
};

static inline uint64_t l2_phys(const struct l2dev *d, uint64_t lpos)
{
	return d->ring_start + lpos % d->ring_len;
}

/* Reads the superblock: adopts the ring state and returns 1 if valid. */
int l2_sb_load(struct l2dev *d);
/* Fresh format: new guid, empty ring. */
void l2_sb_format(struct l2dev *d);
int l2_sb_write(struct l2dev *d, const struct l2dev *snapshot);
/* Writes a log block listing ents at dst (which lives at lpos), chained to
 * *chain; *chain becomes the pointer to it.  Returns its size. */
uint32_t l2_lb_encode(uint8_t *dst, const struct l2dev *d, uint64_t lpos,
		      const struct l2_lbent *ents, uint32_t n, struct l2_lbptr *chain);
/* Whether an entry of a log block living at lb_lpos is usable: in the device's
 * valid window, before its log block, inside one lap of the ring. */
int l2_lbent_valid(const struct l2dev *d, const struct l2_lbent *e, uint64_t lb_lpos, uint32_t max_buf);
enum l2_walk {
	L2_WALK_END,       /* the chain was walked to its end */
	L2_WALK_STOPPED,   /* visit returned 0 */
	L2_WALK_ASTRAY,    /* a pointer out of place (size, alignment, past the ring) */
	L2_WALK_IO_ERROR,  /* a block could not be read */
	L2_WALK_BAD_BLOCK, /* a block's checksum or header did not check out */
};
/* Walks d's log chain from its newest block back, calling visit with every
 * block that checks out (p: the block, h: its header) until it returns 0. */
enum l2_walk l2_log_walk(struct l2dev *d, int (*visit)(void *ctx, const uint8_t *p, const struct l2_lbhdr *h),
			 void *ctx);

#endif
