/* zil.h — the ZFS-style intent log: makes synchronous writes (DATA_SYNC /
 * FILE_SYNC) and COMMIT durable before the reply, without waiting for the
 * pool's txg sync.  Records {objid, offset, length, data, txg} go to a log
 * device (a separate SLOG) or a region of a file in one aligned write plus
 * fdatasync per log block.  Concurrent committers share writes: a committer
 * arriving while a write is in flight queues its records and is carried by
 * the next write (like zil_commit waiters in ZFS).
 *
 * Layout of the region: [0, 4K) superblock (the checkpoint: the first log
 * block still needed, its sequence number and nonce), then a ring of log
 * blocks, each checksummed, numbered and carrying the random nonce the next
 * block must have (so stale blocks beyond a damaged tail never rejoin the
 * chain); replay walks from the checkpoint and stops at the first invalid
 * block (the tail).
 *
 * Life cycle: zil_open (finds the blocks since the checkpoint) ->
 * zil_replay(synced_txg of the imported pool, callback applies each record to
 * the open txg) -> txg sync -> zil_checkpoint(synced txg) (reclaims the
 * replayed blocks) -> serve: zil_commit on sync writes and COMMIT, and
 * zil_checkpoint after every txg sync.  UNSTABLE writes are not logged. */
#ifndef ENGINE_ZIL_H
#define ENGINE_ZIL_H

#include <stddef.h>
#include <stdint.h>

#include "tierstats.h"

struct zil_record {
	uint64_t objid, offset;
	uint64_t txg;       /* the open txg the write went into */
	uint32_t length;
	const void *data;   /* length bytes */
};

struct zil_stats {
	uint64_t zil_commit_count;   /* zil_commit calls */
	uint64_t zil_itx_count;      /* records committed */
	uint64_t zil_commit_writes;  /* log block writes (fewer than commits: batching) */
	uint64_t zil_commit_bytes;   /* bytes written to the log */
	uint64_t zil_commit_errors;  /* commits that failed (caller fell back to a txg sync) */
	uint64_t zil_replayed;       /* records replayed */
	uint64_t zil_replay_skipped; /* records already in the pool at replay */
	uint64_t zil_checkpoints;    /* checkpoints that reclaimed space */
	uint64_t zil_log_used;       /* bytes between checkpoint and hand */
	uint64_t zil_log_size;       /* ring bytes */
};
extern const struct tier_stat_field zil_stat_fields[];
extern const size_t zil_stat_nfields;

struct zil;

/* Opens the log in [offset, offset + size) of path (size 0: to its end); a
 * missing file is created with offset + size bytes.  offset/size: 4 KiB
 * multiples.  owner: the pool's guid; a region that is unformatted or holds
 * another owner's log is formatted (a log never replays into another pool).
 * NULL with err set. */
struct zil *zil_open(const char *path, uint64_t offset, uint64_t size, uint64_t owner, char *err,
		     size_t errsz);
void zil_close(struct zil *z);

/* Durable on return 0.  -ENOSPC (log full) or -EIO: the records are not
 * logged; the caller makes them durable with a txg sync instead. */
int zil_commit(struct zil *z, const struct zil_record *recs, uint32_t n);

/* Calls fn for every logged record with txg > synced_txg, in log order.
 * Returns the number replayed, or fn's non-zero return / -errno. */
typedef int (*zil_replay_fn)(void *ctx, const struct zil_record *rec);
int zil_replay(struct zil *z, uint64_t synced_txg, zil_replay_fn fn, void *ctx);

/* The pool has synced synced_txg: frees log blocks holding only records of
 * txgs <= synced_txg, and once zil_replay has run the blocks it replayed
 * (never before: unreplayed blocks stay).  0 or -errno. */
int zil_checkpoint(struct zil *z, uint64_t synced_txg);

void zil_get_stats(struct zil *z, struct zil_stats *out);
/* Latency model applied to every log write (devmodel.h; NULL: none).  Set
 * before use; the caller keeps it alive until zil_close. */
struct devmodel;
void zil_set_model(struct zil *z, struct devmodel *m);
/* Fault injection: ns added to every log write (0: none). */
void zil_set_write_delay(struct zil *z, uint64_t ns);

#endif
