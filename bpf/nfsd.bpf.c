/* nfsd.bpf.c — the kernel nfsd layer: one hit per NFS request, at sunrpc:svc_stats_latency
 * (the reply is ready, in the nfsd thread that served it), feeds nfsd.ops, nfsd.latency
 * and nfsd.size, broken down by op, client, version or status (bpf/aggregate.h).
 *
 * Everything is read from the request, struct svc_rqst, through CO-RE (the tracepoint's
 * own fields changed layout around 5.17; its argument, the request, did not): the RPC
 * program, version and procedure, the client's address (rq_addr), the time the request
 * was received (rq_stime, ktime_get: the clock of bpf_ktime_get_ns), the call and reply
 * lengths, and for NFSv3 the status word nfsd put first in every result. So the request
 * needs no map between two probes. Only the NFS program (100003) versions 3 and 4 are
 * counted; lockd, nfsacl and the client's callback service share the tracepoint.
 *
 * struct svc_rqst lives in the sunrpc module's BTF: tp_btf (direct loads) where the
 * kernel has module BTF, raw_tp (the same code through bpf_probe_read_kernel)
 * otherwise; the collector autoloads one flavour. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "llhist.h"
#include "aggregate.h"

char LICENSE[] SEC("license") = "GPL";

#define NFS_PROGRAM 100003
#define AF_INET_ 2
#define AF_INET6_ 10

/* The parts of sunrpc's types read here; CO-RE finds their offsets in the running
 * kernel's sunrpc BTF (the ___nfsd suffix keeps them apart from vmlinux.h). */
struct xdr_buf___nfsd {
	unsigned int len;
} __attribute__((preserve_access_index));

struct svc_rqst___nfsd {
	struct { __u16 ss_family; } rq_addr;
	struct xdr_buf___nfsd rq_arg;
	struct xdr_buf___nfsd rq_res;
	__u32 rq_prog;
	__u32 rq_vers;
	__u32 rq_proc;
	__s64 rq_stime;
	void *rq_resp;
} __attribute__((preserve_access_index));

/* READ(direct, p, field): a plain load where the verifier knows p's BTF type (tp_btf),
 * bpf_probe_read_kernel otherwise (raw_tp). */
#define READ(direct, p, field) ((direct) ? (p)->field : BPF_CORE_READ(p, field))

/* The client as 16 key bytes, all written: IPv6, or IPv4 as ::ffff:a.b.c.d. tp_btf loads
 * the address straight from the request; raw_tp copies its first bytes first. */
static __always_inline void set_client(struct agg_event *ev, struct svc_rqst___nfsd *r, int direct)
{
	const __u8 *sa = (const __u8 *)__builtin_preserve_access_index(&r->rq_addr);
	__u64 *key = (__u64 *)ev->dims[AGG_DIM_CLIENT];
	__u8 copy[24];
	__u16 family;

	if (!direct) {
		if (bpf_probe_read_kernel(copy, sizeof(copy), sa))
			__builtin_memset(copy, 0, sizeof(copy));
		sa = copy;
	}
	family = *(const __u16 *)sa;
	key[0] = 0;
	key[1] = 0;
	if (family == AF_INET_) {
		key[1] = 0xffff0000ull | (__u64)*(const __u32 *)(sa + 4) << 32;
	} else if (family == AF_INET6_) {
		key[0] = *(const __u64 *)(sa + 8);
		key[1] = *(const __u64 *)(sa + 16);
	}
}

/* NFSv3: the status word every result struct of nfsd's starts with (network order);
 * NULL has none (ok). NFSv4: not read (key "unread"). */
static __always_inline __u32 nfs_status(struct svc_rqst___nfsd *r, __u32 vers, __u32 proc, int direct)
{
	__be32 status = 0;
	void *resp;

	if (vers != 3)
		return AGG_RPC_STATUS_UNREAD;
	if (proc == 0)
		return AGG_RPC_STATUS_OK;
	resp = READ(direct, r, rq_resp);
	if (!resp || bpf_probe_read_kernel(&status, sizeof(status), resp))
		return AGG_RPC_STATUS_UNREAD;
	return bpf_ntohl(status);
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
	ev = agg_event_reuse(); /* every field used is written below; the others stay zero */
	if (!ev)
		return 0;
	/* op keys as wire.*: NFSv3 procedures, an NFSv4 COMPOUND as "compound" */
	*(__u32 *)ev->dims[AGG_DIM_OP] = vers == 4 && proc ? AGG_NFS_OP_COMPOUND : proc;
	*(__u32 *)ev->dims[AGG_DIM_VERSION] = vers;
	*(__u32 *)ev->dims[AGG_DIM_STATUS] = nfs_status(r, vers, proc, direct);
	set_client(ev, r, direct);
	start = (__u64)READ(direct, r, rq_stime);
	now = bpf_ktime_get_ns();
	ev->latency_ns = start && now > start ? now - start : 0;
	ev->bytes = (__u64)READ(direct, r, rq_arg.len) + READ(direct, r, rq_res.len);
	ev->stats_mask = 1u << AGG_STAT_NFSD_OPS | 1u << AGG_STAT_NFSD_LATENCY | 1u << AGG_STAT_NFSD_SIZE;
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
