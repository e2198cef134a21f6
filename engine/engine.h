/* engine.h — the running server's shared state: pool, ARC, objects, txg
 * sync, exports, write verifier and the counters `strata-engine stats` reads. */
#ifndef ENGINE_ENGINE_H
#define ENGINE_ENGINE_H

#include <stdint.h>

#include "arc.h"
#include "export.h"
#include "objset.h"
#include "pool.h"
#include "txg.h"

#define NFS3_NPROCS 22
#define MOUNT3_NPROCS 6

struct engine_counters { /* all updated with relaxed atomics */
	uint64_t nfs_ops[NFS3_NPROCS];
	uint64_t mount_ops[MOUNT3_NPROCS];
	uint64_t nfs_errors;       /* replies with status != NFS3_OK */
	uint64_t rpc_rejects;      /* garbage args, unknown prog/proc, bad auth */
	uint64_t read_bytes, write_bytes;
	uint64_t connections, connections_open;
	uint64_t bad_records;      /* oversized/truncated records (connection closed) */
	/* the front-end's limits (net.h) */
	uint64_t net_refused;          /* connections refused: max_conns or no descriptor left */
	uint64_t net_refused_per_addr; /* connections refused: max_conns_per_addr */
	uint64_t net_evicted;          /* idle connections closed to admit a new one */
	uint64_t net_idle_closed;      /* closed after idle_timeout */
	uint64_t net_record_timeouts;  /* closed with a record unfinished after record_timeout */
	uint64_t net_record_waits;     /* reads paused: unfinished records reached record_mem */
	uint64_t net_backpressure;     /* reads paused: unsent replies reached reply_queue */
	uint64_t unfinished_record_bytes, queued_reply_bytes; /* gauges */
	/* the strata:nfs_ops probe, while a tracer listens (engine/net.c) */
	uint64_t nfs_probe_hits;       /* batches fired */
	uint64_t nfs_probe_ns;         /* the firing threads' clock across those hits: trap, kernel, BPF */
};

struct engine {
	struct pool *pool;
	arc_t *arc;
	uint64_t arc_max;
	struct objset *os;
	struct txg txg;
	struct export *exports;
	int nexports;
	uint8_t write_verf[8]; /* changes on every start */
	uint64_t start_ns;
	struct engine_counters ctr;
};

extern struct engine g_engine;

#define CTR_INC(field) __atomic_add_fetch(&g_engine.ctr.field, 1, __ATOMIC_RELAXED)
#define CTR_ADD(field, n) __atomic_add_fetch(&g_engine.ctr.field, (n), __ATOMIC_RELAXED)

#endif
