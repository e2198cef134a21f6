/* llhist_test.c — checks bpf/llhist.h (userspace build) against the shared vectors. */
#include <stdio.h>
#include "llhist.h"
#include "llhist_vectors.h"

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "tests/vectors/llhist.json";
	struct llhist_case *cases;
	int n = llhist_vectors_load(path, &cases), bad = 0;

	if (n < 300) {
		fprintf(stderr, "llhist_test: %d cases in %s, expected at least 300\n", n, path);
		return 1;
	}
	for (int i = 0; i < n; i++) {
		struct llhist_case *c = &cases[i];
		__u32 b = llhist_bucket(c->value);
		__u64 lo = llhist_lower(b), hi = llhist_upper(b);
		if (b != c->bucket || lo != c->lower || hi != c->upper) {
			fprintf(stderr, "llhist_test: value %" PRIu64 ": got bucket %u [%llu, %llu), want %u [%" PRIu64 ", %" PRIu64 ")\n",
				c->value, b, (unsigned long long)lo, (unsigned long long)hi, c->bucket, c->lower, c->upper);
			bad++;
		}
	}
	for (__u32 b = 0; b + 1 < LLHIST_NBUCKETS; b++) /* buckets tile the range */
		if (llhist_upper(b) != llhist_lower(b + 1)) {
			fprintf(stderr, "llhist_test: gap between buckets %u and %u\n", b, b + 1);
			bad++;
		}
	printf("llhist_test: %d cases, %d failed\n", n, bad);
	free(cases);
	return bad != 0;
}
