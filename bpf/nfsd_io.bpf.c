/* nfsd_io.bpf.c — the layer under the kernel nfsd: nfsd's reads and writes of files, the
 * VFS calls under NFS READs and WRITEs, fed to nfsd.io.ops, nfsd.io.latency and
 * nfsd.io.size by op (read, write), client and export (bpf/aggregate.h). A read served
 * from the page cache takes microseconds here, one that waits for the disk the disk's
 * time: the two bands under nfsd.latency.
 *
 * nfsd's own tracepoints bracket each call, in the nfsd thread, for NFSv3 and NFSv4 alike:
 * a read starts at nfsd:nfsd_read_splice or nfsd:nfsd_read_vector (the two ways nfsd
 * reads) and ends at nfsd:nfsd_read_io_done; a write starts at nfsd:nfsd_write_opened
 * and ends at nfsd:nfsd_write_io_done (a stable write's sync included). Every one has
 * (struct svc_rqst *, struct svc_fh *, offset, count) as arguments; at io_done, count is
 * what was read or written. The start time waits in a map keyed by thread. A call that
 * fails ends at nfsd_read_err / nfsd_write_err instead and is not counted (its start is
 * overwritten by the thread's next one). raw_tp programs: the arguments are read as
 * words, the request through CO-RE helper reads (bpf/nfsd_request.h), so no module BTF is
 * needed; the collector attaches them together (collectors/layers/nfsd_io.c).
 *
 * Tier per call (nfsd.io.*[tier]): bpf/tier.h, the call being the op: its start record is
 * marked by the tier programs, which the collector attaches only while a dataset needs the
 * tier, the wait on fentry where the kernel allows. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "llhist.h"
#include "aggregate.h"
#include "nfsd_request.h"
#include "tier.h"

char LICENSE[] SEC("license") = "GPL";

struct io_start {
	__u64 ns;
	__u32 op;
	__u32 disk; /* block I/O issued or waited for since the start: tier disk */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096); /* nfsd threads: one call in flight each */
	__type(key, __u32);
	__type(value, struct io_start);
} nfsd_io_start SEC(".maps");

static __always_inline int io_start(__u32 op)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct io_start s = { .ns = bpf_ktime_get_ns(), .op = op };

	bpf_map_update_elem(&nfsd_io_start, &tid, &s, BPF_ANY);
	return 0;
}

static __always_inline int io_done(struct bpf_raw_tracepoint_args *ctx, __u32 op)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct io_start *s = bpf_map_lookup_elem(&nfsd_io_start, &tid);
	struct agg_event *ev;
	__u64 now = bpf_ktime_get_ns(), start;
	__u32 tier;

	if (!s)
		return 0;
	start = s->ns;
	tier = s->disk ? AGG_TIER_DISK : AGG_TIER_CACHE;
	if (s->op != op) { /* a start of the other kind left by a failed call */
		bpf_map_delete_elem(&nfsd_io_start, &tid);
		return 0;
	}
	bpf_map_delete_elem(&nfsd_io_start, &tid);
	ev = agg_event_reuse(); /* every field a slot uses is written below; the others stay zero or stale */
	if (!ev)
		return 0;
	*(__u32 *)ev->dims[AGG_DIM_OP] = op;
	*(__u32 *)ev->dims[AGG_DIM_TIER] = tier;
	set_client(ev, (struct svc_rqst___nfsd *)ctx->args[0]);
	if (agg_dim_used(AGG_DIM_EXPORT))
		set_export(ev, (const void *)ctx->args[1]);
	ev->latency_ns = now > start ? now - start : 0;
	ev->now_ns = now;
	ev->bytes = (__u32)ctx->args[3];
	ev->stats_mask = 1u << AGG_STAT_NFSD_IO_OPS | 1u << AGG_STAT_NFSD_IO_LATENCY | 1u << AGG_STAT_NFSD_IO_SIZE;
	agg_event_apply(ev);
	return 0;
}

SEC("raw_tp/nfsd_read_splice")
int nfsd_read_splice(struct bpf_raw_tracepoint_args *ctx)
{
	return io_start(AGG_NFS_OP_READ);
}

SEC("raw_tp/nfsd_read_vector")
int nfsd_read_vector(struct bpf_raw_tracepoint_args *ctx)
{
	return io_start(AGG_NFS_OP_READ);
}

SEC("raw_tp/nfsd_read_io_done")
int nfsd_read_io_done(struct bpf_raw_tracepoint_args *ctx)
{
	return io_done(ctx, AGG_NFS_OP_READ);
}

SEC("raw_tp/nfsd_write_opened")
int nfsd_write_opened(struct bpf_raw_tracepoint_args *ctx)
{
	return io_start(AGG_NFS_OP_WRITE);
}

SEC("raw_tp/nfsd_write_io_done")
int nfsd_write_io_done(struct bpf_raw_tracepoint_args *ctx)
{
	return io_done(ctx, AGG_NFS_OP_WRITE);
}

/* The tier programs (bpf/tier.h): the thread's call in flight, if any, did block I/O. */
static __always_inline int tier_gate(void)
{
	return 1;
}

static __always_inline int tier_mark(int hashed)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct io_start *s = bpf_map_lookup_elem(&nfsd_io_start, &tid);

	if (s)
		s->disk = 1;
	return 0;
}

TIER_PROGRAMS(nfsd_io_tier, tier_gate, tier_mark)
TIER_FENTRY_PROGRAMS(nfsd_io_tier, tier_mark)
