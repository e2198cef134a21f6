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
