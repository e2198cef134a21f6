/* fs.c — the file-system layer: bpf/fs.bpf.c on the followed syscalls' entries and exits,
 * for the processes chosen on the command line (fs_processes.c), with the paths their
 * openat calls gave (fs_names.c). Loads the program set this kernel allows (bpf/fs.bpf.c:
 * fentry or the raw syscall tracepoints, enum fs_mode). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
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

/* The links of the loaded programs, shared by the layer's two probes (sys_enter and
 * sys_exit: the entry and exit programs go on and off together). */
static struct {
	struct bpf_link *links[64];
	int nlinks;
	int users; /* probes attached */
	bool raw;  /* the raw syscall tracepoint programs are loaded (else fentry / fexit) */
} fs_links;

/* Whether prog belongs to the set of mode m (its name ends in _t, _r or _h) and hook (the
 * raw syscall tracepoints' programs are named fs_raw_*, the others fentry / fexit). */
static bool in_set(const struct bpf_program *prog, int m, bool raw)
{
	const char *name = bpf_program__name(prog);
	size_t len = strlen(name);

	return len > 2 && name[len - 2] == '_' && name[len - 1] == "trh"[m] &&
	       raw == (strncmp(name, "fs_raw_", 7) == 0);
}

/* Whether this kernel loads and attaches fentry programs: a trivial one on pread64's
 * function, attached and detached at once (a VM without ftrace refuses them). */
static bool fentry_works(void)
{
	struct bpf_insn ret0[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int btf_id = libbpf_find_vmlinux_btf_id("__x64_sys_pread64", BPF_TRACE_FENTRY), prog, link;

	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_FENTRY,
		    .attach_btf_id = btf_id > 0 ? (__u32)btf_id : 0);
	if (btf_id <= 0)
		return false;
	prog = bpf_prog_load(BPF_PROG_TYPE_TRACING, "fs_probe", "GPL", ret0, 2, &opts);
	if (prog < 0)
		return false;
	link = bpf_link_create(prog, 0, BPF_TRACE_FENTRY, NULL);
	if (link >= 0)
		close(link);
	close(prog);
	return link >= 0;
}

static void detach(struct layer *L, struct probe *p)
{
	(void)L, (void)p;
	if (--fs_links.users > 0)
		return;
	for (int i = 0; i < fs_links.nlinks; i++)
		bpf_link__destroy(fs_links.links[i]);
	fs_links.nlinks = 0;
	fs_links.users = 0;
}

static int attach(struct layer *L, struct probe *p, char *err, size_t n)
{
	struct fs_bpf *s = L->skel;
	struct bpf_program *prog;

	(void)p;
	if (fs_links.users++ > 0)
		return 0;
	bpf_object__for_each_program(prog, s->obj) {
		struct bpf_link *link;

		if (!bpf_program__autoload(prog))
			continue;
		link = fs_links.nlinks < (int)(sizeof(fs_links.links) / sizeof(fs_links.links[0]))
			       ? bpf_program__attach(prog) : (errno = E2BIG, NULL);
		if (!link) {
			snprintf(err, n, "cannot attach %s: %s", bpf_program__section_name(prog), strerror(errno));
			detach(L, p);
			return -1;
		}
		fs_links.links[fs_links.nlinks++] = link;
	}
	return 0;
}

/* Needs processes to follow (fs_processes.h); their map is filled before any probe attaches. */
static int load(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	struct bpf_program *prog;
	struct fs_bpf *s;
	int err, mode;
	bool raw;

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
	raw = fs_links.raw = !fentry_works();
	bpf_object__for_each_program(prog, s->obj)
		bpf_program__set_autoload(prog, in_set(prog, mode, raw));
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
	layer_add_probe(L, "sys_enter", NULL, PROBE_OWN);
	layer_add_probe(L, "sys_exit", NULL, PROBE_OWN);
	fs_bind(bpf_map__fd(s->maps.fs_pids), bpf_map__fd(s->maps.fs_cgroup), &s->bss->fs_use_cgroup);
	return 0;
}

static void unload(struct layer *L)
{
	fs_names_unbind();
	fs_bpf__destroy(L->skel);
}

/* The hook loaded, in the status record: "fs":{"hook":"fentry"} or "raw_syscalls". */
static void status(const struct layer *L, FILE *out)
{
	if (L->loaded)
		fprintf(out, ",\"fs\":{\"hook\":\"%s\"}", fs_links.raw ? "raw_syscalls" : "fentry");
}

static const struct layer_option options[] = {
	{ "fs-pid", "PID ...", fs_choose_pid },
	{ "fs-comm", "NAME ...", fs_choose_comm },
	{ "fs-cgroup", "PATH", fs_choose_cgroup },
	{ NULL },
};

const struct layer_ops LAYER_OPS(FS) = {
	.options = options, .supported = supported, .load = load, .unload = unload, .refresh = refresh, .keys = fs_keys,
	.attach = attach, .detach = detach, .status = status,
};
