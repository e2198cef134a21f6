/* nfs.bpf.c — the NFS layer and the ARC outcome: the engine's strata:nfs_keys and
 * strata:nfs_ops USDT probes (one hit each per batch of completed NFS/MOUNT operations,
 * engine/strata_probes.h) feed nfs.ops, nfs.latency, nfs.size and arc.accesses, broken
 * down by op, client, tier or file (bpf/aggregate.h). Each operation carries its own start
 * and end time. A hit copies each operation's counting key (4 bytes: procedure and tiers)
 * for the whole batch. The nfs_keys program counts the datasets that read only those
 * (bpf/nfs_readers.h: nfs.ops, unfiltered, without key or by op or tier), the batch at
 * once. The nfs_ops program counts the others (nfs_needs_ops): its hit copies the
 * operations whole (64 bytes each), STRATA_NFS_CHUNK at a time, and counts each chunk
 * (nfs_chunk_run) from the batch's first whole operation on (ops_from). A dataset
 * without filter counts a range of operations at once (nfs_slot_batch): a count the range
 * sums whole; a counter by op or tier, per key index; the others, per counts key in a
 * small table (nfs_sums) emptied after each range. So each key and chunk the range
 * touched joins its home once. A dataset with filters takes each operation in turn
 * (nfs_op_apply). */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>
#include "strata_probes.h"
#include "llhist.h"
#include "aggregate.h"
#include "nfs_readers.h"

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

/* The hit's batch: its counting keys, copied whole. */
struct nfs_keys {
	__u32 count;
	__u32 ops_from;
	__u32 keys[STRATA_NFS_BATCH];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfs_keys);
} nfs_batch SEC(".maps");

/* The operations of the chunk being counted: batch index j at ops[(j - base) % STRATA_NFS_CHUNK]. */
struct nfs_chunk {
	struct strata_nfs_op ops[STRATA_NFS_CHUNK];
	__u32 base;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfs_chunk);
} nfs_chunk SEC(".maps");

/* The statistics the probe feeds. */
#define NFS_STATS (1u << AGG_STAT_NFS_OPS | 1u << AGG_STAT_NFS_LATENCY | 1u << AGG_STAT_NFS_SIZE | \
		   1u << AGG_STAT_ARC_ACCESSES)

/* A range's sums: a dataset without filter adds each operation of the range here, under
 * its whole counts key {slot, generation, chunk, key}, and each entry taken joins its home
 * once at the end of the range (agg_pending_flush), not once per operation. Open addressing,
 * up to NFS_SUM_PROBES entries from the key's hash; an entry taken keeps its key for the
 * whole range, and a key that finds no free entry among its probes, or whose slot already
 * took NFS_SUM_PER_SLOT entries, goes the way of a single operation (agg_add_pending):
 * either way every count lands once. One entry per element of a per-CPU array, so each
 * lookup gives a pointer at a fixed offset (Linux 5.10's verifier). */
#define NFS_SUM_ENTRIES 128 /* a power of two */
#define NFS_SUM_PROBES  4
#define NFS_SUM_PER_SLOT 32 /* a slot with many keys (files, clients) leaves room to the others */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, NFS_SUM_ENTRIES);
	__type(key, __u32);
	__type(value, struct agg_pending);
} nfs_sums SEC(".maps"); /* empty between ranges */

/* Key indices of the small closed key sets: an NFS procedure p is p, a MOUNT one 32 + p,
 * a tier its key value. */
#define NFS_KEY_INDICES 64

/* The key value under breakdown bd (op or tier) of an operation whose counting key is k
 * (strata_nfs_key). */
static __always_inline __u32 nfs_key_value(__u32 k, __u32 bd)
{
	return bd == AGG_DIM_TIER ? deepest_tier(k >> 24) : k & (STRATA_NFS_KEY_MOUNT | 0xffff);
}

/* The key index of an operation whose counting key is k under breakdown bd (op or tier),
 * or NFS_KEY_INDICES when it has none (a procedure number from 32 on). */
static __always_inline __u32 nfs_key_index(__u32 k, __u32 bd)
{
	if (bd == AGG_DIM_TIER)
		return deepest_tier(k >> 24);
	if ((k & 0xffff) >= 32)
		return NFS_KEY_INDICES;
	return (k & 0xffff) + (k & STRATA_NFS_KEY_MOUNT ? 32 : 0);
}

/* Per hit: the slots counted chunk by chunk; per range: the slots each operation is applied
 * to, the nfs_sums entries taken, the range's ARC records and a counter's sums per key index. In a per-CPU map rather than on
 * the stack: Linux 5.10's verifier refuses a stack access at a variable offset, and would
 * follow every value of a mask kept in a register as a state of its own. */
struct nfs_hit {
	__u32 chunked;                  /* 1 << slot for each slot that reads the operations (nfs_needs_ops) */
	__u32 per_op;                   /* 1 << slot for each slot nfs_op_apply applies the chunk's operations to */
	__u32 nsums;                    /* entries of nfs_sums taken in this range */
	__u64 hits;                     /* the range's ARC records found, and not found */
	__u64 misses;
	__u8 claimed[AGG_MAX_SLOTS];    /* nfs_sums entries each slot took in this range */
	__u8 sums[NFS_SUM_ENTRIES];     /* which, in the order they were taken */
	__u64 count[NFS_KEY_INDICES];   /* a counter slot's sum per key index of the range (nfs_key_index) */
	__u32 ops[NFS_KEY_INDICES];     /* the operations in it; all zero between uses */
	__u64 touched;                  /* 1 << key index of each sum the range added to */
	__u64 refused;                  /* 1 << key index of each sum nfs_sums had no room for */
};
_Static_assert(NFS_SUM_PER_SLOT < 256 && NFS_SUM_ENTRIES <= 256, "nfs_hit's counts and indices are bytes");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfs_hit);
} nfs_hits SEC(".maps");

/* Adds count at bucket (the interval's parity included) under the key whose first 8 bytes
 * are key0 (the rest zero) to slot i, pending until the end of the hit: a count the batch
 * summed whole (keyless nfs.ops, arc.accesses and arc.accesses[hit/miss]). */
__noinline int nfs_batch_add(__u32 i, __u32 bucket, __u64 key0, __u64 count)
{
	__u64 key[AGG_KEY_BYTES / 8] = { key0 };

	if (i >= AGG_MAX_SLOTS)
		return 0;
	agg_add_pending(i, agg_slots[i].gen, bucket, (const __u8 *)key, 0, count);
	return 0;
}

/* Operation j of the batch, in the chunk being counted (nfs_chunk_run). */
static __always_inline struct strata_nfs_op *nfs_op_at(struct nfs_chunk *c, __u32 j)
{
	return &c->ops[(j - c->base) & (STRATA_NFS_CHUNK - 1)];
}

/* Adds operation j's ARC records to the range's sums. */
__noinline int nfs_arc_op(__u32 j)
{
	__u32 zero = 0;
	struct nfs_chunk *c = bpf_map_lookup_elem(&nfs_chunk, &zero);
	struct nfs_hit *h = bpf_map_lookup_elem(&nfs_hits, &zero);
	struct strata_nfs_op *op;

	if (!c || !h)
		return 0;
	barrier_var(j); /* the mask stays where j is used: the verifier sees the bound */
	op = nfs_op_at(c, j);
	h->hits += op->arc_hits;
	h->misses += op->arc_misses;
	return 0;
}

/* Adds inc, from adds operations, at bucket (the interval's parity included) of key to
 * slot i (generation gen) in the batch's sums. Returns 0 when they have no room for it. */
static __always_inline int nfs_sum_at(__u32 i, __u32 gen, __u32 bucket, const __u64 *key, int bounded,
				      __u64 inc, __u64 adds)
{
	/* the counts key as agg_key's three words: {slot, gen, chunk}, then the key bytes */
	__u64 w = i | (__u64)(gen & 0xffff) << 16 | (__u64)(bucket & ~(AGG_CHUNK - 1)) << 32, h, *k;
	__u32 zero = 0, idx;
	struct nfs_hit *hit;
	struct agg_pending *e;

	h = (w * 0x9e3779b97f4a7c15ULL ^ key[0] * 0xc2b2ae3d27d4eb4fULL ^ key[1]) * 0xbf58476d1ce4e5b9ULL;
	for (__u32 p = 0; p < NFS_SUM_PROBES; p++) {
		idx = (__u32)(h >> 32) + p;
		idx &= NFS_SUM_ENTRIES - 1;
		e = bpf_map_lookup_elem(&nfs_sums, &idx);
		if (!e)
			return 0;
		k = (__u64 *)&e->k;
		if (e->used) {
			if (k[0] != w || k[1] != key[0] || k[2] != key[1])
				continue;
		} else {
			hit = bpf_map_lookup_elem(&nfs_hits, &zero);
			if (!hit || hit->claimed[i & (AGG_MAX_SLOTS - 1)] >= NFS_SUM_PER_SLOT ||
			    hit->nsums >= NFS_SUM_ENTRIES)
				return 0;
			hit->claimed[i & (AGG_MAX_SLOTS - 1)]++;
			hit->sums[hit->nsums++ & (NFS_SUM_ENTRIES - 1)] = idx;
			k[0] = w;
			k[1] = key[0];
			k[2] = key[1];
			e->used = 1;
			e->bounded = bounded;
		}
		*agg_chunk_counter(&e->c, bucket) += inc;
		e->adds += adds;
		return 1;
	}
	return 0;
}

/* Adds operation j of the batch to slot i (unfiltered; its breakdown none, op, client, tier
 * or file) in the range's sums (ep: the hit's interval parity), as agg_slot_apply would add
 * it. An op or tier key is read from the batch's counting keys, and nfs.ops reads nothing
 * else of the operation (the hit may not have copied the operations: nfs_needs_ops). A
 * global function: the loop over the range that calls it is verified without its body
 * (the bucket's own loop inside that one would take the verifier seconds). */
__noinline int nfs_sum_op(__u32 i, __u32 j, __u32 ep)
{
	__u32 zero = 0, stat, bd, gen, bucket;
	struct nfs_keys *b = bpf_map_lookup_elem(&nfs_batch, &zero);
	struct nfs_chunk *c = bpf_map_lookup_elem(&nfs_chunk, &zero);
	__u64 key[AGG_KEY_BYTES / 8] = {}, inc = 1;
	struct strata_nfs_op *op;
	struct agg_slot *s;

	if (!b || !c || i >= AGG_MAX_SLOTS)
		return 0;
	barrier_var(i); /* the masks stay where i and j are used: the verifier sees the bounds */
	barrier_var(j);
	i &= AGG_MAX_SLOTS - 1;
	op = nfs_op_at(c, j);
	s = &agg_slots[i];
	stat = s->stat;
	bd = s->breakdown;
	gen = s->gen;
	if (bd == AGG_DIM_OP || bd == AGG_DIM_TIER) {
		key[0] = nfs_key_value(b->keys[j & (STRATA_NFS_BATCH - 1)], bd);
	} else if (bd == AGG_DIM_FILE) {
		key[0] = op->file_id;
	} else if (bd == AGG_DIM_CLIENT) {
		if (op->family == 2) /* AF_INET: ::ffff:a.b.c.d */
			key[1] = 0xffff0000ull | (__u64)*(__u32 *)op->client << 32;
		else
			__builtin_memcpy(key, op->client, 16);
	}
	if (stat == AGG_STAT_NFS_OPS) {
		bucket = 0;
	} else if (stat == AGG_STAT_ARC_ACCESSES) {
		bucket = 0;
		inc = (__u64)op->arc_hits + op->arc_misses;
		if (!inc)
			return 0;
	} else if (stat == AGG_STAT_NFS_SIZE) {
		bucket = llhist_bucket(op->bytes);
	} else {
		bucket = llhist_bucket(op->end_ns > op->start_ns ? op->end_ns - op->start_ns : 0);
	}
	bucket |= ep;
	if (!nfs_sum_at(i, gen, bucket, key, bd != AGG_DIM_NONE, inc, 1))
		agg_add_pending(i, gen, bucket, (const __u8 *)key, bd != AGG_DIM_NONE, inc);
	return 0;
}

/* How nfs_count_op takes an operation. */
#define NFS_COUNT_TIER    1 /* its key index is its tier's, else its procedure's */
#define NFS_COUNT_ARC     2 /* it adds its ARC records, else 1 */
#define NFS_COUNT_REFUSED 4 /* only when its sum found no room: one by one (nfs_sum_op) */

/* Adds operation j of the batch (keys b, its chunk c) to slot i's sum per key index in h (a
 * counter broken down by op or tier, without filter). An operation without key index takes
 * nfs_sum_op. */
static __always_inline void nfs_count_one(struct nfs_keys *b, struct nfs_chunk *c, struct nfs_hit *h, __u32 i,
					  __u32 j, __u32 ep, __u32 how)
{
	__u32 x = nfs_key_index(b->keys[j & (STRATA_NFS_BATCH - 1)], how & NFS_COUNT_TIER ? AGG_DIM_TIER : AGG_DIM_OP);
	__u64 inc = 1;

	if (how & NFS_COUNT_REFUSED) {
		if (x < NFS_KEY_INDICES && h->refused >> x & 1)
			nfs_sum_op(i, j, ep);
		return;
	}
	if (how & NFS_COUNT_ARC) {
		struct strata_nfs_op *op = nfs_op_at(c, j);

		inc = (__u64)op->arc_hits + op->arc_misses;
		if (!inc)
			return;
	}
	if (x >= NFS_KEY_INDICES) {
		nfs_sum_op(i, j, ep);
		return;
	}
	h->count[x] += inc;
	h->ops[x]++;
	h->touched |= 1ull << x;
}

/* Operations nfs_count_op takes per call (a power of two dividing STRATA_NFS_CHUNK). */
#define NFS_COUNT_STEP 32

/* Adds operations j .. j + NFS_COUNT_STEP - 1 of those before hi with nfs_count_one: a few
 * instructions each. A global function: the loop over the range that calls it is verified
 * without its branches. */
__noinline int nfs_count_op(__u32 i, __u32 j, __u32 hi, __u32 ep, __u32 how)
{
	__u32 zero = 0;
	struct nfs_keys *b = bpf_map_lookup_elem(&nfs_batch, &zero);
	struct nfs_chunk *c = bpf_map_lookup_elem(&nfs_chunk, &zero);
	struct nfs_hit *h = bpf_map_lookup_elem(&nfs_hits, &zero);

	if (!b || !c || !h)
		return 0;
	for (__u32 k = 0; k < NFS_COUNT_STEP; k++) {
		if (j + k >= hi)
			break;
		nfs_count_one(b, c, h, i, j + k, ep, how);
	}
	return 0;
}

/* Adds slot i's sum of key index x to the batch's sums and empties it; a sum they have no
 * room for is marked refused, its operations then added one by one (NFS_COUNT_REFUSED). */
__noinline int nfs_count_put(__u32 i, __u32 x, __u32 ep)
{
	__u32 zero = 0, bd, gen;
	struct nfs_hit *h = bpf_map_lookup_elem(&nfs_hits, &zero);
	__u64 key[AGG_KEY_BYTES / 8] = {};

	if (!h || i >= AGG_MAX_SLOTS || x >= NFS_KEY_INDICES)
		return 0;
	barrier_var(i);
	barrier_var(x);
	i &= AGG_MAX_SLOTS - 1;
	x &= NFS_KEY_INDICES - 1;
	if (!h->ops[x])
		return 0;
	bd = agg_slots[i].breakdown;
	gen = agg_slots[i].gen;
	key[0] = bd == AGG_DIM_OP && x >= 32 ? STRATA_NFS_KEY_MOUNT | (x - 32) : x;
	if (!nfs_sum_at(i, gen, ep, key, 1, h->count[x], h->ops[x]))
		h->refused |= 1ull << x;
	h->count[x] = 0;
	h->ops[x] = 0;
	return 0;
}

/* Merges the range's k-th nfs_sums entry into its home and empties it. */
__noinline int nfs_sum_flush(__u32 k)
{
	__u32 zero = 0, idx;
	struct nfs_hit *h = bpf_map_lookup_elem(&nfs_hits, &zero);
	struct agg_pending *e;

	if (!h)
		return 0;
	idx = h->sums[k & (NFS_SUM_ENTRIES - 1)];
	e = bpf_map_lookup_elem(&nfs_sums, &idx);
	if (e && e->used)
		agg_pending_flush(e);
	return 0;
}

/* Whether slot i reads more of the operations than their counting keys: every slot fed by
 * this layer but those of the nfs_keys program (bpf/nfs_readers.h). */
__noinline int nfs_needs_ops(__u32 i)
{
	__u32 stat;

	if (i >= AGG_MAX_SLOTS)
		return 0;
	stat = agg_slots[i].stat;
	if (stat >= AGG_STAT_COUNT || !(NFS_STATS & (1u << stat)))
		return 0;
	return !nfs_reads_keys_only(stat, agg_slots[i].breakdown, agg_slots[i].nfilters);
}

/* Counts slot i for operations lo .. hi - 1 of the batch when it has no filter: the whole
 * batch for a slot that reads only the counting keys, else the chunk being counted
 * (nfs_chunk_run). nfs.ops without key adds their number, arc.accesses without key or by
 * hit/miss their records, a counter by op or tier its sums per key index, the others each
 * operation in the range's sums (nfs_sum_op). ep: the hit's interval parity. Returns 1
 * when the slot needs nothing more of these operations (also a slot this probe does not
 * feed), 0 when each operation is to be applied to it (nfs_op_apply). */
__noinline int nfs_slot_batch(__u32 i, __u32 lo, __u32 hi, __u32 ep)
{
	__u32 zero = 0, stat, bd, how;
	struct nfs_hit *h;
	struct agg_slot *s;

	if (i >= AGG_MAX_SLOTS)
		return 1;
	s = &agg_slots[i];
	stat = s->stat;
	if (stat >= AGG_STAT_COUNT || !(NFS_STATS & (1u << stat)))
		return 1;
	bd = s->breakdown;
	if (s->nfilters)
		return 0;
	if (stat == AGG_STAT_NFS_OPS && bd == AGG_DIM_NONE) {
		nfs_batch_add(i, ep, 0, hi > lo ? hi - lo : 0);
		return 1;
	}
	h = bpf_map_lookup_elem(&nfs_hits, &zero);
	if (!h)
		return 0;
	if (stat == AGG_STAT_ARC_ACCESSES && (bd == AGG_DIM_NONE || bd == AGG_DIM_HITMISS)) {
		h->hits = 0;
		h->misses = 0;
		for (__u32 k = 0; k < STRATA_NFS_CHUNK; k++) {
			if (lo + k >= hi)
				break;
			nfs_arc_op(lo + k);
		}
		if (bd == AGG_DIM_NONE) {
			nfs_batch_add(i, ep, 0, h->hits + h->misses);
		} else {
			nfs_batch_add(i, ep, AGG_HITMISS_HIT, h->hits);
			nfs_batch_add(i, ep, AGG_HITMISS_MISS, h->misses);
		}
		return 1;
	}
	if (bd != AGG_DIM_NONE && bd != AGG_DIM_OP && bd != AGG_DIM_TIER && bd != AGG_DIM_FILE &&
	    bd != AGG_DIM_CLIENT)
		return 0;
	h->claimed[i & (AGG_MAX_SLOTS - 1)] = 0;
	if ((stat == AGG_STAT_NFS_OPS || stat == AGG_STAT_ARC_ACCESSES) &&
	    (bd == AGG_DIM_OP || bd == AGG_DIM_TIER)) {
		how = (bd == AGG_DIM_TIER ? NFS_COUNT_TIER : 0) | (stat == AGG_STAT_ARC_ACCESSES ? NFS_COUNT_ARC : 0);
		for (__u32 k = 0; k < STRATA_NFS_BATCH; k += NFS_COUNT_STEP) {
			if (lo + k >= hi)
				break;
			nfs_count_op(i, lo + k, hi, ep, how);
		}
		h->refused = 0;
		for (__u32 x = 0; x < NFS_KEY_INDICES; x++) {
			if (h->touched >> x & 1)
				nfs_count_put(i, x, ep);
		}
		h->touched = 0;
		if (!h->refused)
			return 1;
		for (__u32 k = 0; k < STRATA_NFS_BATCH; k += NFS_COUNT_STEP) {
			if (lo + k >= hi)
				break;
			nfs_count_op(i, lo + k, hi, ep, how | NFS_COUNT_REFUSED);
		}
		return 1;
	}
	for (__u32 k = 0; k < STRATA_NFS_CHUNK; k++) {
		if (lo + k >= hi)
			break;
		nfs_sum_op(i, lo + k, ep);
	}
	return 1;
}

/* Describes operation i of the batch once and applies it to the slots in the hit's per_op
 * (the others counted the whole chunk, nfs_slot_batch), under the interval the hit set. The
 * event was zeroed once for the hit, which set the fields every operation shares; an
 * operation sets its own fields whole, the keys only of the dimensions some slot uses
 * (agg_dims: the others are read by no slot). A global function: the verifier checks it
 * once, not once per operation. */
__noinline int nfs_op_apply(__u32 i)
{
	__u32 zero = 0, nslots = agg_nslots, k;
	struct nfs_keys *b = bpf_map_lookup_elem(&nfs_batch, &zero);
	struct nfs_chunk *c = bpf_map_lookup_elem(&nfs_chunk, &zero);
	struct nfs_hit *h = bpf_map_lookup_elem(&nfs_hits, &zero);
	struct agg_event *ev = agg_event_reuse();
	struct strata_nfs_op *op;

	if (!b || !c || !h || !ev || i >= STRATA_NFS_BATCH)
		return 1;
	barrier_var(i); /* the masks stay where i is used: the verifier sees the bounds */
	op = nfs_op_at(c, i);
	k = b->keys[i & (STRATA_NFS_BATCH - 1)];
	*(__u32 *)ev->dims[AGG_DIM_OP] = nfs_key_value(k, AGG_DIM_OP);
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
		*(__u32 *)ev->dims[AGG_DIM_TIER] = nfs_key_value(k, AGG_DIM_TIER);
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

/* Empties the range's sums into their homes. */
static __always_inline void nfs_sums_flush(struct nfs_hit *h)
{
	for (__u32 k = 0; k < NFS_SUM_ENTRIES; k++) {
		if (k >= h->nsums)
			break;
		nfs_sum_flush(k);
	}
	h->nsums = 0;
}

/* Copies the operations of the batch of n (at ops, the engine's address of its operations)
 * from lo .. to the chunk's end into nfs_chunk, STRATA_NFS_CHUNK at most, those the batch
 * holds whole only (from its ops_from on: the others' memory may never have been written,
 * nor so be there to read), and counts them for the slots that read the operations (the
 * hit's chunked); ep: the hit's interval parity. A global function: the loop over the
 * chunks that calls it is verified without its body. */
__noinline int nfs_chunk_run(__u32 lo, __u32 n, __u32 ep, __u64 ops)
{
	__u32 zero = 0, nslots = agg_nslots, m, hi, from;
	struct nfs_keys *b = bpf_map_lookup_elem(&nfs_batch, &zero);
	struct nfs_chunk *c = bpf_map_lookup_elem(&nfs_chunk, &zero);
	struct nfs_hit *h = bpf_map_lookup_elem(&nfs_hits, &zero);
	__u64 size;

	if (!b || !c || !h || lo >= n || n > STRATA_NFS_BATCH)
		return 0;
	from = b->ops_from;
	if (from >= lo + STRATA_NFS_CHUNK || from >= n)
		return 0;
	hi = n - lo < STRATA_NFS_CHUNK ? n : lo + STRATA_NFS_CHUNK;
	if (from > lo)
		lo = from;
	m = hi - lo;
	size = (__u64)m * sizeof(c->ops[0]);
	barrier_var(size); /* checked where it is used: the verifier sees the bound */
	if (size > sizeof(c->ops))
		return 0;
	if (bpf_probe_read_user(c->ops, size, (const void *)(ops + (__u64)lo * sizeof(struct strata_nfs_op)))) {
		agg_stat_add(AGG_STATS_DROPS, m);
		return 0;
	}
	c->base = lo;
	h->per_op = 0;
	for (__u32 s = 0; s < AGG_MAX_SLOTS; s++) {
		if (s >= nslots)
			break;
		if ((h->chunked >> s & 1) && !nfs_slot_batch(s, lo, hi, ep))
			h->per_op |= 1u << s;
	}
	for (__u32 k = 0; k < STRATA_NFS_CHUNK; k++) {
		if (lo + k >= hi || !h->per_op)
			break;
		nfs_op_apply(lo + k);
	}
	nfs_sums_flush(h);
	return 0;
}

/* A hit of either probe on the engine's batch at arg: the keys copied, then the slots of
 * the probe counted (whole: nfs_ops's, those that read the operations; else nfs_keys's). */
static __always_inline int nfs_hit(struct strata_nfs_batch *arg, int whole)
{
	__u32 zero = 0, n, nslots = agg_nslots;
	struct nfs_keys *b = bpf_map_lookup_elem(&nfs_batch, &zero);
	struct nfs_hit *h = bpf_map_lookup_elem(&nfs_hits, &zero);
	struct agg_event *ev = agg_event_get();

	if (!b || !h || !ev)
		return 0;
	ev->stats_mask = NFS_STATS;
	ev->now_ns = bpf_ktime_get_ns(); /* the clock read once for the hit */
	agg_event_epoch(ev);
	if (bpf_probe_read_user(&b->count, sizeof(b->count) + sizeof(b->ops_from), &arg->count)) {
		agg_stat_add(AGG_STATS_DROPS, 1);
		return 0;
	}
	n = b->count;
	if (n == 0 || n > STRATA_NFS_BATCH ||
	    bpf_probe_read_user(b->keys, n * sizeof(b->keys[0]), arg->keys)) {
		agg_stat_add(AGG_STATS_DROPS, n && n <= STRATA_NFS_BATCH ? n : 1);
		return 0;
	}
	h->chunked = 0;
	h->nsums = 0;
	for (__u32 s = 0; s < AGG_MAX_SLOTS; s++) {
		if (s >= nslots)
			break;
		if (nfs_needs_ops(s)) {
			if (whole)
				h->chunked |= 1u << s;
			barrier(); /* kept in memory, not in a register whose every value the verifier follows */
		} else if (!whole) {
			nfs_slot_batch(s, 0, n, ev->epoch);
		}
	}
	nfs_sums_flush(h);
	for (__u32 c = 0; whole && c < STRATA_NFS_BATCH / STRATA_NFS_CHUNK; c++) {
		if (c * STRATA_NFS_CHUNK >= n || !h->chunked)
			break;
		nfs_chunk_run(c * STRATA_NFS_CHUNK, n, ev->epoch, (__u64)arg->ops);
	}
	agg_pending_flush_all();
	return 0;
}

SEC("usdt")
int BPF_USDT(nfs_keys, struct strata_nfs_batch *arg)
{
	return nfs_hit(arg, 0);
}

SEC("usdt")
int BPF_USDT(nfs_ops, struct strata_nfs_batch *arg)
{
	return nfs_hit(arg, 1);
}
