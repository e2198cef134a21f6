/* disk_missed.c — bench helper (build/bench/strata-disk-missed /dev/DEV): attaches
 * bench/disk_missed.bpf.c for one block device, prints "attached", holds it until EOF on
 * stdin, then prints one JSON object: its counts and each program's runs the kernel
 * reported skipping as recursive (bench/disk_missed.py). */
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "disk_missed.skel.h"

static const char *const NAMES[] = { "issues", "reissues", "completes", "unmatched", "requeues" };

int main(int argc, char **argv)
{
	struct disk_missed_bpf *s;
	struct bpf_program *prog;
	struct stat st;
	int ncpu = libbpf_num_possible_cpus();

	if (argc != 2 || stat(argv[1], &st) || !S_ISBLK(st.st_mode)) {
		fprintf(stderr, "usage: strata-disk-missed /dev/BLOCKDEVICE\n");
		return 2;
	}
	if (!(s = disk_missed_bpf__open()))
		return 1;
	s->rodata->device = major(st.st_rdev) << 20 | minor(st.st_rdev);
	if (disk_missed_bpf__load(s) || disk_missed_bpf__attach(s)) {
		fprintf(stderr, "strata-disk-missed: cannot load or attach (root, a kernel with tp_btf)\n");
		disk_missed_bpf__destroy(s);
		return 1;
	}
	printf("attached\n");
	fflush(stdout);
	while (getchar() != EOF)
		;
	printf("{");
	for (__u32 i = 0; i < sizeof(NAMES) / sizeof(NAMES[0]); i++) {
		__u64 per_cpu[ncpu], sum = 0;

		if (bpf_map_lookup_elem(bpf_map__fd(s->maps.counts), &i, per_cpu) == 0)
			for (int c = 0; c < ncpu; c++)
				sum += per_cpu[c];
		printf("\"%s\":%llu,", NAMES[i], (unsigned long long)sum);
	}
	printf("\"recursion_misses\":{");
	bpf_object__for_each_program(prog, s->obj) {
		struct bpf_prog_info info = { 0 };
		__u32 len = sizeof(info);

		bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len);
		printf("%s\"%s\":%llu", prog == bpf_object__next_program(s->obj, NULL) ? "" : ",",
		       bpf_program__name(prog), (unsigned long long)info.recursion_misses);
	}
	printf("}}\n");
	disk_missed_bpf__destroy(s);
	return 0;
}
