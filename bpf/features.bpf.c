/* features.bpf.c — one trivial program per attach type, loaded one at a time by
 * strata-features (collectors/strata_features.c) to tell `strata doctor` what
 * this kernel can do. Nothing here aggregates anything. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

SEC("tp_btf/block_rq_complete")
int BPF_PROG(tp_btf_probe)
{
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_pread64") /* the fs layer's hook where fentry is refused */
int syscalls_probe(void *ctx)
{
	return 0;
}

SEC("tracepoint/block/block_rq_complete")
int tracepoint_probe(void *ctx)
{
	return 0;
}

SEC("uprobe")
int uprobe_probe(void *ctx)
{
	return 0;
}

SEC("kprobe/do_nanosleep")
int kprobe_probe(void *ctx)
{
	return 0;
}

SEC("fentry/do_nanosleep")
int BPF_PROG(fentry_probe)
{
	return 0;
}

SEC("tc")
int tc_probe(struct __sk_buff *skb)
{
	return -1; /* TC_ACT_UNSPEC: the next filter decides */
}

char LICENSE[] SEC("license") = "GPL";
