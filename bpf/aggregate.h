/* aggregate.h — dataset slots and the per-hit aggregation shared by the layer programs.
 *
 * Every layer program (nfs, cache, disk, vdev, wire, fs, nfsd) includes this header once and gets its own
 * copy of the maps below. Userspace (collectors/) fills up to AGG_MAX_SLOTS dataset
 * slots {statistic, breakdown, filters}; a probe hit describes itself once in an
 * agg_event and agg_event_apply() loops over the slots, so several datasets on one
 * probe cost one hit. Counts are cumulative, per CPU, per {slot, generation, first bucket
 * of a chunk, key bytes}, in chunks of AGG_CHUNK neighbouring buckets; userspace reads
 * them, sums the CPUs and the two homes of a chunk below, and diffs them.
 *
 * Where a chunk lives: first in agg_table, a per-CPU array indexed by a hash of its key
 * (direct-mapped: each CPU's entry holds the first key that took it, for as long as its
 * slot's generation lives), else in agg_counts, a per-CPU hash. The table costs an array
 * lookup and a key compare per event where the hash map costs hashing 24 bytes, a bucket
 * walk and the compare (about 70 ns of the ~80 ns each dataset added to an event,
 * bench/collect_bpfcost.py); keys that collide in the table, or come after it is full,
 * go to the hash map, so no key is ever lost or counted twice.
 *
 * Why chunks: a latency statistic spreads its events over a hundred or more buckets
 * per key. With one hash entry per bucket every event is a lookup of a cold entry
 * (a cache and TLB miss in a busy server, ~0.2 us on a VM); with 32 buckets (about a
 * third of a decade) per entry the few entries a key uses stay hot.
 *
 * A probe hit that carries a batch of events (nfs_ops) adds them to per-CPU pending
 * chunks first (AGG_PEND_WAYS per slot, a key's neighbouring chunks in different ways)
 * and merges those into agg_counts once at the end of the hit: a batch's events mostly
 * share a few keys and chunks, so most of them cost an array lookup and a compare
 * instead of a hash lookup.
 *
 * Intervals: every hit is counted under the parity of the wall-clock interval it happened
 * in (AGG_EPOCH_BIT of agg_key.bucket), read from agg_epoch, one word userspace rewrites at
 * every interval's end: the next boundary on CLOCK_MONOTONIC and the parity of the interval
 * before it. Userspace reads an interval's counts once it ended, while hits go to the other
 * parity's entries: however late the read, the interval holds its own hits, and every
 * dataset the same ones.
 *
 * The structs and constants (everything above the __bpf__ section) are shared
 * with the collector, which includes this header too.
 */
#ifndef STRATA_AGGREGATE_H
#define STRATA_AGGREGATE_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define AGG_MAX_SLOTS   32
#define AGG_MAX_FILTERS 4
#define AGG_KEY_BYTES   16
#define AGG_CHUNK       32     /* llhist buckets per counts entry (a power of two) */
#define AGG_COUNTS_MAX  8192   /* {slot, key, chunk} entries, all slots of one layer */
#define AGG_STARTS_MAX  16384  /* block request structs followed by the disk layer */
#define AGG_PEND_WAYS   8      /* pending chunks per slot during one batched hit (a power of two) */
#define AGG_TABLE_SIZE  512    /* agg_table entries per CPU (a power of two) */
#define AGG_EPOCH_BIT   0x80000000u /* in agg_key.bucket: the parity of the hit's interval */

/* Statistics computed in the kernel (gauges come from the engine's stats socket),
 * breakdown / filter dimensions and key values: catalogue/statistics.def. */
enum agg_stat {
	AGG_STAT_NONE = 0, /* free slot */
#define STAT_KERNEL(ID, ...) AGG_STAT_##ID,
#include "statistics.def"
	AGG_STAT_COUNT
};
_Static_assert(AGG_STAT_COUNT <= 32, "agg_event.stats_mask has a bit per statistic");

/* The event carries each dimension as 16 key bytes: op and tier a __u32 key value
 * (below), client an IPv6 address (IPv4 as ::ffff:a.b.c.d), file a __u64 object id,
 * device a __u32 kernel dev_t (major << 20 | minor), vdev a __u32 index in the engine's
 * pool; for fs.*, file a struct agg_fs_file and process a struct agg_fs_process (below);
 * hit/miss is not in the event. */
enum agg_dim {
	AGG_DIM_NONE = 0,
#define STAT_DIM(ID, ...) AGG_DIM_##ID,
#include "statistics.def"
	AGG_DIM_COUNT
};

/* Key values of the closed key sets: AGG_TIER_ARC, AGG_DISK_READ, AGG_HITMISS_MISS, ... */
enum agg_key_value {
#define STAT_KEY(SET, ID, value, text) AGG_##SET##_##ID = value,
#include "statistics.def"
};

/* fs file key: the inode, as (device, inode number); dev is the kernel's dev_t
 * (major << 20 | minor) of the inode's super block. */
struct agg_fs_file {
	__u64 ino;
	__u32 dev;
	__u32 zero;
};

/* fs ring buffer record: the path an openat was given for a file it opened (relative
 * to dirfd, AT_FDCWD for the working directory), for naming file keys. */
#define AGG_FS_PATH_BYTES 512
struct agg_fs_name {
	struct agg_fs_file file;
	__u32 tgid;
	__s32 dirfd;
	char path[AGG_FS_PATH_BYTES];
};

/* fs process key: the thread group id and the first bytes of its leader's comm. */
#define AGG_FS_COMM_BYTES 12
struct agg_fs_process {
	__u32 tgid;
	char comm[AGG_FS_COMM_BYTES];
};

/* Key bytes of the explicit overflow key ("other"). */
#define AGG_OTHER_BYTE 0xff

struct agg_filter {
	__u32 dim;                   /* enum agg_dim */
	__u8 value[AGG_KEY_BYTES];   /* the dimension's key bytes to match */
};

struct agg_slot {
	__u32 stat;      /* enum agg_stat; 0 = free. Written last by userspace. */
	__u32 breakdown; /* enum agg_dim */
	__u32 gen;       /* bumps on every reuse; entries of older generations are stale */
	__u32 nfilters;
	struct agg_filter filters[AGG_MAX_FILTERS];
};

struct agg_key {
	__u16 slot;
	__u16 gen;
	__u32 bucket;             /* first llhist bucket of the chunk (a multiple of AGG_CHUNK; 0 for
	                           * counters), with AGG_EPOCH_BIT for the odd intervals */
	__u8 key[AGG_KEY_BYTES];  /* breakdown key bytes; zero without breakdown */
} __attribute__((aligned(8))); /* compared and hashed as three __u64 */

/* Per-CPU value of a counts entry: buckets bucket .. bucket + AGG_CHUNK - 1. */
struct agg_chunk {
	__u64 counts[AGG_CHUNK];
};

/* Per-CPU value of an agg_table entry: the chunk of key k once used is set. */
struct agg_table_entry {
	struct agg_key k;
	__u64 used;
	struct agg_chunk c;
};

struct agg_keyset_key {
	__u16 slot;
	__u16 gen;
	__u8 key[AGG_KEY_BYTES];
};

/* agg_stats per-CPU array: index 0 = drops (map full, unreadable probe argument),
 * 1 + slot = hits folded into that slot's "other" key. */
#define AGG_STATS_DROPS 0
#define AGG_STATS_LEN (1 + AGG_MAX_SLOTS)

#ifdef __bpf__

/* One probe hit, described once for all slots. */
struct agg_event {
	__u8 dims[AGG_DIM_COUNT][AGG_KEY_BYTES];
	__u64 latency_ns;
	__u64 queue_ns;   /* the time waited before service began (the *.queue statistics) */
	__u64 bytes;
	__u64 offset;
	__u32 hits;
	__u32 misses;
	__u32 stats_mask; /* 1 << enum agg_stat for every statistic this probe feeds */
	__u32 epoch;      /* AGG_EPOCH_BIT or 0: set when applied */
	__u64 now_ns;     /* bpf_ktime_get_ns() at the hit, where the program took it anyway;
	                   * 0: taken when applied (and cleared then) */
};

struct agg_slot agg_slots[AGG_MAX_SLOTS];
__u32 agg_nslots; /* slots in use are below this index (set by userspace) */
__u32 agg_dims;   /* 1 << enum agg_dim for each dimension an enabled slot breaks down or
                   * filters by (set by userspace before such a slot is enabled) */
__u64 agg_epoch;  /* the interval's end on CLOCK_MONOTONIC (ns, bit 0 clear) | the parity of
                   * the interval it ends (set by userspace) */

/* AGG_EPOCH_BIT for a hit at now (bpf_ktime_get_ns) in an odd interval, else 0. */
static __always_inline __u32 agg_epoch_at(__u64 now)
{
	__u64 e = *(volatile __u64 *)&agg_epoch;
	__u32 parity = (__u32)e & 1;

	if (now >= (e & ~1ULL))
		parity ^= 1;
	return parity ? AGG_EPOCH_BIT : 0;
}

/* Sets the event's interval parity, from its now_ns or the clock (now_ns cleared). */
static __always_inline void agg_event_epoch(struct agg_event *ev)
{
	__u64 now = ev->now_ns;

	ev->now_ns = 0;
	ev->epoch = agg_epoch_at(now ? now : bpf_ktime_get_ns());
}

/* Whether any slot needs dimension dim: a program may skip reading a costly key. */
static __always_inline int agg_dim_used(__u32 dim)
{
	return agg_dims >> dim & 1;
}
const volatile __u32 agg_max_keys = 1024; /* distinct breakdown keys per slot */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_HASH);
	__uint(max_entries, AGG_COUNTS_MAX);
	__type(key, struct agg_key);
	__type(value, struct agg_chunk);
} agg_counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, AGG_TABLE_SIZE);
	__type(key, __u32);
	__type(value, struct agg_table_entry);
} agg_table SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, AGG_MAX_SLOTS * 1024); /* resized by userspace to slots * max keys */
	__type(key, struct agg_keyset_key);
	__type(value, __u8);
} agg_keyset SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AGG_MAX_SLOTS);
	__type(key, __u32);
	__type(value, __u32);
} agg_nkeys SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, AGG_STATS_LEN);
	__type(key, __u32);
	__type(value, __u64);
} agg_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct agg_event);
} agg_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct agg_chunk);
} agg_new_chunk SEC(".maps"); /* all zero between uses: a new entry's first value */

/* Counts of one {slot, key, chunk} not yet in agg_counts (batched hits only). */
struct agg_pending {
	struct agg_key k;
	__u16 used;    /* holds counts; all zero otherwise */
	__u16 listed;  /* in this hit's agg_pending_list */
	__u32 bounded; /* the key is subject to agg_max_keys */
	__u64 adds;    /* agg_add calls folded in */
	struct agg_chunk c;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, AGG_MAX_SLOTS * AGG_PEND_WAYS);
	__type(key, __u32);
	__type(value, struct agg_pending);
} agg_pending SEC(".maps"); /* index slot * AGG_PEND_WAYS + way; empty between hits */

/* The agg_pending entries that hold counts in this hit, in the order they were taken. */
struct agg_pending_list {
	__u32 n;
	__u16 index[AGG_MAX_SLOTS * AGG_PEND_WAYS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct agg_pending_list);
} agg_pending_used SEC(".maps");

static __always_inline void agg_stat_add(__u32 index, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&agg_stats, &index);

	if (v)
		*v += n;
}

/* The zeroed per-CPU event for this hit, or NULL. */
static __always_inline struct agg_event *agg_event_get(void)
{
	__u32 zero = 0;
	struct agg_event *ev = bpf_map_lookup_elem(&agg_scratch, &zero);

	if (ev)
		__builtin_memset(ev, 0, sizeof(*ev));
	return ev;
}

/* The per-CPU event as the last hit left it, not cleared: for a program whose every
 * event sets the same fields (the others stay zero as the map was created), or NULL. */
static __always_inline struct agg_event *agg_event_reuse(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&agg_scratch, &zero);
}

/* Replaces key by its slot's "other" key once the slot holds agg_max_keys keys;
 * adds counts the hits so folded. */
static __always_inline void agg_bound_key(__u32 slot, __u32 gen, __u8 *key, __u64 adds)
{
	struct agg_keyset_key kk = { .slot = slot, .gen = gen };
	__u8 one = 1;
	__u32 *n;

	__builtin_memcpy(kk.key, key, AGG_KEY_BYTES);
	if (bpf_map_lookup_elem(&agg_keyset, &kk))
		return;
	n = bpf_map_lookup_elem(&agg_nkeys, &slot);
	if (n && *n < agg_max_keys && bpf_map_update_elem(&agg_keyset, &kk, &one, BPF_NOEXIST) == 0) {
		__sync_fetch_and_add(n, 1);
		return;
	}
	if (bpf_map_lookup_elem(&agg_keyset, &kk)) /* another CPU added it meanwhile */
		return;
	__builtin_memset(key, AGG_OTHER_BYTE, AGG_KEY_BYTES);
	agg_stat_add(1 + slot, adds);
}

/* The bucket's counter in its chunk, masked where it is used so the verifier sees
 * the bound however the compiler spilled the registers. */
static __always_inline __u64 *agg_chunk_counter(struct agg_chunk *c, __u32 bucket)
{
	return &c->counts[bucket & (AGG_CHUNK - 1)];
}

static __always_inline int agg_key_same(const struct agg_key *a, const struct agg_key *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1] && x[2] == y[2];
}

/* This CPU's agg_table entry where key k may live. */
static __always_inline struct agg_table_entry *agg_table_at(const struct agg_key *k)
{
	const __u64 *w = (const __u64 *)k;
	__u64 h = w[0] * 0x9e3779b97f4a7c15ULL ^ w[1] * 0xc2b2ae3d27d4eb4fULL ^ w[2];
	__u32 i;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 32;
	i = (__u32)h & (AGG_TABLE_SIZE - 1);
	return bpf_map_lookup_elem(&agg_table, &i);
}

/* The counts of k on this CPU, in agg_table or else agg_counts; NULL when it has none. */
static __always_inline struct agg_chunk *agg_find(const struct agg_key *k)
{
	struct agg_table_entry *e = agg_table_at(k);

	if (e && e->used && agg_key_same(&e->k, k))
		return &e->c;
	return bpf_map_lookup_elem(&agg_counts, k);
}

/* Zeroed counts for new key k in this CPU's agg_table, when its entry is free: never used,
 * or left by a slot generation that no longer lives (the counts zeroed before the key
 * changes, so that userspace never reads a live key with another key's counts); else NULL. */
static __always_inline struct agg_chunk *agg_table_claim(const struct agg_key *k)
{
	struct agg_table_entry *e = agg_table_at(k);
	__u32 s;

	if (!e)
		return NULL;
	if (e->used) {
		s = e->k.slot;
		if (s < AGG_MAX_SLOTS && agg_slots[s].stat && (__u16)agg_slots[s].gen == e->k.gen)
			return NULL;
		__builtin_memset(&e->c, 0, sizeof(e->c));
		asm volatile("" ::: "memory");
	}
	e->k = *k;
	e->used = 1;
	return &e->c;
}

/* Adds inc to bucket of keybytes in slot, making the chunk's home on first use. */
static __always_inline void agg_add(__u32 slot, __u32 gen, __u32 bucket, const __u8 *keybytes,
				    int bounded, __u64 inc)
{
	struct agg_key k = { .slot = slot, .gen = gen, .bucket = bucket & ~(AGG_CHUNK - 1) };
	struct agg_chunk *c, *fresh;
	__u32 zero = 0;
	int rc;

	if (!inc)
		return;
	__builtin_memcpy(k.key, keybytes, AGG_KEY_BYTES);
	c = agg_find(&k); /* the common case: a known key and chunk */
	if (c) {
		*agg_chunk_counter(c, bucket) += inc;
		return;
	}
	if (bounded) {
		agg_bound_key(slot, gen, k.key, 1);
		c = agg_find(&k);
		if (c) {
			*agg_chunk_counter(c, bucket) += inc;
			return;
		}
	}
	c = agg_table_claim(&k);
	if (c) {
		*agg_chunk_counter(c, bucket) += inc;
		return;
	}
	fresh = bpf_map_lookup_elem(&agg_new_chunk, &zero);
	if (!fresh)
		return;
	*agg_chunk_counter(fresh, bucket) = inc;
	rc = bpf_map_update_elem(&agg_counts, &k, fresh, BPF_NOEXIST);
	*agg_chunk_counter(fresh, bucket) = 0;
	if (rc == 0)
		return;
	c = bpf_map_lookup_elem(&agg_counts, &k); /* raced with another CPU's insert */
	if (c)
		*agg_chunk_counter(c, bucket) += inc;
	else
		agg_stat_add(AGG_STATS_DROPS, 1);
}

/* Merges a pending chunk into its home (agg_add) and empties it. */
static __always_inline void agg_pending_flush(struct agg_pending *p)
{
	struct agg_chunk *c = agg_find(&p->k);
	int added = 0;
	__u16 listed;

	if (!c && p->bounded) {
		agg_bound_key(p->k.slot, p->k.gen, p->k.key, p->adds);
		c = agg_find(&p->k);
	}
	if (!c)
		c = agg_table_claim(&p->k);
	if (!c) {
		added = bpf_map_update_elem(&agg_counts, &p->k, &p->c, BPF_NOEXIST) == 0;
		if (!added) /* raced with another CPU's insert */
			c = bpf_map_lookup_elem(&agg_counts, &p->k);
	}
	if (c) {
		for (int j = 0; j < AGG_CHUNK; j++)
			c->counts[j] += p->c.counts[j];
	} else if (!added) {
		agg_stat_add(AGG_STATS_DROPS, p->adds);
	}
	listed = p->listed;
	__builtin_memset(p, 0, sizeof(*p));
	p->listed = listed;
}

/* Merges pending entry i of this hit's list into agg_counts. A global function: the
 * verifier checks it once, whatever the loop that calls it (Linux 5.6+). */
__noinline int agg_pending_flush_one(__u32 i)
{
	__u32 zero = 0, index;
	struct agg_pending_list *l = bpf_map_lookup_elem(&agg_pending_used, &zero);
	struct agg_pending *p;

	if (!l)
		return 0;
	index = l->index[i & (AGG_MAX_SLOTS * AGG_PEND_WAYS - 1)];
	p = bpf_map_lookup_elem(&agg_pending, &index);
	if (p && p->used)
		agg_pending_flush(p);
	if (p)
		p->listed = 0;
	return 0;
}

/* Merges every pending chunk into agg_counts: the end of a batched hit. */
static __always_inline void agg_pending_flush_all(void)
{
	__u32 zero = 0, n;
	struct agg_pending_list *l = bpf_map_lookup_elem(&agg_pending_used, &zero);

	if (!l)
		return;
	n = l->n;
	for (__u32 i = 0; i < AGG_MAX_SLOTS * AGG_PEND_WAYS; i++) {
		if (i >= n)
			break;
		agg_pending_flush_one(i);
	}
	l->n = 0;
}

/* agg_add for batched hits: inc joins the pending chunk of its {slot, key, chunk},
 * which first evicts (merges) a different chunk that holds the same way. */
static __always_inline void agg_add_pending(__u32 slot, __u32 gen, __u32 bucket, const __u8 *keybytes,
					    int bounded, __u64 inc)
{
	struct agg_key k = { .slot = slot, .gen = gen, .bucket = bucket & ~(AGG_CHUNK - 1) };
	const __u64 *x = (const __u64 *)keybytes, *y;
	struct agg_pending *p;
	__u32 i, zero = 0;
	__u64 h;

	if (!inc)
		return;
	h = x[0] ^ x[1];
	h ^= h >> 32;
	h ^= h >> 16;
	h ^= h >> 8;
	h += bucket / AGG_CHUNK;
	i = (slot & (AGG_MAX_SLOTS - 1)) * AGG_PEND_WAYS + (__u32)(h & (AGG_PEND_WAYS - 1));
	p = bpf_map_lookup_elem(&agg_pending, &i);
	if (!p) {
		agg_add(slot, gen, bucket, keybytes, bounded, inc);
		return;
	}
	y = (const __u64 *)p->k.key;
	if (p->used && (p->k.slot != slot || p->k.gen != (__u16)gen || p->k.bucket != k.bucket ||
			y[0] != x[0] || y[1] != x[1]))
		agg_pending_flush(p);
	if (!p->used) {
		struct agg_pending_list *l = bpf_map_lookup_elem(&agg_pending_used, &zero);

		if (!l) {
			agg_add(slot, gen, bucket, keybytes, bounded, inc);
			return;
		}
		if (!p->listed && l->n < AGG_MAX_SLOTS * AGG_PEND_WAYS) {
			l->index[l->n++ & (AGG_MAX_SLOTS * AGG_PEND_WAYS - 1)] = (__u16)i;
			p->listed = 1;
		}
		__builtin_memcpy(k.key, keybytes, AGG_KEY_BYTES);
		p->k = k;
		p->used = 1;
		p->bounded = bounded;
	}
	*agg_chunk_counter(&p->c, bucket) += inc;
	p->adds++;
}

static __always_inline int agg_key_equal(const __u8 *a, const __u8 *b)
{
	const __u64 *x = (const __u64 *)a, *y = (const __u64 *)b;

	return x[0] == y[0] && x[1] == y[1];
}

static __always_inline int agg_slot_matches(struct agg_slot *s, struct agg_event *ev)
{
	for (int f = 0; f < AGG_MAX_FILTERS; f++) {
		__u32 dim;

		if (f >= s->nfilters)
			break;
		dim = s->filters[f].dim;
		if (dim >= AGG_DIM_COUNT)
			return 0;
		if (!agg_key_equal(ev->dims[dim], s->filters[f].value))
			return 0;
	}
	return 1;
}

/* agg_add, or agg_add_pending in a batched hit. */
static __always_inline void agg_add_to(int pending, __u32 slot, __u32 gen, __u32 bucket, const __u8 *key,
				       int bounded, __u64 inc)
{
	if (pending)
		agg_add_pending(slot, gen, bucket, key, bounded, inc);
	else
		agg_add(slot, gen, bucket, key, bounded, inc);
}

/* Applies one event to slot i if the slot's statistic is fed by it and its filters match. */
static __always_inline void agg_slot_apply(__u32 i, struct agg_event *ev, int pending)
{
	struct agg_slot *s;
	__u32 stat, bd, gen, ep;
	const __u8 *key;

	if (i >= AGG_MAX_SLOTS)
		return;
	s = &agg_slots[i];
	stat = s->stat;
	if (stat >= AGG_STAT_COUNT || !(ev->stats_mask & (1u << stat)))
		return;
	if (!agg_slot_matches(s, ev))
		return;
	bd = s->breakdown;
	gen = s->gen;
	if (bd >= AGG_DIM_COUNT)
		return;
	key = ev->dims[bd]; /* dims[AGG_DIM_NONE] stays zero */
	ep = ev->epoch & AGG_EPOCH_BIT;

	switch (stat) {
	case AGG_STAT_NFS_OPS:
	case AGG_STAT_DISK_OPS:
	case AGG_STAT_WIRE_OPS:
	case AGG_STAT_VDEV_OPS:
	case AGG_STAT_FS_OPS:
	case AGG_STAT_NFSD_OPS:
	case AGG_STAT_NFSD_IO_OPS:
		agg_add_to(pending, i, gen, ep, key, bd != AGG_DIM_NONE, 1);
		break;
	case AGG_STAT_ARC_ACCESSES:
		if (bd == AGG_DIM_HITMISS) {
			__u8 hm[AGG_KEY_BYTES] = { AGG_HITMISS_HIT };

			agg_add_to(pending, i, gen, ep, hm, 0, ev->hits);
			hm[0] = AGG_HITMISS_MISS;
			agg_add_to(pending, i, gen, ep, hm, 0, ev->misses);
		} else {
			agg_add_to(pending, i, gen, ep, key, bd != AGG_DIM_NONE, (__u64)ev->hits + ev->misses);
		}
		break;
	case AGG_STAT_NFS_SIZE:
	case AGG_STAT_DISK_SIZE:
	case AGG_STAT_WIRE_SIZE:
	case AGG_STAT_VDEV_SIZE:
	case AGG_STAT_FS_SIZE:
	case AGG_STAT_NFSD_SIZE:
	case AGG_STAT_NFSD_IO_SIZE:
		agg_add_to(pending, i, gen, ep | llhist_bucket(ev->bytes), key, bd != AGG_DIM_NONE, 1);
		break;
	case AGG_STAT_DISK_OFFSET:
		agg_add_to(pending, i, gen, ep | llhist_bucket(ev->offset), key, bd != AGG_DIM_NONE, 1);
		break;
	case AGG_STAT_DISK_QUEUE:
	case AGG_STAT_NFSD_QUEUE:
		agg_add_to(pending, i, gen, ep | llhist_bucket(ev->queue_ns), key, bd != AGG_DIM_NONE, 1);
		break;
	default: /* the latency statistics */
		agg_add_to(pending, i, gen, ep | llhist_bucket(ev->latency_ns), key, bd != AGG_DIM_NONE, 1);
		break;
	}
}

/* Applies the per-CPU event (agg_scratch, as agg_event_get / agg_event_reuse return
 * it) to slot i, its counts pending in a batched hit. A global function: the verifier
 * checks the slot body once, not once per slot, on every kernel since 5.6 (bpf_loop
 * came with 5.17). */
__noinline int agg_slot_run(__u32 i, int pending)
{
	__u32 zero = 0;
	struct agg_event *ev = bpf_map_lookup_elem(&agg_scratch, &zero);

	if (ev)
		agg_slot_apply(i, ev, pending);
	return 0;
}

/* Applies the per-CPU event (ev, or found when NULL) to every slot below agg_nslots. */
static __always_inline void agg_slots_run(struct agg_event *ev, int pending)
{
	__u32 n = agg_nslots, zero = 0;

	if (!ev)
		ev = bpf_map_lookup_elem(&agg_scratch, &zero);
	if (!ev)
		return;
	agg_event_epoch(ev);

	for (__u32 i = 0; i < AGG_MAX_SLOTS; i++) {
		if (i >= n)
			break;
		agg_slot_run(i, pending);
	}
}

#ifdef AGG_SLOTS_BY_BPF_LOOP
/* agg_event_apply with bpf_loop (Linux 5.17+), for programs that use bpf_loop anyway
 * and whose call chain leaves no stack room for one more global function's frame
 * (wire's bpf_loop programs). */
struct agg_loop_ctx {
	struct agg_event *ev; /* bpf_loop's context lies on the stack */
};

static long agg_slot_cb(__u32 i, void *ctx)
{
	agg_slot_apply(i, ((struct agg_loop_ctx *)ctx)->ev, 0);
	return 0;
}

static __always_inline void agg_event_apply_by_bpf_loop(struct agg_event *ev)
{
	struct agg_loop_ctx ctx = { .ev = ev };
	__u32 n = agg_nslots;

	agg_event_epoch(ev);

	bpf_loop(n < AGG_MAX_SLOTS ? n : AGG_MAX_SLOTS, agg_slot_cb, &ctx, 0);
}
#endif

/* Updates every enabled slot whose statistic this event (the per-CPU one) feeds. */
static __always_inline void agg_event_apply(struct agg_event *ev)
{
	agg_slots_run(ev, 0);
}

/* agg_event_apply for one event of a batched hit: its counts stay pending until
 * agg_pending_flush_all() at the end of the hit. */
static __always_inline void agg_event_apply_pending(struct agg_event *ev)
{
	agg_slots_run(ev, 1);
}

#endif /* __bpf__ */
#endif /* STRATA_AGGREGATE_H */
