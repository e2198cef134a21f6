/* l2arc_impl.h — L2ARC internals shared by l2arc.c (index, staging, reads,
 * feed) and l2arc_log.c (on-device superblock and log blocks, rebuild).
 *
 * Device layout: [0, 4K) superblock; [4K, end) the ring.  Positions in the
 * ring are logical (lpos, only ever growing); phys = ring_start + lpos % ring_len,
 * and a write that would cross the ring's end skips to the next lap.  Data
 * below evict_lpos may have been overwritten.  Buffers sit on 512-byte
 * boundaries inside a feed write; each feed write starts 4 KiB aligned. */
#ifndef ENGINE_L2ARC_IMPL_H
#define ENGINE_L2ARC_IMPL_H

#include <pthread.h>

#include "cksum.h"
#include "l2arc.h"
#include "tierdev.h"

#define L2_SECTOR      512u
#define L2_NIL         UINT32_MAX
#define L2_CHUNK_SHIFT 12              /* headers allocated 4096 at a time */
#define L2_CHUNK       (1u << L2_CHUNK_SHIFT)
#define L2_MAX_BUF     (8u << 20)      /* psize/lsize fit 24 bits */
#define L2_MAX_RING    ((uint64_t)UINT32_MAX * L2_SECTOR) /* daddr in sectors: 2 TiB */
#define L2_STAGE_HASH  1024u
#define L2_TOMB_HASH   1024u
#define L2_TOMB_MAX    65536u          /* invalidations remembered during a rebuild */
#define L2_LB_MAX_ENTRIES 1024u

#define L2F_COMPRESSED 0x1

/* One cached buffer: 72 bytes. */
struct l2hdr {
	struct arc_key key;
	struct cksum ck;       /* fletcher4 of the asize bytes on the device */
	uint32_t daddr;        /* device offset in sectors */
	uint32_t lsize : 24, dev : 8;
	uint32_t psize : 24, flags : 8;
	uint32_t hnext;        /* hash chain; free list when free */
	uint32_t prev, next;   /* the device's list, oldest to newest */
};

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

/* A staged copy of an evicted record. */
struct l2stage {
	struct l2stage *prev, *next; /* FIFO (not linked while in flight) */
	struct l2stage *hnext;       /* staged-key hash */
	struct arc_key key;
	uint32_t size;
	int inflight, cancelled;
	uint8_t data[];
};

struct l2tomb {
	struct l2tomb *next;
	struct arc_key key;
};

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

struct l2arc {
	struct l2arc_config cfg;
	pthread_mutex_t lock;       /* everything below */
	pthread_cond_t feed_cv, done_cv;
	int enabled, compress, stop, kick;
	int feeding;                /* a feed holds a batch taken from staging */
	struct devmodel *model;
	uint64_t read_delay_ns;     /* fault injection: added to every device read */
	uint64_t feed_cycles;
	pthread_t feed_thread;

	struct l2dev devs[L2ARC_MAX_DEVS];
	uint32_t ndevs, next_dev;
	int rebuilding;             /* devices rebuilding */

	/* headers */
	struct l2hdr **chunks;
	uint32_t nchunks, free_head, nlive;
	uint32_t *buckets;
	uint32_t nbuckets;

	/* staging */
	struct l2stage *stage_head, *stage_tail;
	struct l2stage *stage_hash[L2_STAGE_HASH];
	uint64_t stage_cap;

	/* invalidations during a rebuild */
	struct l2tomb *tomb_hash[L2_TOMB_HASH];
	uint32_t ntombs;
	int tomb_overflow;

	struct l2arc_stats st;
};

static inline struct l2hdr *l2_hdr(struct l2arc *l2, uint32_t i)
{
	return &l2->chunks[i >> L2_CHUNK_SHIFT][i & (L2_CHUNK - 1)];
}
static inline uint64_t l2_phys(const struct l2dev *d, uint64_t lpos)
{
	return d->ring_start + lpos % d->ring_len;
}
static inline int l2_key_eq(struct arc_key a, struct arc_key b)
{
	return a.objid == b.objid && a.blkid == b.blkid;
}
uint64_t l2_key_hash(struct arc_key k);

/* l2arc.c, under l2->lock */
uint32_t l2_lookup(struct l2arc *l2, struct arc_key key);
struct l2stage *l2_stage_find(struct l2arc *l2, struct arc_key key);
int l2_tomb_has(struct l2arc *l2, struct arc_key key);
void l2_tombs_clear(struct l2arc *l2);
/* New header at the oldest end of dev's list (rebuild) or the newest (feed). */
void l2_hdr_add(struct l2arc *l2, struct l2dev *d, const struct l2hdr *h, int oldest);

/* l2arc_log.c */
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

struct l2_rebuild_arg { struct l2arc *l2; struct l2dev *dev; };

#endif
