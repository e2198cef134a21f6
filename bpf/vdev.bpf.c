/* vdev.bpf.c — the engine's pool vdevs, as `zpool iostat -w` sees them: the engine's
 * strata:vdev_io_done USDT probe (struct strata_vdev_io, once per vdev read, write or
 * flush) feeds vdev.ops, vdev.latency and vdev.size by vdev and op (bpf/aggregate.h).
 * The latency is the engine's, device model included, so an emulated HDD shows its
 * band here while the block layer below sees only the loop device's own time. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "strata_probes.h"
#include "llhist.h"
#include "aggregate.h"

char LICENSE[] SEC("license") = "GPL";

SEC("usdt")
int BPF_USDT(vdev_io_done, void *arg)
{
	struct strata_vdev_io io;
	struct agg_event *ev;

	if (bpf_probe_read_user(&io, sizeof(io), arg)) {
		agg_stat_add(AGG_STATS_DROPS, 1);
		return 0;
	}
	ev = agg_event_get();
	if (!ev)
		return 0;
	*(__u32 *)ev->dims[AGG_DIM_VDEV] = io.vdev;
	*(__u32 *)ev->dims[AGG_DIM_OP] = io.op;
	ev->latency_ns = io.latency_ns;
	ev->bytes = io.size;
	ev->stats_mask = 1u << AGG_STAT_VDEV_OPS | 1u << AGG_STAT_VDEV_LATENCY | 1u << AGG_STAT_VDEV_SIZE;
	agg_event_apply(ev);
	return 0;
}
