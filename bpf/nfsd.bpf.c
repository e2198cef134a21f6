/* nfsd.bpf.c — the kernel nfsd layer: one hit per NFS request, at sunrpc:svc_stats_latency
 * (the reply is ready, in the nfsd thread that served it), feeds nfsd.ops, nfsd.latency
 * and nfsd.size, broken down by op, client, version, status or export (bpf/aggregate.h).
 *
 * Everything is read from the request, struct svc_rqst, through CO-RE (the tracepoint's
 * own fields changed layout around 5.17; its argument, the request, did not): the RPC
 * program, version and procedure, the client's address (rq_addr), the time the request
 * was received (rq_stime, ktime_get: the clock of bpf_ktime_get_ns), the call and reply
 * lengths, and nfsd's decoded call and result (rq_argp, rq_resp):
 *   NFSv3: the status word nfsd puts first in every result, and the export from the
 *     file handle every argument struct starts with (struct svc_fh, whose knfsd_fh
 *     starts with its length: the handle's bytes lie 4 bytes into the arguments);
 *   NFSv4: the COMPOUND's main op (bpf/nfs4_ops.h) from its decoded ops
 *     (nfsd4_compoundargs), its status and the export of its current file handle
 *     (nfsd4_compoundres.cstate). These types live in nfsd's module BTF: without it
 *     (5.10) a COMPOUND is keyed "compound", its status "unread", its export "none".
 * So the request needs no map between two probes for nfsd.ops, nfsd.latency and nfsd.size.
 * Only the NFS program (100003)
 * versions 3 and 4 are counted; lockd, nfsacl and the client's callback service share
 * the tracepoint.
 *
 * struct svc_rqst lives in the sunrpc module's BTF: tp_btf (direct loads) where the
 * kernel has module BTF, raw_tp (the same code through bpf_probe_read_kernel)
 * otherwise; the collector autoloads one flavour.
 *
 * nfsd.queue needs the request's start, in its thread's record (nfsd_threads, keyed by thread
 * id, written when the thread takes a transport off the queue: sunrpc:svc_xprt_dequeue, on
 * 5.10, 6.1 and 6.12 alike): the call's wait for a thread, to that dequeue from the later of
 * the transport's sunrpc:svc_xprt_enqueue (svc_xprt_do_enqueue before 5.11) and the first
 * arrival of data on it (sunrpc:svcsock_data_ready) since a thread last read a whole call off
 * it (sunrpc:svc_xdr_recvfrom): a transport queued again while its next call had not arrived
 * (data left flagged by the last call's segments) waits from that call's arrival, one whose
 * next call was already in (pipelined) from its enqueue (nfsd_xprts, keyed by the
 * transport); a request whose transport was queued before the programs attached has none.
 * The collector attaches these four programs with nfsd.queue only (none of 5.10, 6.1 and 6.12
 * stamps the transport's enqueue or its data's arrival itself).
 *
 * nfsd.*[tier] pairs on the request's own start instead: disk when the thread issued or waited
 * for block I/O after rq_stime (the whole call read, before its service began), else cache.
 * The tier programs (bpf/tier.h) stamp an nfsd thread's last block I/O or wait in nfsd_tier_io
 * (keyed by thread id) and the reply compares; no program runs per request for the tier but
 * the reply. The wait is taken at io_schedule, io_schedule_timeout and io_schedule_prepare
 * (fentry: they run only when a thread is about to sleep for I/O) where the kernel attaches
 * fentry, else at every context switch (sched:sched_switch, prev->in_iowait). The collector
 * attaches them with a dataset by tier. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "llhist.h"
#include "aggregate.h"
#include "nfs4_ops.h"
#include "nfsd_request.h"
#include "tier.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the collector while the dequeue program is attached: the reply reads the thread's
 * record only then; and while the tier programs are: the reply reads nfsd_tier_io. */
__u32 nfsd_threads_on, nfsd_tier_on;

/* The request an nfsd thread serves, from its dequeue to its reply. */
struct nfsd_thread {
	__u64 xprt;     /* its transport (struct svc_xprt *) */
	__u64 queue_ns; /* the transport's wait for a thread */
	__u32 queued;   /* queue_ns was seen (the transport's enqueue) */
};

/* An nfsd thread's last block I/O issued or waited for (bpf_ktime_get_ns). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096); /* nfsd threads */
	__type(key, __u32);
	__type(value, __u64);
} nfsd_tier_io SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096); /* nfsd threads */
	__type(key, __u32);
	__type(value, struct nfsd_thread);
} nfsd_threads SEC(".maps");

/* A transport's wait for a thread: when it was last queued, and when data first arrived on
 * it since its last call was read (0: none). */
struct nfsd_xprt {
	__u64 enqueue_ns;
	__u64 data_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384); /* transports (connections) */
	__type(key, __u64);         /* struct svc_xprt * */
	__type(value, struct nfsd_xprt);
} nfsd_xprts SEC(".maps");

/* nfsd's NFSv4 types (nfsd module BTF only). */
struct nfsd4_create___nfsd {
	__u32 cr_type;
} __attribute__((preserve_access_index));

union nfsd4_op_u___nfsd {
	struct nfsd4_create___nfsd create;
} __attribute__((preserve_access_index));

struct nfsd4_op___nfsd {
	__u32 opnum;
	union nfsd4_op_u___nfsd u;
} __attribute__((preserve_access_index));

struct nfsd4_compoundargs___nfsd {
	__u32 opcnt;
	struct nfsd4_op___nfsd *ops;
	struct nfsd4_op___nfsd iops[8];
} __attribute__((preserve_access_index));

struct knfsd_fh___nfsd {
	unsigned int fh_size;
} __attribute__((preserve_access_index));

struct svc_fh___nfsd {
	struct knfsd_fh___nfsd fh_handle;
} __attribute__((preserve_access_index));

struct nfsd4_compound_state___nfsd {
	struct svc_fh___nfsd current_fh;
	__be32 status;
} __attribute__((preserve_access_index));

struct nfsd4_compoundres___nfsd {
	struct nfsd4_compound_state___nfsd cstate;
} __attribute__((preserve_access_index));

/* NFSv4: the COMPOUND's main op (bpf/nfs4_ops.h) from nfsd's decoded ops. After the
 * request, nfsd frees ops decoded beyond its inline array (iops), so a compound of more
 * ops than that stays "compound". */
static __always_inline __u32 nfs4_key(struct nfsd4_compoundargs___nfsd *args)
{
	__u32 opcnt, first = 0, lookup = 0, opcode, type = 0, size, inline_ops;
	struct nfsd4_op___nfsd *ops, *op;

	if (!bpf_core_type_exists(struct nfsd4_compoundargs___nfsd) || !args)
		return AGG_NFS_OP_COMPOUND;
	size = bpf_core_type_size(struct nfsd4_op___nfsd);
	inline_ops = size ? bpf_core_field_size(args->iops) / size : 0;
	opcnt = BPF_CORE_READ(args, opcnt);
	ops = BPF_CORE_READ(args, ops);
	if (!opcnt || opcnt > inline_ops || !ops)
		return AGG_NFS_OP_COMPOUND;
	for (__u32 i = 0; i < NFS4_OPS_SCANNED; i++) {
		if (i >= opcnt)
			return nfs4_op_key(lookup ? lookup : first, 0);
		op = (void *)ops + i * size;
		opcode = BPF_CORE_READ(op, opnum);
		if (i == 0)
			first = opcode;
		switch (nfs4_role(opcode)) {
		case NFS4_PREFIX:
			break;
		case NFS4_LOOKUP_OP:
			if (!lookup)
				lookup = opcode;
			break;
		default:
			if (opcode == OP4_CREATE)
				type = BPF_CORE_READ(op, u.create.cr_type);
			return nfs4_op_key(opcode, type);
		}
	}
	return AGG_NFS_OP_COMPOUND;
}

/* NFSv3: the status word every result struct of nfsd's starts with (network order);
 * NULL has none (ok). NFSv4: the COMPOUND's status (that of its last op). */
static __always_inline __u32 nfs_status(struct svc_rqst___nfsd *r, __u32 vers, __u32 proc, int direct)
{
	__be32 status = 0;
	void *resp;

	if (proc == 0)
		return AGG_RPC_STATUS_OK;
	resp = READ(direct, r, rq_resp);
	if (!resp)
		return AGG_RPC_STATUS_UNREAD;
	if (vers == 4) {
		if (!bpf_core_type_exists(struct nfsd4_compoundres___nfsd))
			return AGG_RPC_STATUS_UNREAD;
		status = BPF_CORE_READ((struct nfsd4_compoundres___nfsd *)resp, cstate.status);
	} else if (bpf_probe_read_kernel(&status, sizeof(status), resp)) {
		return AGG_RPC_STATUS_UNREAD;
	}
	return bpf_ntohl(status);
}

/* The request's file handle: NFSv3's first argument, NFSv4's current handle. */
static __always_inline const void *request_fh(struct svc_rqst___nfsd *r, __u32 vers, int direct)
{
	struct nfsd4_compoundres___nfsd *res;

	if (vers == 3)
		return READ(direct, r, rq_argp);
	if (!bpf_core_type_exists(struct nfsd4_compoundres___nfsd))
		return 0;
	res = READ(direct, r, rq_resp);
	return res ? __builtin_preserve_access_index(&res->cstate.current_fh.fh_handle) : 0;
}

static __always_inline int on_reply(struct svc_rqst___nfsd *r, int direct)
{
	__u32 prog = READ(direct, r, rq_prog), vers, proc;
	__u64 now, start;
	struct agg_event *ev;

	if (prog != NFS_PROGRAM)
		return 0;
	vers = READ(direct, r, rq_vers);
	if (vers != 3 && vers != 4)
		return 0;
	proc = READ(direct, r, rq_proc);
	ev = agg_event_reuse(); /* every field a slot uses is written below; the others stay zero or stale
	                         * (agg_dims names every dimension a slot breaks down or filters by) */
	if (!ev)
		return 0;
	/* op keys as wire.*: NFSv3 procedures, an NFSv4 COMPOUND by its main op (read from
	 * nfsd's decoded ops only while a slot needs the op, as the status and the client) */
	if (agg_dim_used(AGG_DIM_OP))
		*(__u32 *)ev->dims[AGG_DIM_OP] = vers == 4 && proc ? nfs4_key(READ(direct, r, rq_argp)) : proc;
	*(__u32 *)ev->dims[AGG_DIM_VERSION] = vers;
	if (agg_dim_used(AGG_DIM_STATUS))
		*(__u32 *)ev->dims[AGG_DIM_STATUS] = nfs_status(r, vers, proc, direct);
	if (agg_dim_used(AGG_DIM_CLIENT))
		set_client(ev, r);
	if (agg_dim_used(AGG_DIM_EXPORT)) /* a helper read: only while a slot needs it */
		set_export(ev, proc ? request_fh(r, vers, direct) : 0);
	start = (__u64)READ(direct, r, rq_stime);
	now = bpf_ktime_get_ns();
	ev->latency_ns = start && now > start ? now - start : 0;
	ev->now_ns = now;
	ev->bytes = (__u64)READ(direct, r, rq_arg.len) + READ(direct, r, rq_res.len);
	ev->stats_mask = 1u << AGG_STAT_NFSD_OPS | 1u << AGG_STAT_NFSD_LATENCY | 1u << AGG_STAT_NFSD_SIZE;
	*(__u32 *)ev->dims[AGG_DIM_TIER] = AGG_TIER_CACHE;
	if (nfsd_tier_on) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();
		__u64 *io = bpf_map_lookup_elem(&nfsd_tier_io, &tid);

		if (io && start && *io >= start)
			*(__u32 *)ev->dims[AGG_DIM_TIER] = AGG_TIER_DISK;
	}
	if (nfsd_threads_on) {
		__u32 tid = (__u32)bpf_get_current_pid_tgid();
		struct nfsd_thread *t = bpf_map_lookup_elem(&nfsd_threads, &tid);

		if (t && t->queued) {
			ev->queue_ns = t->queue_ns;
			ev->stats_mask |= 1u << AGG_STAT_NFSD_QUEUE;
			t->queued = 0;
		}
	}
	agg_event_apply(ev);
	return 0;
}

SEC("tp_btf/svc_stats_latency")
int nfsd_reply_btf(__u64 *ctx)
{
	return on_reply((struct svc_rqst___nfsd *)ctx[0], 1);
}

SEC("raw_tp/svc_stats_latency")
int nfsd_reply_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return on_reply((struct svc_rqst___nfsd *)ctx->args[0], 0);
}

/* The transport's entry of nfsd_xprts, created when absent. */
static __always_inline struct nfsd_xprt *xprt_get(__u64 xprt)
{
	struct nfsd_xprt *x = bpf_map_lookup_elem(&nfsd_xprts, &xprt), fresh = {};

	if (x)
		return x;
	bpf_map_update_elem(&nfsd_xprts, &xprt, &fresh, BPF_NOEXIST);
	return bpf_map_lookup_elem(&nfsd_xprts, &xprt);
}

/* Data arrived on a transport (its argument: struct svc_xprt *): the first since its last
 * call was read. */
SEC("raw_tp/svcsock_data_ready")
int nfsd_data_ready(struct bpf_raw_tracepoint_args *ctx)
{
	struct nfsd_xprt *x = xprt_get(ctx->args[0]);

	if (x && !x->data_ns)
		x->data_ns = bpf_ktime_get_ns();
	return 0;
}

/* A transport queued for a thread (its argument: struct svc_xprt *). */
SEC("raw_tp/svc_xprt_enqueue")
int nfsd_enqueue(struct bpf_raw_tracepoint_args *ctx)
{
	struct nfsd_xprt *x = xprt_get(ctx->args[0]);

	if (x)
		x->enqueue_ns = bpf_ktime_get_ns();
	return 0;
}

/* A thread takes a transport off the queue (its argument: the thread's struct svc_rqst, whose
 * rq_xprt is the transport): the start of the request it is about to serve, which waited
 * from the later of the transport's enqueue and its data's arrival. */
SEC("raw_tp/svc_xprt_dequeue")
int nfsd_dequeue(struct bpf_raw_tracepoint_args *ctx)
{
	struct svc_rqst___nfsd *r = (struct svc_rqst___nfsd *)ctx->args[0];
	__u64 xprt = (__u64)BPF_CORE_READ(r, rq_xprt), now = bpf_ktime_get_ns(), since;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct nfsd_thread t = { .xprt = xprt };
	struct nfsd_xprt *x = bpf_map_lookup_elem(&nfsd_xprts, &xprt);
	struct nfsd_thread *old;

	if (x && x->enqueue_ns) {
		since = x->data_ns > x->enqueue_ns ? x->data_ns : x->enqueue_ns;
		t.queue_ns = now > since ? now - since : 0;
		t.queued = 1;
	}
	if (x)
		x->enqueue_ns = x->data_ns = 0;
	if ((old = bpf_map_lookup_elem(&nfsd_threads, &tid)))
		*old = t; /* in place: no update of the map per request */
	else
		bpf_map_update_elem(&nfsd_threads, &tid, &t, BPF_ANY);
	return 0;
}

/* The thread read a whole call off its transport: data arriving from now on is the next
 * call's. */
SEC("raw_tp/svc_xdr_recvfrom")
int nfsd_recvfrom(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct nfsd_thread *t = bpf_map_lookup_elem(&nfsd_threads, &tid);
	struct nfsd_xprt *x;

	if (t && (x = bpf_map_lookup_elem(&nfsd_xprts, &t->xprt)))
		x->data_ns = 0;
	return 0;
}

/* The tier programs (bpf/tier.h): the current thread, if an nfsd thread, did or waited for
 * block I/O now. */
static __always_inline int tier_gate(void)
{
	return 1;
}

static __always_inline int tier_mark(int hashed)
{
	char comm[8];
	__u32 tid;
	__u64 now;

	if (bpf_get_current_comm(comm, sizeof(comm)) || comm[0] != 'n' || comm[1] != 'f' || comm[2] != 's' ||
	    comm[3] != 'd' || comm[4])
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	now = bpf_ktime_get_ns();
	bpf_map_update_elem(&nfsd_tier_io, &tid, &now, BPF_ANY);
	return 0;
}

TIER_PROGRAMS(nfsd_tier, tier_gate, tier_mark)
TIER_FENTRY_PROGRAMS(nfsd_tier, tier_mark)
