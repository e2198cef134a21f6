/* syscall_hooks.bpf.c — bench only (bench/syscall_hooks.c): the two ways of hooking
 * syscalls the file-system layer could use, with programs that only test the syscall
 * and return, to price the hooks themselves:
 *   raw: tp_btf on raw_syscalls:sys_enter / sys_exit (every syscall runs the program);
 *   per: the classic syscalls:sys_enter_pread64 / sys_exit_pread64 events (the kernel
 *        tests a per-syscall bit first; only followed syscalls run the program). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

__u64 hits;

SEC("tp_btf/sys_enter")
int BPF_PROG(raw_enter, struct pt_regs *regs, long id)
{
	if (id == 17)
		__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(raw_exit, struct pt_regs *regs, long ret)
{
	if (regs->orig_ax == 17)
		__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_pread64")
int per_enter(void *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_pread64")
int per_exit(void *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}
