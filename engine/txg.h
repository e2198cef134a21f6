/* txg.h — transaction groups: the periodic sync that writes dirty records
 * copy-on-write, then the metadata block, then one of two alternating
 * checksummed uberblocks (slot txg % 2 on vdev 0), so a crash mid-sync leaves
 * the previous txg readable.  Also the pool import (newest valid uberblock). */
#ifndef ENGINE_TXG_H
#define ENGINE_TXG_H

#include <pthread.h>
#include <stdint.h>

#include "objset.h"

struct txg {
	struct objset *os;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t kick_cv, done_cv;
	int kick, stop, running;
	uint64_t interval_ms;
	uint64_t dirty_max;
	uint64_t synced_txg;
	uint64_t attempts, failures; /* sync attempts and failed ones */
	struct pool_extent meta;     /* the current metadata block */
	uint64_t syncs, sync_ns, synced_bytes;
	/* Called from the syncing thread after each txg is on disk (the ZIL
	 * reclaims its log blocks there).  NULL: none. */
	void (*synced_fn)(void *ctx, uint64_t txg);
	void *synced_ctx;
};

/* Loads the newest valid txg into os (an empty pool loads nothing). */
int txg_import(struct txg *t, struct objset *os, char *err, size_t errsz);
int txg_start(struct txg *t, uint64_t interval_ms, uint64_t dirty_max);
/* Final sync and thread exit; returns 0 if the last sync succeeded. */
int txg_stop(struct txg *t);
/* Forces a sync of everything up to `txg`; 0 once on disk, -EIO on failure. */
int txg_wait_synced(struct txg *t, uint64_t txg);
/* Blocks writers while dirty data exceed dirty_max (until a sync frees it). */
void txg_throttle(struct txg *t);
/* One sync, from the caller's thread (used by txg_stop and tests). */
int txg_sync(struct txg *t);

#endif
