/* llhist_vectors.bpf.c — buckets every test vector inside the kernel (BPF_PROG_TEST_RUN)
 * with bpf/llhist.h, returning the results through a map. Test fixture for tests/llhist_bpf_test.c. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "llhist.h"

#define MAX_CASES 2048

struct result {
	__u64 lower;
	__u64 upper;
	__u32 bucket;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CASES);
	__type(key, __u32);
	__type(value, __u64);
} values SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MAX_CASES);
	__type(key, __u32);
	__type(value, struct result);
} results SEC(".maps");

const volatile __u32 ncases = 0;

static long bucket_one(__u32 i, void *ctx)
{
	__u64 *v = bpf_map_lookup_elem(&values, &i);
	struct result *r = bpf_map_lookup_elem(&results, &i);

	if (!v || !r)
		return 1;
	r->bucket = llhist_bucket(*v);
	r->lower = llhist_lower(r->bucket);
	r->upper = llhist_upper(r->bucket);
	return 0;
}

SEC("syscall")
int bucket_all(void *ctx)
{
	bpf_loop(ncases, bucket_one, NULL, 0);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
