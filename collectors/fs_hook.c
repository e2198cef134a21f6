/* fs_hook.c — which hook the file-system layer loads (fs_hook.h): what this kernel allows,
 * tested in that order, or what --fs-hook asks for. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "fs_hook.h"

static enum fs_hook wanted = FS_HOOK_AUTO;

static const char *const names[FS_HOOK_COUNT] = {
	[FS_HOOK_AUTO] = "auto", [FS_HOOK_FENTRY] = "fentry", [FS_HOOK_SYSCALLS] = "syscalls",
};

int fs_hook_option(const char *arg, char *err, size_t n)
{
	for (int h = 0; h < FS_HOOK_COUNT; h++) {
		if (strcmp(arg, names[h]) == 0) {
			wanted = (enum fs_hook)h;
			return 0;
		}
	}
	snprintf(err, n, "--fs-hook needs auto, fentry or syscalls, not %s", arg);
	return -1;
}

const char *fs_hook_name(enum fs_hook h)
{
	return names[h];
}

const char *fs_hook_probe(enum fs_hook h, bool exit)
{
	if (h == FS_HOOK_FENTRY)
		return exit ? "fexit:__x64_sys_*" : "fentry:__x64_sys_*";
	return exit ? "syscalls:sys_exit_*" : "syscalls:sys_enter_*";
}

/* Whether this kernel loads and attaches fentry programs: a trivial one on pread64's
 * function, attached and detached at once (a kernel whose ftrace is off refuses them). */
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

/* Whether the per-syscall events exist (CONFIG_FTRACE_SYSCALLS) where libbpf looks for
 * them; tracefs is mounted at /sys/kernel/tracing first if nothing is there yet. */
static bool syscall_events_exist(void)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[128];

	if (access("/sys/kernel/tracing/events", F_OK) != 0)
		mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL);
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(path, sizeof(path), "%s/events/syscalls/sys_exit_pread64/id", roots[i]);
		if (access(path, R_OK) == 0)
			return true;
	}
	return false;
}

static bool works(enum fs_hook h)
{
	return h == FS_HOOK_FENTRY ? fentry_works() : syscall_events_exist();
}

static enum fs_hook choose(char *why, size_t n)
{
	static const char *const lacks[FS_HOOK_COUNT] = {
		[FS_HOOK_FENTRY] = "lacks fentry programs (or its ftrace is off)",
		[FS_HOOK_SYSCALLS] = "lacks the syscalls:sys_enter_* events (CONFIG_FTRACE_SYSCALLS, tracefs at "
				     "/sys/kernel/tracing)",
	};

	if (wanted != FS_HOOK_AUTO) {
		if (works(wanted))
			return wanted;
		snprintf(why, n, "--fs-hook %s: kernel %s", names[wanted], lacks[wanted]);
		return FS_HOOK_AUTO;
	}
	for (int h = FS_HOOK_FENTRY; h < FS_HOOK_COUNT; h++)
		if (works((enum fs_hook)h))
			return (enum fs_hook)h;
	snprintf(why, n, "kernel lacks fentry (or its ftrace is off) and the syscalls:sys_enter_* events "
			 "(CONFIG_FTRACE_SYSCALLS, tracefs at /sys/kernel/tracing): fs statistics need one of them");
	return FS_HOOK_AUTO;
}

/* Chosen once: the kernel's answer does not change while the collector runs. */
enum fs_hook fs_hook_choose(char *why, size_t n)
{
	static enum fs_hook chosen = FS_HOOK_AUTO;
	static char chosen_why[256];
	static bool done;

	if (!done) {
		struct btf *btf = btf__load_vmlinux_btf();

		if (!btf)
			snprintf(chosen_why, sizeof(chosen_why),
				 "kernel has no BTF (/sys/kernel/btf/vmlinux): fs statistics need it");
		else
			chosen = choose(chosen_why, sizeof(chosen_why));
		btf__free(btf);
		done = true;
	}
	if (chosen == FS_HOOK_AUTO)
		snprintf(why, n, "%s", chosen_why);
	return chosen;
}
