/* nfs.bpf.c — the NFS layer and the ARC outcome: the engine's strata:nfs_ops USDT probe
 * (one hit per batch of completed NFS/MOUNT operations, engine/strata_probes.h) feeds
 * nfs.ops, nfs.latency, nfs.size and arc.accesses, broken down by op, client, tier or
 * file (bpf/aggregate.h). Each operation carries its own start and end time. A dataset
 * with neither key nor filter counts the whole batch at once (nfs_slot_batch); the
 * others take each operation in turn (nfs_op_apply). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "strata_probes.h"
#include "llhist.h"
#include "aggregate.h"

char LICENSE[] SEC("license") = "GPL";

/* The deepest tier in the bitmask: pool > l2arc > zil > arc; DIRTY counts as arc. */
static __always_inline __u32 deepest_tier(__u8 tiers)
{
	if (tiers & STRATA_TIER_POOL)
		return AGG_TIER_POOL;
	if (tiers & STRATA_TIER_L2ARC)
		return AGG_TIER_L2ARC;
	if (tiers & STRATA_TIER_ZIL)
		return AGG_TIER_ZIL;
	if (tiers & (STRATA_TIER_ARC | STRATA_TIER_DIRTY))
		return AGG_TIER_ARC;
	return AGG_TIER_NONE;
}

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct strata_nfs_batch);
} nfs_batch SEC(".maps");

/* The statistics the probe feeds. */
#define NFS_STATS (1u << AGG_STAT_NFS_OPS | 1u << AGG_STAT_NFS_LATENCY | 1u << AGG_STAT_NFS_SIZE | \
		   1u << AGG_STAT_ARC_ACCESSES)

/* Per hit: the slots each operation is applied to, and a keyless slot's buckets of the
 * batch, summed before they join its pending chunks (direct-mapped by bucket). In a per-CPU
 * map rather than on the stack: Linux 5.10's verifier refuses a stack access at a variable
 * offset, and would follow every value of a mask kept in a register as a state of its own. */
#define NFS_SUM_WAYS 16 /* a power of two */
struct nfs_hit {
	__u32 per_op;              /* 1 << slot for each slot nfs_op_apply applies operations to */
	__u64 records;             /* a keyless arc.accesses slot's records of the batch */
	__u32 bucket[NFS_SUM_WAYS];
	__u32 count[NFS_SUM_WAYS]; /* all zero between uses */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfs_hit);
} nfs_hits SEC(".maps");

/* Adds count to bucket (the interval's parity included) of keyless slot i, pending until
 * the end of the hit. A global function: the loops that call it are verified without
 * its body. */
__noinline int nfs_keyless_add(__u32 i, __u32 bucket, __u32 count)
{
	__u8 key[AGG_KEY_BYTES] = {};

	if (i >= AGG_MAX_SLOTS)
		return 0;
	agg_add_pending(i, agg_slots[i].gen, bucket, key, 0, count);
	return 0;
}

/* Adds operation j of the batch to keyless slot i's sums of this hit (ep: the hit's
 * interval parity): its records for arc.accesses, else its bucket. A global function: the
 * loop over the batch that calls it is verified without its body (the bucket's own loop
 * inside that one would take the verifier seconds). */
__noinline int nfs_keyless_op(__u32 i, __u32 j, __u32 ep)
{
	__u32 zero = 0, stat, bucket, w;
	struct strata_nfs_batch *b = bpf_map_lookup_elem(&nfs_batch, &zero);
	struct nfs_hit *sum = bpf_map_lookup_elem(&nfs_hits, &zero);
	struct strata_nfs_op *op;
	__u64 v;

	if (!b || !sum || i >= AGG_MAX_SLOTS)
		return 0;
	barrier_var(i); /* the masks stay where i and j are used: the verifier sees the bounds */
	barrier_var(j);
	op = &b->ops[j & (STRATA_NFS_BATCH - 1)];
	stat = agg_slots[i & (AGG_MAX_SLOTS - 1)].stat;
	if (stat == AGG_STAT_ARC_ACCESSES) {
		sum->records += (__u64)op->arc_hits + op->arc_misses;
		return 0;
	}
	if (stat == AGG_STAT_NFS_SIZE)
		v = op->bytes;
	else
		v = op->end_ns > op->start_ns ? op->end_ns - op->start_ns : 0;
	bucket = llhist_bucket(v);
	w = bucket & (NFS_SUM_WAYS - 1);
	if (sum->count[w] && sum->bucket[w] != bucket) {
		nfs_keyless_add(i, ep | sum->bucket[w], sum->count[w]);
		sum->count[w] = 0;
	}
	sum->bucket[w] = bucket;
	sum->count[w]++;
	return 0;
}

/* Counts slot i for the whole batch of n operations at once when it has neither key nor
 * filter: nfs.ops adds n, arc.accesses the batch's records, nfs.latency and nfs.size one
 * add per bucket the batch touched (one per operation otherwise). ep: the hit's interval
 * parity. Returns 1 when the slot needs nothing more of this hit (also a slot this probe
 * does not feed), 0 when each operation is to be applied to it (nfs_op_apply). */
__noinline int nfs_slot_batch(__u32 i, __u32 n, __u32 ep)
{
	__u32 zero = 0, stat;
	struct nfs_hit *sum;
	struct agg_slot *s;

	if (i >= AGG_MAX_SLOTS)
		return 1;
	s = &agg_slots[i];
	stat = s->stat;
	if (stat >= AGG_STAT_COUNT || !(NFS_STATS & (1u << stat)))
		return 1;
	if (s->breakdown != AGG_DIM_NONE || s->nfilters)
		return 0;
	if (stat == AGG_STAT_NFS_OPS) {
		nfs_keyless_add(i, ep, n);
		return 1;
	}
	sum = bpf_map_lookup_elem(&nfs_hits, &zero);
	if (!sum)
		return 0;
	sum->records = 0;
	for (__u32 j = 0; j < STRATA_NFS_BATCH; j++) {
		if (j >= n)
			break;
		nfs_keyless_op(i, j, ep);
	}
	if (stat == AGG_STAT_ARC_ACCESSES) {
		if (sum->records)
			nfs_keyless_add(i, ep, sum->records > 0xffffffffu ? 0xffffffffu : (__u32)sum->records);
		return 1;
	}
	for (__u32 w = 0; w < NFS_SUM_WAYS; w++) {
		if (sum->count[w])
			nfs_keyless_add(i, ep | sum->bucket[w], sum->count[w]);
		sum->count[w] = 0;
	}
	return 1;
}

/* Describes operation i of the batch once and applies it to the slots in the hit's per_op
 * (the others counted the whole batch, nfs_slot_batch), under the interval the hit set. The
 * event was zeroed once for the hit, which set the fields every operation shares; an
 * operation sets its own fields whole, the keys only of the dimensions some slot uses
 * (agg_dims: the others are read by no slot). A global function: the verifier checks it
 * once, not once per operation. */
__noinline int nfs_op_apply(__u32 i)
{
	__u32 zero = 0, nslots = agg_nslots;
	struct strata_nfs_batch *b = bpf_map_lookup_elem(&nfs_batch, &zero);
	struct nfs_hit *h = bpf_map_lookup_elem(&nfs_hits, &zero);
	struct agg_event *ev = agg_event_reuse();
	struct strata_nfs_op *op;

	if (!b || !h || !ev || i >= STRATA_NFS_BATCH)
		return 1;
	barrier_var(i); /* the mask stays where i is used: the verifier sees the bound */
	op = &b->ops[i & (STRATA_NFS_BATCH - 1)];
	*(__u32 *)ev->dims[AGG_DIM_OP] = (op->prog == STRATA_PROG_MOUNT ? 0x10000u : 0) | op->proc;
	if (agg_dim_used(AGG_DIM_CLIENT)) {
		if (op->family == 2) { /* AF_INET: ::ffff:a.b.c.d */
			*(__u64 *)ev->dims[AGG_DIM_CLIENT] = 0;
			*(__u32 *)&ev->dims[AGG_DIM_CLIENT][8] = 0;
			ev->dims[AGG_DIM_CLIENT][10] = 0xff;
			ev->dims[AGG_DIM_CLIENT][11] = 0xff;
			__builtin_memcpy(&ev->dims[AGG_DIM_CLIENT][12], op->client, 4);
		} else {
			__builtin_memcpy(ev->dims[AGG_DIM_CLIENT], op->client, 16);
		}
	}
	if (agg_dim_used(AGG_DIM_TIER))
		*(__u32 *)ev->dims[AGG_DIM_TIER] = deepest_tier(op->tiers);
	if (agg_dim_used(AGG_DIM_FILE))
		*(__u64 *)ev->dims[AGG_DIM_FILE] = op->file_id;
	ev->latency_ns = op->end_ns > op->start_ns ? op->end_ns - op->start_ns : 0;
	ev->bytes = op->bytes;
	ev->hits = op->arc_hits;
	ev->misses = op->arc_misses;
	for (__u32 s = 0; s < AGG_MAX_SLOTS; s++) {
		if (s >= nslots)
			break;
		if (h->per_op >> s & 1)
			agg_slot_run(s, 1);
	}
	return 0;
}

SEC("usdt")
int BPF_USDT(nfs_ops, struct strata_nfs_batch *arg)
{
	__u32 zero = 0, n, nslots = agg_nslots;
	struct strata_nfs_batch *b = bpf_map_lookup_elem(&nfs_batch, &zero);
	struct nfs_hit *h = bpf_map_lookup_elem(&nfs_hits, &zero);
	struct agg_event *ev = agg_event_get();

	if (!b || !h || !ev)
		return 0;
	ev->stats_mask = NFS_STATS;
	ev->now_ns = bpf_ktime_get_ns(); /* the clock read once for the hit */
	agg_event_epoch(ev);
	if (bpf_probe_read_user(&b->count, sizeof(b->count), &arg->count)) {
		agg_stat_add(AGG_STATS_DROPS, 1);
		return 0;
	}
	n = b->count;
	if (n == 0 || n > STRATA_NFS_BATCH ||
	    bpf_probe_read_user(b->ops, n * sizeof(b->ops[0]), arg->ops)) {
		agg_stat_add(AGG_STATS_DROPS, n && n <= STRATA_NFS_BATCH ? n : 1);
		return 0;
	}
	h->per_op = 0;
	for (__u32 s = 0; s < AGG_MAX_SLOTS; s++) {
		if (s >= nslots)
			break;
		if (!nfs_slot_batch(s, n, ev->epoch))
			h->per_op |= 1u << s;
	}
	for (__u32 i = 0; i < STRATA_NFS_BATCH; i++) {
		if (i >= n || !h->per_op)
			break;
		nfs_op_apply(i);
	}
	agg_pending_flush_all();
	return 0;
}
