/* kernel_features.c — kernel facts for layer loading and `strata doctor`
 * (kernel_features.h), each asked of the kernel once per process. */
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include "kernel_features.h"

bool kernel_has_bpf_loop(void)
{
	static int known = -1;

	if (known < 0)
		known = libbpf_probe_bpf_helper(BPF_PROG_TYPE_SCHED_CLS, BPF_FUNC_loop, NULL) == 1;
	return known;
}

bool kernel_has_task_storage(void)
{
	static int known = -1;

	if (known < 0)
		known = libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	return known;
}

bool kernel_has_bpf_cookie(void)
{
	static int known = -1;

	if (known < 0)
		known = libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL) == 1;
	return known;
}

bool kernel_has_kfunc(const char *name)
{
	struct btf *btf = btf__load_vmlinux_btf();
	bool ok = btf && btf__find_by_name_kind(btf, name, BTF_KIND_FUNC) >= 0;

	btf__free(btf);
	return ok;
}
