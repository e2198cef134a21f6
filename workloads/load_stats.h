/* load_stats.h — client-side counts and llhist latencies per RPC procedure. */
#ifndef STRATA_LOAD_STATS_H
#define STRATA_LOAD_STATS_H

#include <stdint.h>
#include <stdio.h>

/* NFSv3 procedures 0..21 keep their numbers; MOUNT3 MNT is counted apart. */
#define LOAD_NFS_PROCS 22
#define LOAD_PROC_MNT  22
#define LOAD_NPROCS    23

struct op_latency {
	uint64_t count, min, max, sum;
	uint64_t *buckets; /* LLHIST_NBUCKETS counts, allocated on first use */
};

struct phase_stats {
	uint64_t ops[LOAD_NPROCS];     /* replies received, by procedure */
	uint64_t bytes_read, bytes_written;
	uint64_t errors;               /* replies with a non-OK status + RPCs without reply */
	struct op_latency lat[LOAD_NPROCS];
	uint64_t *per_sec;             /* replies per second of the run (run phase only) */
	uint32_t nsec;
};

/* Name of an NFSv3 procedure number, or "mnt" for LOAD_PROC_MNT. */
const char *load_proc_name(int proc);

/* Allocates the per-second series (run phase). Returns -1 on ENOMEM. */
int stats_init_series(struct phase_stats *s, uint32_t nsec);
/* One reply of procedure proc after lat_ns; sec is its second of the run (or -1). */
void stats_record(struct phase_stats *s, int proc, uint64_t lat_ns, int64_t sec);
/* Adds src into dst (dst's series must be at least as long). */
void stats_merge(struct phase_stats *dst, const struct phase_stats *src);
void stats_free(struct phase_stats *s);
uint64_t stats_total_ops(const struct phase_stats *s);

/* JSON fragments: {"read":N,...} for NFS procedures with replies (mnt excluded). */
void stats_json_ops(FILE *f, const struct phase_stats *s);
/* {"read":{"count":..,"min":..,"max":..,"mean":..,"p50":..,"p99":..,"p999":..,
 *          "llhist":{"<bucket>":count,...}},...} */
void stats_json_latency(FILE *f, const struct phase_stats *s);

#endif
