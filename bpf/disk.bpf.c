/* disk.bpf.c — the disk layer: block_rq_issue / block_rq_complete feed disk.ops,
 * disk.latency, disk.queue, disk.size and disk.offset (requests with a position on the
 * device, not flushes), broken down by device or op (bpf/aggregate.h). Counted at
 * completion, like the kernel's /sys/block stats, for requests whose issue was seen
 * (those issued before attaching are not counted).
 *
 * Queue against device time: disk.latency runs from issue (this program's clock at
 * block_rq_issue) to completion, disk.queue from the request's start, the kernel's own
 * start_time_ns read at completion through CO-RE, to issue; the two add up to the
 * request's whole time as /sys/block/DEV/stat sums it. The kernel sets start_time_ns
 * where it keeps I/O stats (the default) or the queue has a scheduler; a request without
 * it is left out of disk.queue. io_start_time_ns is not used: since Linux 6.8 both
 * stamps come from a clock reading cached for the whole plug (blk_time_get_ns), so
 * io_start_time_ns is the plug's first reading, not the issue, and time spent in the plug
 * would count as device time (a loop device's 4k reads: 3.5 % of them a log2 slot later
 * than biolatency's). The pairing map stays, for the issue time and for counting: it
 * tells a request's first completion from a repeated one (flush sequences, parts) and
 * finds the completions the kernel skipped.
 *
 * Two attach flavours of the same code: tp_btf (typed arguments) where the kernel
 * offers it, raw_tp otherwise (the classic tracepoint format carries no request
 * pointer to pair issue with completion). The collector autoloads one flavour.
 * Which argument is the request differs across kernels (5.11 dropped block_rq_issue's
 * request_queue argument): the collector reads the tracepoint prototypes from the
 * kernel BTF and sets issue_rq_arg / complete_rq_arg / requeue_rq_arg before load. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "llhist.h"
#include "aggregate.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 issue_rq_arg = 0;    /* index of struct request * in block_rq_issue */
const volatile __u32 complete_rq_arg = 0; /* ... in block_rq_complete */
const volatile __u32 requeue_rq_arg = 0;  /* ... and in block_rq_requeue */

#define REQ_OP_MASK_BITS 0xff

/* The issue time of each request struct seen, 0 while none is in flight: a request's
 * entry is written in place at every issue and completion (one lockless lookup each), and
 * made only at its first issue. A block queue reuses a fixed set of request structs; those
 * of queues gone since are the least recently used entries, which make room. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, AGG_STARTS_MAX);
	__type(key, __u64);   /* struct request * */
	__type(value, __u64); /* issue time, ns; 0 = not in flight */
} starts SEC(".maps");

/* Kernels before 5.16 keep the disk in request->rq_disk, later ones in request->q->disk. */
struct request___old { struct gendisk *rq_disk; } __attribute__((preserve_access_index));
struct request_queue___new { struct gendisk *disk; } __attribute__((preserve_access_index));
struct request___new { struct request_queue___new *q; } __attribute__((preserve_access_index));

/* The request's start (CLOCK_MONOTONIC ns, 0 where the kernel did not set it). */
struct request___start { __u64 start_time_ns; } __attribute__((preserve_access_index));

/* READ(direct, p, field): a plain load where the verifier knows p's BTF type (tp_btf:
 * several times cheaper than a helper call), bpf_probe_read_kernel otherwise (raw_tp). */
#define READ(direct, p, field) ((direct) ? (p)->field : BPF_CORE_READ(p, field))

static __always_inline struct gendisk *request_disk(void *rq, int direct)
{
	struct request___old *o = rq;
	struct request___new *n = rq;

	if (bpf_core_field_exists(o->rq_disk))
		return READ(direct, o, rq_disk);
	return direct ? n->q->disk : BPF_CORE_READ(n, q, disk);
}

static __always_inline __u32 disk_op(__u32 flags)
{
	__u32 op = flags & REQ_OP_MASK_BITS;
	__u32 fua = 1u << bpf_core_enum_value(enum req_flag_bits, __REQ_FUA);
	__u32 preflush = 1u << bpf_core_enum_value(enum req_flag_bits, __REQ_PREFLUSH);

	switch (op) {
	case 0:
		return AGG_DISK_READ;
	case 1:
		return flags & (fua | preflush) ? AGG_DISK_SYNC : AGG_DISK_WRITE;
	case 2:
		return AGG_DISK_FLUSH;
	case 3:
		return AGG_DISK_DISCARD;
	default:
		return AGG_DISK_OTHER;
	}
}

static __always_inline __u64 request_start(void *rq, int direct)
{
	struct request___start *r = rq;

	return bpf_core_field_exists(r->start_time_ns) ? READ(direct, r, start_time_ns) : 0;
}

static __always_inline void set_device(struct agg_event *ev, struct request *rq, int direct)
{
	struct gendisk *disk = request_disk(rq, direct);

	if (disk) {
		__u32 major = READ(direct, disk, major), minor = READ(direct, disk, first_minor);

		*(__u32 *)ev->dims[AGG_DIM_DEVICE] = major << 20 | minor;
	}
}

/* The previous issue of rq was never seen completing (tags are per device: same disk). */
static __always_inline void count_missed(struct request *rq, int direct)
{
	struct agg_event *ev = agg_event_get();

	if (!ev)
		return;
	set_device(ev, rq, direct);
	*(__u32 *)ev->dims[AGG_DIM_OP] = AGG_DISK_MISSED;
	ev->stats_mask = 1u << AGG_STAT_DISK_OPS;
	agg_event_apply(ev);
}

static __always_inline int on_issue(struct request *rq, int direct)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns(), *start = bpf_map_lookup_elem(&starts, &key);

	if (start) {
		if (*start) /* its previous issue was never seen completing */
			count_missed(rq, direct);
		*start = now;
	} else if (bpf_map_update_elem(&starts, &key, &now, BPF_ANY)) {
		agg_stat_add(AGG_STATS_DROPS, 1);
	}
	return 0;
}

static __always_inline int on_requeue(struct request *rq)
{
	__u64 key = (__u64)rq, *start = bpf_map_lookup_elem(&starts, &key);

	if (start)
		*start = 0;
	return 0;
}

/* Counts a request once, at the first completion after its issue was seen: a request
 * finishing a flush sequence, or completing in parts, passes block_rq_complete again. */
static __always_inline int on_complete(struct request *rq, int direct)
{
	__u64 key = (__u64)rq, now = bpf_ktime_get_ns(), *start, issued, sector, made;
	struct agg_event *ev;
	__u32 op;

	start = bpf_map_lookup_elem(&starts, &key);
	if (!start || !*start)
		return 0;
	issued = *start;
	*start = 0;
	ev = agg_event_get();
	if (!ev)
		return 0;
	set_device(ev, rq, direct);
	op = disk_op(READ(direct, rq, cmd_flags));
	*(__u32 *)ev->dims[AGG_DIM_OP] = op;
	made = request_start(rq, direct);
	ev->latency_ns = now > issued ? now - issued : 0;
	ev->queue_ns = made && made <= issued ? issued - made : 0;
	ev->now_ns = now;
	ev->bytes = READ(direct, rq, __data_len);
	sector = READ(direct, rq, __sector);
	ev->offset = sector * 512;
	/* a flush, or a request without a position (sector -1), has no offset: disk.ops
	 * counts it by its op, disk.offset leaves it out (STAT_UNRECORDED(DISK_OFFSET, DISK,
	 * FLUSH, ...) in catalogue/statistics.def) */
	ev->stats_mask = 1u << AGG_STAT_DISK_OPS | 1u << AGG_STAT_DISK_LATENCY | 1u << AGG_STAT_DISK_SIZE |
			 (made && made <= issued ? 1u << AGG_STAT_DISK_QUEUE : 0) |
			 (op != AGG_DISK_FLUSH && sector != ~0ULL ? 1u << AGG_STAT_DISK_OFFSET : 0);
	agg_event_apply(ev);
	return 0;
}

SEC("tp_btf/block_rq_issue")
int disk_issue_btf(__u64 *ctx)
{
	return on_issue((struct request *)(issue_rq_arg == 1 ? ctx[1] : ctx[0]), 1);
}

SEC("tp_btf/block_rq_complete")
int disk_complete_btf(__u64 *ctx)
{
	return on_complete((struct request *)(complete_rq_arg == 1 ? ctx[1] : ctx[0]), 1);
}

SEC("tp_btf/block_rq_requeue")
int disk_requeue_btf(__u64 *ctx)
{
	return on_requeue((struct request *)(requeue_rq_arg == 1 ? ctx[1] : ctx[0]));
}

SEC("raw_tp/block_rq_issue")
int disk_issue_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return on_issue((struct request *)(issue_rq_arg == 1 ? ctx->args[1] : ctx->args[0]), 0);
}

SEC("raw_tp/block_rq_complete")
int disk_complete_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return on_complete((struct request *)(complete_rq_arg == 1 ? ctx->args[1] : ctx->args[0]), 0);
}

SEC("raw_tp/block_rq_requeue")
int disk_requeue_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return on_requeue((struct request *)(requeue_rq_arg == 1 ? ctx->args[1] : ctx->args[0]));
}
