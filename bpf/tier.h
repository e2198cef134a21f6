/* tier.h — the tier that served an op, decided in the kernel per op: `disk` when the op's
 * thread issued block I/O during it (block:block_bio_queue runs in the submitting thread)
 * or slept waiting for I/O (sched:sched_switch away from a thread in io_schedule, its
 * in_iowait set: a page cache folio under read, a direct I/O, a writeback wait), else
 * `cache`. A partly cached op that waited is `disk`. A bio issued on the thread's behalf by
 * another (a loop or dm worker under it) is not the thread's own; its wait for that bio is.
 *
 * The programs run on every bio and context switch of the machine: their layer attaches
 * them only while a dataset breaks down or filters by tier. Used by bpf/fs.bpf.c (followed
 * syscalls), bpf/nfsd.bpf.c (nfsd requests) and bpf/nfsd_io.bpf.c (nfsd's file reads and
 * writes). An includer writes
 *
 *     TIER_PROGRAMS(prefix, gate, mark)
 *
 * with gate() a cheap test that the current thread may be one of its own (0: leave at once)
 * and mark(hashed) marking the current thread's op in flight, if any, as `disk`; hashed is
 * 1 in the raw_tp programs (prefix_bio_h, prefix_wait_h: helper reads only) and 0 in the
 * tp_btf ones (prefix_bio_r, prefix_wait_r). The layer attaches one pair.
 *
 *     TIER_FENTRY_PROGRAMS(prefix, mark)
 *
 * adds the wait where fentry attaches: prefix_io_schedule, prefix_io_schedule_timeout and
 * prefix_io_schedule_prepare (mutex_lock_io's, and the other two's where not inlined) run
 * when a thread is about to sleep for I/O, not on every context switch; mark(0) as above.
 * The layer attaches them instead of prefix_wait_X where the kernel allows
 * (collectors/tier_links.c). */
#ifndef STRATA_TIER_H
#define STRATA_TIER_H

/* sched_switch runs in the thread switched away from (its second argument, prev, on every
 * kernel since 4.x); in_iowait is set around io_schedule's sleep. */
static __always_inline int tier_iowait(struct task_struct *prev)
{
	return BPF_CORE_READ_BITFIELD_PROBED(prev, in_iowait);
}

#define TIER_PROGRAMS(prefix, gate, mark)                                                 \
	SEC("tp_btf/block_bio_queue")                                                     \
	int prefix##_bio_r(__u64 *ctx)                                                    \
	{                                                                                 \
		return gate() ? mark(0) : 0;                                              \
	}                                                                                 \
	SEC("raw_tp/block_bio_queue")                                                     \
	int prefix##_bio_h(struct bpf_raw_tracepoint_args *ctx)                           \
	{                                                                                 \
		return gate() ? mark(1) : 0;                                              \
	}                                                                                 \
	SEC("tp_btf/sched_switch")                                                        \
	int prefix##_wait_r(__u64 *ctx)                                                   \
	{                                                                                 \
		return gate() && tier_iowait((struct task_struct *)ctx[1]) ? mark(0) : 0; \
	}                                                                                 \
	SEC("raw_tp/sched_switch")                                                        \
	int prefix##_wait_h(struct bpf_raw_tracepoint_args *ctx)                          \
	{                                                                                 \
		return gate() && tier_iowait((struct task_struct *)ctx->args[1]) ? mark(1) : 0; \
	}

#define TIER_FENTRY_PROGRAMS(prefix, mark)                                                \
	SEC("fentry/io_schedule")                                                         \
	int BPF_PROG(prefix##_io_schedule)                                                \
	{                                                                                 \
		return mark(0);                                                           \
	}                                                                                 \
	SEC("fentry/io_schedule_timeout")                                                 \
	int BPF_PROG(prefix##_io_schedule_timeout)                                        \
	{                                                                                 \
		return mark(0);                                                           \
	}                                                                                 \
	SEC("fentry/io_schedule_prepare")                                                 \
	int BPF_PROG(prefix##_io_schedule_prepare)                                        \
	{                                                                                 \
		return mark(0);                                                           \
	}

#endif
