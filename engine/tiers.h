/* tiers.h — the engine's optional tiers, wired into the serving path: cache
 * devices (L2ARC, fed from the ARC's eviction hook), the intent log (a
 * separate log device, or the region mkpool keeps at the end of the first
 * vdev), device latency models for vdevs, cache and log devices, and the
 * fault-injection delays that `strata-engine ctl inject-delay` sets.
 *
 * Stable writes: WRITE with DATA_SYNC/FILE_SYNC logs the bytes written, under
 * the object's lock (log order = apply order); COMMIT logs the file's dirty
 * records under txg_lock shared, then waits for a txg sync already past its
 * pass over the objects (records it took off the dirty list are durable only
 * once it ends).  Both fall back to a txg sync when there is no log or it is
 * full, and COMMIT when the file has more than 2 MiB dirty.
 * At start the log is replayed into the open txg before anything is served. */
#ifndef ENGINE_TIERS_H
#define ENGINE_TIERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "objset.h"

#define TIERS_MAX_CACHE 8

struct tier_opts {
	const char *cache[TIERS_MAX_CACHE]; /* PATH[:SIZE] cache devices */
	int ncache;
	const char *log;                    /* PATH[:SIZE] separate log device (SLOG) */
	const char *vdev_model, *cache_model, *log_model; /* devmodel specs */
	bool l2arc_off;                     /* start with the L2ARC disabled */
	bool l2arc_nocompress;              /* no LZ4 for new L2ARC buffers */
	bool no_zil;                        /* stable writes wait for a txg sync */
	uint64_t l2arc_write_max;           /* 0: the default */
};

/* After txg_import, before the first sync: opens the devices and models,
 * replays the log into the open txg.  0, or -1 with a one-line err. */
int tiers_setup(const struct tier_opts *o, char *err, size_t errsz);
/* After the final txg sync: stops the feed. */
void tiers_shutdown(void);

/* A stable WRITE's bytes into the log; the caller holds txg_lock shared and
 * the object's lock, so the log's order is the order writes were applied.
 * false: not logged (no log, or full) — the caller waits for a txg sync
 * after dropping its locks. */
bool tiers_log_write(uint64_t objid, uint64_t off, uint32_t len, const void *data, uint64_t txg,
		     struct io_acct *acct);
/* COMMIT of o (no locks held): an nfsstat3; adds the tiers used to acct. */
uint32_t tiers_commit(struct object *o, struct io_acct *acct);

/* The L2ARC (NULL: serve was started without --cache), for ctl.c's switches. */
struct l2arc *tiers_l2arc(void);
/* The fault-injection delay of tier "l2arc", "zil" or "pool": 0; -1 when this
 * engine has no such tier, -2 for another name. */
int tiers_set_delay(const char *tier, uint64_t ns);

/* JSON members ("\"l2arc\":{...},\"zil\":{...},..."), without braces
 * around them, the NFS reply delay (nfs3's) among the delays; malloc'd. */
char *tiers_stats_json(uint64_t nfs_delay_ns);

#endif
