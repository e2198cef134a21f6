/* llhist_bpf_test.c — loads tests/llhist_vectors.bpf.c into the running kernel, buckets
 * every shared test vector there (BPF_PROG_TEST_RUN) and compares with the expected
 * results. Needs root (or CAP_BPF); run by tests/test_llhist.py. */
#include <errno.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "llhist_vectors.h"
#include "llhist_vectors.skel.h"

struct result {
	__u64 lower, upper;
	__u32 bucket, pad;
};

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "tests/vectors/llhist.json";
	struct llhist_case *cases;
	struct llhist_vectors_bpf *skel;
	int n = llhist_vectors_load(path, &cases), bad = 0, err;
	LIBBPF_OPTS(bpf_test_run_opts, run);

	if (n <= 0)
		return 2;
	skel = llhist_vectors_bpf__open();
	if (!skel)
		return 2;
	skel->rodata->ncases = n;
	if ((err = llhist_vectors_bpf__load(skel))) {
		fprintf(stderr, "llhist_bpf_test: cannot load BPF program: %s\n", strerror(-err));
		return 2;
	}
	for (__u32 i = 0; i < (__u32)n; i++)
		bpf_map_update_elem(bpf_map__fd(skel->maps.values), &i, &cases[i].value, BPF_ANY);
	if ((err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.bucket_all), &run))) {
		fprintf(stderr, "llhist_bpf_test: BPF_PROG_TEST_RUN failed: %s\n", strerror(errno));
		return 2;
	}
	for (__u32 i = 0; i < (__u32)n; i++) {
		struct result r;
		bpf_map_lookup_elem(bpf_map__fd(skel->maps.results), &i, &r);
		if (r.bucket != cases[i].bucket || r.lower != cases[i].lower || r.upper != cases[i].upper) {
			fprintf(stderr, "llhist_bpf_test: value %llu: kernel says bucket %u [%llu, %llu), want %u\n",
				(unsigned long long)cases[i].value, r.bucket, (unsigned long long)r.lower,
				(unsigned long long)r.upper, cases[i].bucket);
			bad++;
		}
	}
	printf("llhist_bpf_test: %d cases bucketed in the kernel, %d failed\n", n, bad);
	llhist_vectors_bpf__destroy(skel);
	free(cases);
	return bad != 0;
}
