/* nfs.bpf.c — the NFS layer and the ARC outcome: the engine's strata:nfs_ops USDT probe
 * (one hit per batch of completed NFS/MOUNT operations, engine/strata_probes.h) feeds
 * nfs.ops, nfs.latency, nfs.size and arc.accesses, broken down by op, client, tier or
 * file (bpf/aggregate.h). Each operation carries its own start and end time. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "strata_probes.h"
#include "llhist.h"
#include "aggregate.h"

char LICENSE[] SEC("license") = "GPL";

/* The deepest tier in the bitmask: pool > l2arc > zil > arc; DIRTY counts as arc. */
static __always_inline __u32 deepest_tier(__u8 tiers)
{
	if (tiers & STRATA_TIER_POOL)
		return AGG_TIER_POOL;
	if (tiers & STRATA_TIER_L2ARC)
		return AGG_TIER_L2ARC;
	if (tiers & STRATA_TIER_ZIL)
		return AGG_TIER_ZIL;
	if (tiers & (STRATA_TIER_ARC | STRATA_TIER_DIRTY))
		return AGG_TIER_ARC;
	return AGG_TIER_NONE;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct strata_nfs_batch);
} nfs_batch SEC(".maps");

/* Describes operation i of the batch once and applies it to every slot, counted under
 * the interval of the hit (now: the clock read once for the hit). The event was zeroed
 * once for the hit, which set the fields every operation shares; an operation sets its
 * own fields whole, the keys only of the dimensions some slot uses (agg_dims: the others
 * are read by no slot). A global function: the verifier checks it once, not once per
 * operation. */
__noinline int nfs_op_apply(__u32 i, __u64 now)
{
	__u32 zero = 0;
	struct strata_nfs_batch *b = bpf_map_lookup_elem(&nfs_batch, &zero);
	struct agg_event *ev = agg_event_reuse();
	struct strata_nfs_op *op;

	if (!b || !ev || i >= STRATA_NFS_BATCH)
		return 1;
	barrier_var(i); /* the mask stays where i is used: the verifier sees the bound */
	op = &b->ops[i & (STRATA_NFS_BATCH - 1)];
	*(__u32 *)ev->dims[AGG_DIM_OP] = (op->prog == STRATA_PROG_MOUNT ? 0x10000u : 0) | op->proc;
	if (agg_dim_used(AGG_DIM_CLIENT)) {
		if (op->family == 2) { /* AF_INET: ::ffff:a.b.c.d */
			*(__u64 *)ev->dims[AGG_DIM_CLIENT] = 0;
			*(__u32 *)&ev->dims[AGG_DIM_CLIENT][8] = 0;
			ev->dims[AGG_DIM_CLIENT][10] = 0xff;
			ev->dims[AGG_DIM_CLIENT][11] = 0xff;
			__builtin_memcpy(&ev->dims[AGG_DIM_CLIENT][12], op->client, 4);
		} else {
			__builtin_memcpy(ev->dims[AGG_DIM_CLIENT], op->client, 16);
		}
	}
	if (agg_dim_used(AGG_DIM_TIER))
		*(__u32 *)ev->dims[AGG_DIM_TIER] = deepest_tier(op->tiers);
	if (agg_dim_used(AGG_DIM_FILE))
		*(__u64 *)ev->dims[AGG_DIM_FILE] = op->file_id;
	ev->latency_ns = op->end_ns > op->start_ns ? op->end_ns - op->start_ns : 0;
	ev->bytes = op->bytes;
	ev->hits = op->arc_hits;
	ev->misses = op->arc_misses;
	ev->now_ns = now;
	agg_event_apply_pending(ev);
	return 0;
}

SEC("usdt")
int BPF_USDT(nfs_ops, struct strata_nfs_batch *arg)
{
	__u32 zero = 0, n;
	struct strata_nfs_batch *b = bpf_map_lookup_elem(&nfs_batch, &zero);
	struct agg_event *ev = agg_event_get();
	__u64 now = bpf_ktime_get_ns();

	if (!b || !ev)
		return 0;
	ev->stats_mask = 1u << AGG_STAT_NFS_OPS | 1u << AGG_STAT_NFS_LATENCY |
			 1u << AGG_STAT_NFS_SIZE | 1u << AGG_STAT_ARC_ACCESSES;
	if (bpf_probe_read_user(&b->count, sizeof(b->count), &arg->count)) {
		agg_stat_add(AGG_STATS_DROPS, 1);
		return 0;
	}
	n = b->count;
	if (n == 0 || n > STRATA_NFS_BATCH ||
	    bpf_probe_read_user(b->ops, n * sizeof(b->ops[0]), arg->ops)) {
		agg_stat_add(AGG_STATS_DROPS, n && n <= STRATA_NFS_BATCH ? n : 1);
		return 0;
	}
	for (__u32 i = 0; i < STRATA_NFS_BATCH; i++) {
		if (i >= n)
			break;
		nfs_op_apply(i, now);
	}
	agg_pending_flush_all();
	return 0;
}
