/* arc.h — the engine's Adaptive Replacement Cache (records in DRAM).
 *
 * MRU/MFU lists with ghost lists and an adaptive target p (Megiddo & Modha,
 * FAST 2003), bounded by a byte budget c = max_bytes.  Thread-safe: lookups
 * go through a hash table with sharded locks; list changes take the ARC lock.
 * Buffers returned by arc_lookup/arc_insert are held (refcounted) and stay
 * valid until arc_release, even if evicted or invalidated meanwhile.
 */
#ifndef STRATA_ARC_H
#define STRATA_ARC_H

#include <stdbool.h>
#include <stdint.h>

typedef struct arc arc_t;
typedef struct arc_buf arc_buf_t;            /* held (refcounted) cached record */
struct arc_key { uint64_t objid; uint64_t blkid; };
enum arc_policy { ARC_POLICY_ARC, ARC_POLICY_LRU };

arc_t *arc_create(uint64_t max_bytes, enum arc_policy policy);
void arc_destroy(arc_t *arc);
/* hit: held buf; miss: NULL (ghost hits adapt p) */
arc_buf_t *arc_lookup(arc_t *arc, struct arc_key key);
/* whether the record is cached now; no statistics, no list moves */
bool arc_cached(arc_t *arc, struct arc_key key);
/* copies data; returns held buf (existing one if raced); a record of 0 bytes
 * or more than max_bytes is returned as a held buf but not cached; NULL only
 * when out of memory */
arc_buf_t *arc_insert(arc_t *arc, struct arc_key key, const void *data, uint32_t size);
const void *arc_buf_data(const arc_buf_t *buf);
uint32_t arc_buf_size(const arc_buf_t *buf);
void arc_release(arc_buf_t *buf);
void arc_invalidate(arc_t *arc, struct arc_key key);

struct arc_stats {
	uint64_t hits, misses, mru_hits, mfu_hits, mru_ghost_hits, mfu_ghost_hits,
		size, c, p, evictions, hdr_size, data_size;
};
void arc_get_stats(arc_t *arc, struct arc_stats *out);

/* Extras. */

/* Data-less access for the trace simulator: a lookup that, on a miss, inserts
 * a record of `size` bytes without data.  Returns true on a hit.  Exactly one
 * step of the paper's algorithm per call.  Do not mix with arc_lookup on the
 * same keys (a lookup treats data-less records as misses; arc_insert replaces
 * them). */
bool arc_access(arc_t *arc, struct arc_key key, uint32_t size);
/* List sizes and the exact target p, for tests and arcstats-style gauges. */
struct arc_lists {
	uint64_t mru_bytes, mfu_bytes, mru_ghost_bytes, mfu_ghost_bytes;
	uint64_t mru_count, mfu_count, mru_ghost_count, mfu_ghost_count;
	uint64_t c;
	double p;
};
void arc_get_lists(arc_t *arc, struct arc_lists *out);
/* Hint: start loading what a coming lookup/access of key will touch. */
void arc_prefetch(arc_t *arc, struct arc_key key);
/* Change the byte budget c; evicts down to it (p is clamped to [0, c]). */
void arc_set_max(arc_t *arc, uint64_t max_bytes);
/* Called (under the ARC lock: keep it short, do not call back into the ARC)
 * for every resident record leaving the cache by eviction, with its data
 * (NULL for data-less records).  Feeds the L2ARC. */
typedef void (*arc_evict_fn)(void *ctx, struct arc_key key, const void *data, uint32_t size);
void arc_set_evict_hook(arc_t *arc, arc_evict_fn fn, void *ctx);

#endif /* STRATA_ARC_H */
