/* nfs.bpf.c — the NFS layer and the ARC outcome: the engine's strata:nfs_op USDT probe
 * (one hit per NFS/MOUNT operation) feeds nfs.ops, nfs.latency, nfs.size and
 * arc.accesses, broken down by op, client, tier or file (bpf/aggregate.h). */
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

SEC("usdt")
int BPF_USDT(nfs_op, void *arg)
{
	struct strata_nfs_op op;
	struct agg_event *ev;
	__u64 now = bpf_ktime_get_ns();

	if (bpf_probe_read_user(&op, sizeof(op), arg)) {
		agg_stat_inc(AGG_STATS_DROPS);
		return 0;
	}
	ev = agg_event_get();
	if (!ev)
		return 0;
	*(__u32 *)ev->dims[AGG_DIM_OP] = (op.prog == STRATA_PROG_MOUNT ? 0x10000u : 0) | op.proc;
	if (op.family == 2) { /* AF_INET: ::ffff:a.b.c.d */
		ev->dims[AGG_DIM_CLIENT][10] = 0xff;
		ev->dims[AGG_DIM_CLIENT][11] = 0xff;
		__builtin_memcpy(&ev->dims[AGG_DIM_CLIENT][12], op.client, 4);
	} else {
		__builtin_memcpy(ev->dims[AGG_DIM_CLIENT], op.client, 16);
	}
	*(__u32 *)ev->dims[AGG_DIM_TIER] = deepest_tier(op.tiers);
	*(__u64 *)ev->dims[AGG_DIM_FILE] = op.file_id;
	ev->latency_ns = now > op.start_ns ? now - op.start_ns : 0;
	ev->bytes = op.bytes;
	ev->hits = op.arc_hits;
	ev->misses = op.arc_misses;
	ev->stats_mask = 1u << AGG_STAT_NFS_OPS | 1u << AGG_STAT_NFS_LATENCY |
			 1u << AGG_STAT_NFS_SIZE | 1u << AGG_STAT_ARC_ACCESSES;
	agg_event_apply(ev);
	return 0;
}
