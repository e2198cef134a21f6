/* toy.bpf.c — a toy layer (not shipped): the gaps between a CPU's getppid calls (toy.gaps). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "llhist.h"
#include "aggregate.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} last_call SEC(".maps");

SEC("tracepoint/syscalls/sys_enter_getppid")
int sys_enter_getppid(void *ctx)
{
	__u32 zero = 0;
	__u64 now = bpf_ktime_get_ns(), *last = bpf_map_lookup_elem(&last_call, &zero);
	struct agg_event *ev;

	if (!last)
		return 0;
	if (*last && (ev = agg_event_get())) {
		ev->latency_ns = now - *last;
		ev->stats_mask = 1u << AGG_STAT_TOY_GAPS;
		agg_event_apply(ev);
	}
	*last = now;
	return 0;
}
