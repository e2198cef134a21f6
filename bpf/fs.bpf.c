/* fs.bpf.c — the file-system layer: the entries and exits of the followed syscalls, in
 * chosen processes, feed fs.ops, fs.latency and fs.size, broken down by op (the syscall),
 * process and file (bpf/aggregate.h).
 *
 * Followed syscalls (x86_64): read, write, pread64, pwrite64, readv, writev,
 * preadv, pwritev, preadv2, pwritev2, fsync, fdatasync, openat, close — on regular
 * files only (sockets, pipes, directories and devices are skipped). io_uring
 * submissions are not seen. A failed openat is not counted (it names no inode).
 *
 * A process is chosen when its thread group id is in fs_pids with the start time of
 * its leader (as /proc/PID/stat shows it, so a reused pid is never taken for the
 * chosen process), or when fs_use_cgroup is set and it runs in fs_cgroup's cgroup
 * or below.
 *
 * Two hooks (the collector loads the first the kernel allows, collectors/fs_hook.c):
 *   fentry / fexit on each followed syscall's own kernel function (__x64_sys_pread64 ...):
 *     other processes pay nothing in their other syscalls, and in these two program runs
 *     that stop at the gate (fs_gate);
 *   the per-syscall tracepoints (syscalls:sys_enter_pread64 / sys_exit_pread64 ...), where
 *     the kernel refuses fentry (ftrace off): the programs run only on the followed
 *     syscalls, and stop at the gate, but enabling any syscall tracepoint takes every
 *     syscall of every process off its fast path (a per-task flag the kernel sets on all),
 *     and the kernel builds a record of each followed syscall's arguments for the program.
 *
 * Tier per op (fs.*[tier]): bpf/tier.h, the syscall being the op; its two programs run on
 * every bio and context switch of the machine and stop at the gate; the collector
 * attaches them only while a dataset breaks down or filters by tier.
 *
 * The file key is (device, inode number), read through the task's fd table at entry
 * (at exit for openat, whose fd is the return value); collectors/fs_names.c turns it
 * into a path, helped by the path each successful openat was given (ring buffer
 * fs_names, read once per interval; a full buffer only costs names, never counts). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "llhist.h"
#include "aggregate.h"
#include "tier.h"

char LICENSE[] SEC("license") = "GPL";

#define S_IFMT  00170000
#define S_IFREG 0100000

/* Nanoseconds per clock tick of /proc/PID/stat's starttime (1e9 / USER_HZ). */
const volatile __u64 ns_per_tick = 10000000;
__u32 fs_use_cgroup; /* set by userspace once fs_cgroup holds the cgroup */

/* The gate every program passes first: bit (tgid mod FS_GATE_BITS) is set for each chosen
 * process (collectors/fs_processes.c), so a process not chosen leaves after one load and
 * a test, unless it shares the bit with a chosen one (then fs_pids decides). */
#define FS_GATE_BITS 32768
__u64 fs_gate[FS_GATE_BITS / 64];

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);   /* tgid */
	__type(value, __u64); /* its leader's start time in clock ticks since boot */
} fs_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} fs_cgroup SEC(".maps");

struct pending {
	__u64 start;
	__u32 op;
	__u32 blockio;        /* block I/O issued or waited for since start: tier disk */
	__s32 dirfd;          /* openat */
	__u64 path;           /* openat: user pointer to the path */
	struct agg_fs_file file;
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} fs_names SEC(".maps");

/* The syscall a thread of a chosen process is in (start == 0: none): task storage, so
 * entry and exit find it without hashing, and other processes' exits find nothing at
 * the cost of one pointer test (Linux 5.11+). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct pending);
} fs_pending SEC(".maps");

/* The same keyed by thread id, for kernels without task storage for tracing programs
 * (FS_HASHED); the least recently used entries (threads long gone) make room. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct pending);
} fs_pending_tid SEC(".maps");

/* How the programs read the kernel, one set of programs each (the collector loads the
 * set the kernel allows, collectors/layers/fs.c):
 *   FS_TYPED   typed task pointer, typed loads through bpf_rdonly_cast (Linux 6.2+)
 *   FS_READ    typed task pointer, CO-RE helper reads below the fd table (5.11+)
 *   FS_HASHED  CO-RE helper reads throughout, fs_pending_tid for the syscall in flight */
enum fs_mode { FS_TYPED, FS_READ, FS_HASHED };

/* A field of the current task (or below it), as mode allows reading it. */
#define TASK_READ(mode, t, ...) ((mode) == FS_HASHED ? BPF_CORE_READ(t, __VA_ARGS__) : ___arrow(t, __VA_ARGS__))

static __always_inline struct task_struct *current_task(int mode)
{
	if (mode == FS_HASHED)
		return (struct task_struct *)bpf_get_current_task();
	return bpf_get_current_task_btf();
}

/* The pending record of the current thread; created when create and absent. */
static __always_inline struct pending *pending_get(struct task_struct *t, int mode, int create)
{
	struct pending *p, fresh = {};
	__u32 tid;

	if (mode != FS_HASHED)
		return bpf_task_storage_get(&fs_pending, t, NULL, create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	tid = (__u32)bpf_get_current_pid_tgid();
	p = bpf_map_lookup_elem(&fs_pending_tid, &tid);
	if (p || !create)
		return p;
	bpf_map_update_elem(&fs_pending_tid, &tid, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&fs_pending_tid, &tid);
}

/* Typed view of a kernel pointer read as a number, for plain loads (Linux 6.2+). Weak:
 * on older kernels the collector loads the *_read programs, which never call it. */
extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;
#define KCAST(p, type) ((type *)bpf_rdonly_cast((p), bpf_core_type_id_kernel(type)))

static __always_inline int data_op(__u32 op)
{
	return op <= AGG_FS_OP_PWRITEV2;
}

static __always_inline int gate_open(__u32 tgid)
{
	__u32 bit = tgid % FS_GATE_BITS;

	return fs_use_cgroup || (fs_gate[bit / 64] >> (bit % 64) & 1);
}

static __always_inline int chosen(struct task_struct *t, __u32 tgid, int mode)
{
	__u64 *ticks = bpf_map_lookup_elem(&fs_pids, &tgid);

	if (ticks)
		return *ticks == TASK_READ(mode, t, group_leader, start_boottime) / ns_per_tick;
	return fs_use_cgroup && bpf_current_task_under_cgroup(&fs_cgroup, 0) == 1;
}

/* The inode behind fd if it is a regular file: 1 and *out filled, else 0. One helper
 * read for the fd array slot, which has no type the verifier can follow; then, in
 * FS_TYPED, plain loads through bpf_rdonly_cast's typed pointers (the verifier makes
 * them fault-safe), else CO-RE helper reads. */
static __always_inline int fd_file(struct task_struct *t, long fd, struct agg_fs_file *out, int how)
{
	struct fdtable *fdt = TASK_READ(how, t, files, fdt);
	struct file *fp = NULL, *f, **fds;
	struct inode *inode;
	umode_t mode;

	if (fd < 0 || !fdt)
		return 0;
	if ((__u64)fd >= (how == FS_HASHED ? BPF_CORE_READ(fdt, max_fds) : fdt->max_fds))
		return 0;
	fds = how == FS_HASHED ? BPF_CORE_READ(fdt, fd) : fdt->fd;
	if (bpf_probe_read_kernel(&fp, sizeof(fp), fds + fd) || !fp)
		return 0;
	if (how == FS_TYPED) {
		f = KCAST(fp, struct file);
		inode = f->f_inode;
		if (!inode || (inode->i_mode & S_IFMT) != S_IFREG)
			return 0;
		out->ino = inode->i_ino;
		out->dev = inode->i_sb->s_dev;
	} else {
		inode = BPF_CORE_READ(fp, f_inode);
		mode = BPF_CORE_READ(inode, i_mode);
		if (!inode || (mode & S_IFMT) != S_IFREG)
			return 0;
		out->ino = BPF_CORE_READ(inode, i_ino);
		out->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	}
	out->zero = 0;
	return 1;
}

/* The path the opened file was given, for userspace to name its key. */
static __always_inline void report_name(const struct pending *p, __u32 tgid)
{
	struct agg_fs_name *n = bpf_ringbuf_reserve(&fs_names, sizeof(*n), 0);

	if (!n)
		return;
	n->file = p->file;
	n->tgid = tgid;
	n->dirfd = p->dirfd;
	if (bpf_probe_read_user_str(n->path, sizeof(n->path), (const void *)p->path) < 0)
		n->path[0] = 0;
	bpf_ringbuf_submit(n, 0);
}

/* The entry of a followed syscall: fd (for openat, dirfd) and path (openat) are its first
 * two arguments. */
static __always_inline int enter(long fd, unsigned long path, int op, int mode)
{
	struct task_struct *t;
	struct pending *p;
	struct agg_fs_file file = {};
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!gate_open(tgid))
		return 0;
	t = current_task(mode);
	if (!chosen(t, tgid, mode))
		return 0;
	if (op != AGG_FS_OP_OPENAT && !fd_file(t, (long)(int)fd, &file, mode))
		return 0;
	p = pending_get(t, mode, 1);
	if (!p) {
		agg_stat_add(AGG_STATS_DROPS, 1);
		return 0;
	}
	p->op = (__u32)op;
	p->blockio = 0;
	p->file = file;
	if (op == AGG_FS_OP_OPENAT) {
		p->dirfd = (__s32)fd;
		p->path = path;
	}
	p->start = bpf_ktime_get_ns();
	return 0;
}

static __always_inline int leave(long ret, int op, int mode)
{
	__u64 now;
	struct pending *pp, p;
	struct task_struct *t;
	struct agg_fs_process *proc;
	struct agg_event *ev;

	if (!gate_open(bpf_get_current_pid_tgid() >> 32))
		return 0;
	t = current_task(mode);
	pp = pending_get(t, mode, 0);
	/* the entry of this very syscall (one left by a syscall whose exit was not seen,
	 * around a detach, is of another op or is overwritten by the next entry) */
	if (!pp || !pp->start || pp->op != (__u32)op)
		return 0;
	now = bpf_ktime_get_ns();
	p = *pp;
	pp->start = 0;
	if (p.op == AGG_FS_OP_OPENAT) {
		if (ret < 0 || !fd_file(t, ret, &p.file, mode))
			return 0;
		report_name(&p, bpf_get_current_pid_tgid() >> 32);
	}
	ev = agg_event_get();
	if (!ev)
		return 0;
	*(__u32 *)ev->dims[AGG_DIM_OP] = p.op;
	*(__u32 *)ev->dims[AGG_DIM_TIER] = p.blockio ? AGG_TIER_DISK : AGG_TIER_CACHE;
	__builtin_memcpy(ev->dims[AGG_DIM_FILE], &p.file, sizeof(p.file));
	proc = (struct agg_fs_process *)ev->dims[AGG_DIM_PROCESS];
	proc->tgid = bpf_get_current_pid_tgid() >> 32;
	if (mode == FS_HASHED)
		BPF_CORE_READ_INTO(&proc->comm, t, group_leader, comm);
	else
		__builtin_memcpy(proc->comm, t->group_leader->comm, sizeof(proc->comm));
	ev->latency_ns = now > p.start ? now - p.start : 0;
	ev->now_ns = now;
	ev->bytes = ret > 0 ? (__u64)ret : 0;
	ev->stats_mask = 1u << AGG_STAT_FS_OPS | 1u << AGG_STAT_FS_LATENCY |
			 (data_op(p.op) && ret >= 0 ? 1u << AGG_STAT_FS_SIZE : 0);
	agg_event_apply(ev);
	return 0;
}

/* The tier programs (bpf/tier.h): fs_tier_*_r for FS_TYPED and FS_READ (task storage),
 * fs_tier_*_h for FS_HASHED; not among the programs the layer attaches with its probes. */
static __always_inline int tier_gate(void)
{
	return gate_open(bpf_get_current_pid_tgid() >> 32);
}

/* The current thread, if it is in a followed syscall, did or waited for block I/O. */
static __always_inline int tier_mark(int hashed)
{
	struct pending *p = pending_get(current_task(hashed ? FS_HASHED : FS_READ), hashed ? FS_HASHED : FS_READ, 0);

	if (p && p->start)
		p->blockio = 1;
	return 0;
}

TIER_PROGRAMS(fs_tier, tier_gate, tier_mark)

/* The programs: fs_enter_SYSCALL_M and fs_exit_SYSCALL_M, in each mode M = t (FS_TYPED),
 * r (FS_READ) or h (FS_HASHED), on each followed syscall's function (x86_64's __x64_sys_*,
 * whose one argument is the user's registers); fs_tp_enter_SYSCALL_h and fs_tp_exit_SYSCALL_h
 * on its per-syscall tracepoints. */
#define FS_SYSCALL_MODE(name, op, mode, m)                                                \
	SEC("fentry/__x64_sys_" #name)                                                    \
	int BPF_PROG(fs_enter_##name##_##m, const struct pt_regs *regs)                  \
	{                                                                                 \
		return enter(regs->di, regs->si, op, mode);                               \
	}                                                                                 \
	SEC("fexit/__x64_sys_" #name)                                                     \
	int BPF_PROG(fs_exit_##name##_##m, const struct pt_regs *regs, long ret)         \
	{                                                                                 \
		return leave(ret, op, mode);                                              \
	}
/* The record of a syscalls:sys_enter_NAME / sys_exit_NAME event (the kernel's
 * struct syscall_trace_enter / syscall_trace_exit): the common fields, the syscall number,
 * then its arguments or its return value. */
struct fs_tp_enter {
	__u64 common;
	__s32 nr;
	unsigned long args[6];
};

struct fs_tp_exit {
	__u64 common;
	__s32 nr;
	long ret;
};

/* The classic per-syscall tracepoint programs, fs_tp_enter_SYSCALL_h and fs_tp_exit_SYSCALL_h,
 * in FS_HASHED only (CO-RE helper reads, fs_pending_tid: tracepoint programs get neither
 * typed loads nor task storage on every kernel). */
#define FS_SYSCALL_TP(name, op)                                                           \
	SEC("tracepoint/syscalls/sys_enter_" #name)                                       \
	int fs_tp_enter_##name##_h(struct fs_tp_enter *ctx)                               \
	{                                                                                 \
		return enter((long)ctx->args[0], ctx->args[1], op, FS_HASHED);            \
	}                                                                                 \
	SEC("tracepoint/syscalls/sys_exit_" #name)                                        \
	int fs_tp_exit_##name##_h(struct fs_tp_exit *ctx)                                 \
	{                                                                                 \
		return leave(ctx->ret, op, FS_HASHED);                                    \
	}

#define FS_SYSCALL(name, op)                          \
	FS_SYSCALL_MODE(name, op, FS_TYPED, t)        \
	FS_SYSCALL_MODE(name, op, FS_READ, r)         \
	FS_SYSCALL_MODE(name, op, FS_HASHED, h)       \
	FS_SYSCALL_TP(name, op)

FS_SYSCALL(read, AGG_FS_OP_READ)
FS_SYSCALL(write, AGG_FS_OP_WRITE)
FS_SYSCALL(close, AGG_FS_OP_CLOSE)
FS_SYSCALL(pread64, AGG_FS_OP_PREAD64)
FS_SYSCALL(pwrite64, AGG_FS_OP_PWRITE64)
FS_SYSCALL(readv, AGG_FS_OP_READV)
FS_SYSCALL(writev, AGG_FS_OP_WRITEV)
FS_SYSCALL(fsync, AGG_FS_OP_FSYNC)
FS_SYSCALL(fdatasync, AGG_FS_OP_FDATASYNC)
FS_SYSCALL(openat, AGG_FS_OP_OPENAT)
FS_SYSCALL(preadv, AGG_FS_OP_PREADV)
FS_SYSCALL(pwritev, AGG_FS_OP_PWRITEV)
FS_SYSCALL(preadv2, AGG_FS_OP_PREADV2)
FS_SYSCALL(pwritev2, AGG_FS_OP_PWRITEV2)
