/* disk_missed.bpf.c — the programs of bench/disk_missed.py (build/bench/strata-disk-missed):
 * an issue/completion pairing of one block device, independent of bpf/disk.bpf.c, that
 * counts how often its completion program runs and finds (or not) its request's issue,
 * and how often a request is issued again while its previous issue still waits. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 device = 0; /* major << 20 | minor */

enum { ISSUES, REISSUES, COMPLETES, UNMATCHED, REQUEUES, NCOUNTS };

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);   /* struct request * */
	__type(value, __u8);
} waiting SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NCOUNTS);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&counts, &i);

	if (v)
		(*v)++;
}

static __always_inline int of_device(struct request *rq)
{
	struct gendisk *disk = rq->q->disk;

	return disk && ((__u32)disk->major << 20 | disk->first_minor) == device;
}

SEC("tp_btf/block_rq_issue")
int BPF_PROG(missed_issue, struct request *rq)
{
	__u64 key = (__u64)rq;
	__u8 one = 1;

	if (!of_device(rq))
		return 0;
	count(ISSUES);
	if (bpf_map_update_elem(&waiting, &key, &one, BPF_NOEXIST))
		count(REISSUES);
	return 0;
}

SEC("tp_btf/block_rq_complete")
int BPF_PROG(missed_complete, struct request *rq)
{
	__u64 key = (__u64)rq;

	if (!of_device(rq))
		return 0;
	count(COMPLETES);
	if (bpf_map_delete_elem(&waiting, &key))
		count(UNMATCHED);
	return 0;
}

SEC("tp_btf/block_rq_requeue")
int BPF_PROG(missed_requeue, struct request *rq)
{
	__u64 key = (__u64)rq;

	if (!of_device(rq))
		return 0;
	count(REQUEUES);
	bpf_map_delete_elem(&waiting, &key);
	return 0;
}
