/* blkmap.h — a file's records: a sparse radix tree from record number to the
 * record's block pointer and dirty buffer, so that memory follows the records
 * written, never the offset (a 1-byte write at 1 TiB costs one leaf and one
 * path of interior nodes).  Each level resolves BLKMAP_BITS of the record
 * number; the tree grows in height as larger record numbers arrive.
 * Locking is the caller's (the owning object's lock). */
#ifndef ENGINE_BLKMAP_H
#define ENGINE_BLKMAP_H

#include <stdint.h>

#include "pool.h"

#define BLKMAP_BITS 6
#define BLKMAP_FANOUT (1u << BLKMAP_BITS)

/* One record.  Empty (a hole) when bp.psize == 0 and dirty == NULL. */
struct blkrec {
	struct blkptr bp;  /* where the synced record lives (psize 0: nowhere) */
	uint8_t *dirty;    /* dirty buffer of recordsize bytes, or NULL */
};

struct blkmap {
	void *root;        /* interior node, or a leaf when height == 1 */
	uint32_t height;   /* 0: empty; covers record numbers < FANOUT^height */
};

/* The record, or NULL (or an empty record) where none is stored. */
struct blkrec *blkmap_find(const struct blkmap *m, uint64_t blkid);
/* The record, added (empty) when missing. */
struct blkrec *blkmap_get(struct blkmap *m, uint64_t blkid);
/* Calls fn on every non-empty record with number >= from, in ascending
 * order, while fn returns 0 (its return value is returned).  fn may change
 * or empty the record it is given; the tree's shape does not change, so a
 * walk needs only the lock its fn needs. */
int blkmap_walk(struct blkmap *m, uint64_t from,
		int (*fn)(uint64_t blkid, struct blkrec *r, void *ctx), void *ctx);
/* Frees empty leaves and nodes (the caller excludes every other user). */
void blkmap_prune(struct blkmap *m);
/* Frees the tree (the dirty buffers are the caller's to free first). */
void blkmap_free(struct blkmap *m);

#endif
