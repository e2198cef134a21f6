/* fs.c — the file-system layer: bpf/fs.bpf.c on the raw syscall tracepoints, for the
 * processes chosen on the command line (fs_processes.c), with the paths their openat calls gave
 * (fs_names.c). Loads the program pair this kernel allows (bpf/fs.bpf.c, enum fs_mode). */
#include <errno.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "catalogue.h"
#include "fs_processes.h"
#include "fs_names.h"
#include "kernel_features.h"
#include "layers.h"
#include "fs.skel.h"

static bool supported(const struct statistic *s, char *why, size_t n)
{
	(void)s;
	return fs_supported(why, n);
}

/* Once per interval: the processes followed, and the paths their openat calls gave. */
static void refresh(struct layer *L, layer_report_fn *report, void *ctx)
{
	(void)L;
	fs_refresh(report, ctx);
	fs_names_drain();
}

/* Needs processes to follow (fs_processes.h); their map is filled before any probe attaches. */
static int load(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	struct bpf_program *enter[3], *leave[3];
	struct fs_bpf *s;
	int err, mode;

	if (!fs_chosen_any()) {
		snprintf(why, n, "no processes chosen: start the collector with --fs-pid PID, --fs-comm NAME "
				 "or --fs-cgroup PATH");
		return -EINVAL;
	}
	if (!fs_supported(why, n))
		return -ENOTSUP;
	if (!(s = fs_bpf__open()))
		return -errno;
	mode = kernel_has_kfunc("bpf_rdonly_cast") ? 0 : kernel_has_task_storage() ? 1 : 2;
	enter[0] = s->progs.fs_enter, enter[1] = s->progs.fs_enter_read, enter[2] = s->progs.fs_enter_hashed;
	leave[0] = s->progs.fs_exit, leave[1] = s->progs.fs_exit_read, leave[2] = s->progs.fs_exit_hashed;
	for (int m = 0; m < 3; m++) {
		bpf_program__set_autoload(enter[m], m == mode);
		bpf_program__set_autoload(leave[m], m == mode);
	}
	bpf_map__set_autocreate(s->maps.fs_pending, mode != 2);
	bpf_map__set_autocreate(s->maps.fs_pending_tid, mode == 2);
	s->rodata->agg_max_keys = cfg->max_keys;
	s->rodata->ns_per_tick = fs_ns_per_tick();
	bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * cfg->max_keys);
	if ((err = fs_bpf__load(s)) || (err = fs_names_bind(bpf_map__fd(s->maps.fs_names)) ? -errno : 0)) {
		fs_bpf__destroy(s);
		return err;
	}
	L->skel = s;
	LAYER_BIND_COMMON(L, s);
	layer_add_probe(L, "sys_enter", enter[mode], PROBE_TRACEPOINT);
	layer_add_probe(L, "sys_exit", leave[mode], PROBE_TRACEPOINT);
	fs_bind(bpf_map__fd(s->maps.fs_pids), bpf_map__fd(s->maps.fs_cgroup), &s->bss->fs_use_cgroup);
	return 0;
}

static void unload(struct layer *L)
{
	fs_names_unbind();
	fs_bpf__destroy(L->skel);
}

static const struct layer_option options[] = {
	{ "fs-pid", "PID ...", fs_choose_pid },
	{ "fs-comm", "NAME ...", fs_choose_comm },
	{ "fs-cgroup", "PATH", fs_choose_cgroup },
	{ NULL },
};

const struct layer_ops LAYER_OPS(FS) = {
	.options = options, .supported = supported, .load = load, .unload = unload, .refresh = refresh, .keys = fs_keys,
};
