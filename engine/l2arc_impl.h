/* l2arc_impl.h — L2ARC internals of l2arc.c (index, staging, reads, feed,
 * rebuild): buffer headers, staged copies, the cache's state.  The device and
 * its log are l2arc_log.h's. */
#ifndef ENGINE_L2ARC_IMPL_H
#define ENGINE_L2ARC_IMPL_H

#include <pthread.h>

#include "l2arc.h"
#include "l2arc_log.h"

#define L2_NIL         UINT32_MAX
#define L2_CHUNK_SHIFT 12              /* headers allocated 4096 at a time */
#define L2_CHUNK       (1u << L2_CHUNK_SHIFT)
#define L2_MAX_BUF     (8u << 20)      /* psize/lsize fit 24 bits */
#define L2_MAX_RING    ((uint64_t)UINT32_MAX * L2_SECTOR) /* daddr in sectors: 2 TiB */
#define L2_STAGE_HASH  1024u
#define L2_TOMB_HASH   1024u
#define L2_TOMB_MAX    65536u          /* invalidations remembered during a rebuild */

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


struct l2_rebuild_arg { struct l2arc *l2; struct l2dev *dev; };

#endif
