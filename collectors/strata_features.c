/* strata_features.c — `strata-features`: loads and attaches one trivial BPF program
 * per attach type (bpf/features.bpf.c), asks the kernel for the helpers, maps and
 * kfuncs strata's layers depend on (kernel_features.h), and prints what worked as
 * JSON, for `strata doctor`. Each check is independent: one failure never hides another.
 * Nothing is left on the host: the checks run in a network namespace of their own
 * (its lo takes the TC and tcx probes, and goes with the process); where one cannot
 * be made, the clsact qdisc the TC probe made on the host's lo is removed again. */
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <bpf/bpf.h>
#include "disk_btf.h"
#include "features.skel.h"
#include "kernel_features.h"
#include "wire_tc.h"

/* A function of our own to put a uprobe on. */
__attribute__((noinline)) int strata_features_uprobe_target(int x)
{
	asm volatile("" ::: "memory");
	return x + 1;
}

static int silent(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return 0;
}

/* Loads only `name`, attaches it, and reports {"ok":..,"error":..}. */
static void check(const char *label, const char *name, int last)
{
	struct features_bpf *skel = features_bpf__open();
	struct bpf_program *prog, *want = NULL;
	struct bpf_link *link = NULL;
	const char *stage = "open";
	int err = 0;

	if (!skel) {
		err = -errno;
		goto out;
	}
	bpf_object__for_each_program(prog, skel->obj) {
		int mine = strcmp(bpf_program__name(prog), name) == 0;
		bpf_program__set_autoload(prog, mine);
		if (mine)
			want = prog;
	}
	stage = "load";
	if ((err = features_bpf__load(skel)))
		goto out;
	stage = "attach";
	if (strcmp(label, "tcx") == 0) { /* a tcx link on lo egress, as the wire layer prefers */
		int fd = wire_tcx_attach(bpf_program__fd(want), (int)if_nametoindex("lo"), true);

		if (fd < 0)
			err = fd;
		else
			close(fd);
		goto out;
	} else if (strcmp(name, "tc_probe") == 0) { /* TC clsact on lo ingress, as the wire layer attaches */
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = (int)if_nametoindex("lo"), .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, opts, .prog_fd = bpf_program__fd(want));

		int made = !(err = bpf_tc_hook_create(&hook));
		if (err == -EEXIST)
			err = 0;
		if (!err && !(err = bpf_tc_attach(&hook, &opts))) {
			opts.prog_fd = 0;
			opts.prog_id = 0;
			opts.flags = 0;
			bpf_tc_detach(&hook, &opts);
		}
		if (made) { /* the qdisc is ours: removed (a qdisc found there is left alone) */
			hook.attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS;
			bpf_tc_hook_destroy(&hook);
		}
		goto out;
	} else if (strcmp(name, "uprobe_probe") == 0) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = "strata_features_uprobe_target");
		link = bpf_program__attach_uprobe_opts(want, getpid(), "/proc/self/exe", 0, &opts);
	} else {
		link = bpf_program__attach(want);
	}
	if (!link)
		err = -errno;
out:
	printf("  \"%s\": {\"ok\": %s, \"error\": \"%s%s%s\"}%s\n", label, err ? "false" : "true",
	       err ? stage : "", err ? ": " : "", err ? strerror(-err) : "", last ? "" : ",");
	bpf_link__destroy(link);
	features_bpf__destroy(skel);
}

/* A kernel fact as {"ok":..,"error":..}: what is missing, and since when it exists. */
static void fact(const char *label, bool ok, const char *missing, int last)
{
	printf("  \"%s\": {\"ok\": %s, \"error\": \"%s\"}%s\n", label, ok ? "true" : "false", ok ? "" : missing,
	       last ? "" : ",");
}

/* BPF run-time statistics (kernel.bpf_stats_enabled, BPF_ENABLE_STATS: Linux 5.8+). */
static bool bpf_stats(void)
{
	int fd = bpf_enable_stats(BPF_STATS_RUN_TIME);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

int main(void)
{
	libbpf_set_print(silent);
	unshare(CLONE_NEWNET); /* a lo of our own for the TC and tcx probes (else the host's) */
	strata_features_uprobe_target(1);
	printf("{\n");
	check("tp_btf", "tp_btf_probe", 0);
	check("tracepoint", "tracepoint_probe", 0);
	check("syscalls", "syscalls_probe", 0);
	check("uprobe", "uprobe_probe", 0);
	check("kprobe", "kprobe_probe", 0);
	check("fentry", "fentry_probe", 0);
	check("tc", "tc_probe", 0);
	check("tcx", "tc_probe", 0);
	fact("bpf_loop", kernel_has_bpf_loop(), "no bpf_loop helper (Linux 5.17+)", 0);
	fact("task_storage", kernel_has_task_storage(), "no task storage for tracing (Linux 5.11+)", 0);
	fact("rdonly_cast", kernel_has_kfunc("bpf_rdonly_cast"), "no bpf_rdonly_cast kfunc (Linux 6.2+)", 0);
	fact("disk_start", disk_btf_request_start(), "struct request has no start_time_ns", 0);
	fact("bpf_stats", bpf_stats(), "no BPF_ENABLE_STATS (Linux 5.8+)", 1);
	printf("}\n");
	return 0;
}
