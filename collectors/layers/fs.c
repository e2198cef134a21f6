/* fs.c — the file-system layer: bpf/fs.bpf.c on the followed syscalls' entries and exits,
 * for the processes chosen on the command line (fs_processes.c), with the paths their
 * openat calls gave (fs_names.c). Loads the program set of the hook fs_hook.c chooses and
 * of the way this kernel lets programs read it (bpf/fs.bpf.c, enum fs_mode); attaches the
 * tier programs (block I/O and iowait of the followed threads) only while the layer is
 * attached and a dataset breaks down or filters by tier. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "catalogue.h"
#include "fs_hook.h"
#include "fs_processes.h"
#include "fs_names.h"
#include "kernel_features.h"
#include "layers.h"
#include "tier_links.h"
#include "fs.skel.h"

static bool supported(const struct statistic *s, char *why, size_t n)
{
	(void)s;
	return fs_hook_choose(why, n) != FS_HOOK_AUTO;
}


/* The links of the loaded programs, shared by the layer's two probes (entry and exit:
 * the entry and exit programs go on and off together). */
static struct {
	struct bpf_link *links[64];
	int nlinks;
	int users;         /* probes attached */
	enum fs_hook hook; /* the hook of the programs loaded */
	struct tier_links tier; /* the tier programs loaded, linked while wanted */
} fs_links;

static bool is_tier(const struct bpf_program *prog)
{
	return strncmp(bpf_program__name(prog), "fs_tier_", 8) == 0;
}

/* The tier programs attached exactly while the probes are and a slot needs the tier. */
static void tier_sync(struct layer *L, layer_report_fn *report, void *ctx)
{
	struct fs_bpf *s = L->skel;
	bool hashed = bpf_program__autoload(s->progs.fs_tier_bio_h);

	fs_links.tier.prog[0] = hashed ? s->progs.fs_tier_bio_h : s->progs.fs_tier_bio_r;
	fs_links.tier.prog[1] = hashed ? s->progs.fs_tier_wait_h : s->progs.fs_tier_wait_r;
	tier_links_sync(&fs_links.tier, tier_wanted(L, fs_links.users > 0), "fs", report, ctx);
}

/* Whether prog belongs to the set of mode m (its name ends in _t, _r or _h) and hook (the
 * per-syscall tracepoints' programs are named fs_tp_*, fentry / fexit's fs_enter_* and
 * fs_exit_*). */
static bool in_set(const struct bpf_program *prog, int m, enum fs_hook hook)
{
	static const char *const prefix[FS_HOOK_COUNT] = { [FS_HOOK_FENTRY] = "fs_e", [FS_HOOK_SYSCALLS] = "fs_tp_" };
	const char *name = bpf_program__name(prog);
	size_t len = strlen(name);

	return len > 2 && name[len - 2] == '_' && name[len - 1] == "trh"[m] &&
	       strncmp(name, prefix[hook], strlen(prefix[hook])) == 0;
}

/* Whether tier program prog is mode m's: _h for FS_HASHED, _r for the task storage modes. */
static bool tier_in_set(const struct bpf_program *prog, int m)
{
	const char *name = bpf_program__name(prog);

	return name[strlen(name) - 1] == (m == 2 ? 'h' : 'r');
}

static void detach(struct layer *L, struct probe *p)
{
	(void)p;
	if (--fs_links.users > 0)
		return;
	for (int i = 0; i < fs_links.nlinks; i++)
		bpf_link__destroy(fs_links.links[i]);
	fs_links.nlinks = 0;
	fs_links.users = 0;
	tier_sync(L, NULL, NULL);
}

/* Once per interval (and at each dataset added): the processes followed, the paths their
 * openat calls gave, and the tier programs as the datasets want them. */
static void refresh(struct layer *L, layer_report_fn *report, void *ctx)
{
	fs_refresh(report, ctx);
	fs_names_drain();
	tier_sync(L, report, ctx);
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

		if (!bpf_program__autoload(prog) || is_tier(prog))
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
	tier_sync(L, NULL, NULL);
	return 0;
}

/* Needs processes to follow (fs_processes.h); their map is filled before any probe attaches. */
static int load(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	struct bpf_program *prog;
	struct fs_bpf *s;
	int err, mode;
	enum fs_hook hook;

	if (!fs_chosen_any()) {
		snprintf(why, n, "no processes chosen: start the collector with --fs-pid PID, --fs-comm NAME "
				 "or --fs-cgroup PATH");
		return -EINVAL;
	}
	if ((hook = fs_hook_choose(why, n)) == FS_HOOK_AUTO)
		return -ENOTSUP;
	if (!(s = fs_bpf__open()))
		return -errno;
	/* the per-syscall tracepoints' programs are written in FS_HASHED only */
	mode = hook == FS_HOOK_SYSCALLS		      ? 2
	       : kernel_has_kfunc("bpf_rdonly_cast") ? 0
	       : kernel_has_task_storage()	      ? 1
						      : 2;
	fs_links.hook = hook;
	bpf_object__for_each_program(prog, s->obj)
		bpf_program__set_autoload(prog, is_tier(prog) ? tier_in_set(prog, mode) : in_set(prog, mode, hook));
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
	L->probes[L->nprobes - 2].source = fs_hook_probe(hook, false);
	L->probes[L->nprobes - 1].source = fs_hook_probe(hook, true);
	fs_bind(bpf_map__fd(s->maps.fs_pids), bpf_map__fd(s->maps.fs_cgroup), &s->bss->fs_use_cgroup,
		(uint64_t *)s->bss->fs_gate, sizeof(s->bss->fs_gate) / sizeof(s->bss->fs_gate[0]));
	return 0;
}

static void unload(struct layer *L)
{
	fs_names_unbind();
	fs_bpf__destroy(L->skel);
}

/* The hook loaded, in the status record: "fs":{"hook":"fentry"} or "syscalls". */
static void status(const struct layer *L, FILE *out)
{
	if (L->loaded)
		fprintf(out, ",\"fs\":{\"hook\":\"%s\"}", fs_hook_name(fs_links.hook));
}

static const struct layer_option options[] = {
	{ "fs-pid", "PID ...", fs_choose_pid },
	{ "fs-comm", "NAME ...", fs_choose_comm },
	{ "fs-cgroup", "PATH", fs_choose_cgroup },
	{ "fs-hook", "auto|fentry|syscalls", fs_hook_option },
	{ NULL },
};

const struct layer_ops LAYER_OPS(FS) = {
	.options = options, .supported = supported, .load = load, .unload = unload, .refresh = refresh, .keys = fs_keys,
	.attach = attach, .detach = detach, .status = status,
};
