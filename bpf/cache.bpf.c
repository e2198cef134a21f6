/* cache.bpf.c — the cache tiers below the ARC: the engine's strata:l2arc_read,
 * strata:l2arc_write and strata:zil_commit USDT probes (struct strata_tier_io) feed
 * l2arc.latency (by op read/write or file) and zil.latency (bpf/aggregate.h).
 * The ARC hit/miss outcome rides on the nfs_op probe: see nfs.bpf.c. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "strata_probes.h"
#include "llhist.h"
#include "aggregate.h"

char LICENSE[] SEC("license") = "GPL";

static __always_inline int tier_io(void *arg, __u32 op, __u32 stat)
{
	struct strata_tier_io io;
	struct agg_event *ev;
	__u64 now = bpf_ktime_get_ns();

	if (bpf_probe_read_user(&io, sizeof(io), arg)) {
		agg_stat_add(AGG_STATS_DROPS, 1);
		return 0;
	}
	ev = agg_event_get();
	if (!ev)
		return 0;
	*(__u32 *)ev->dims[AGG_DIM_OP] = op;
	*(__u64 *)ev->dims[AGG_DIM_FILE] = io.file_id;
	if (io.latency_ns)
		ev->latency_ns = io.latency_ns;
	else
		ev->latency_ns = now > io.start_ns ? now - io.start_ns : 0;
	ev->bytes = io.bytes;
	ev->now_ns = now;
	ev->stats_mask = 1u << stat;
	agg_event_apply(ev);
	return 0;
}

SEC("usdt")
int BPF_USDT(l2arc_read, void *arg)
{
	return tier_io(arg, AGG_L2ARC_OP_READ, AGG_STAT_L2ARC_LATENCY);
}

SEC("usdt")
int BPF_USDT(l2arc_write, void *arg)
{
	return tier_io(arg, AGG_L2ARC_OP_WRITE, AGG_STAT_L2ARC_LATENCY);
}

SEC("usdt")
int BPF_USDT(zil_commit, void *arg)
{
	return tier_io(arg, 0, AGG_STAT_ZIL_LATENCY); /* zil.latency has no op dimension */
}
