/* arc.c — the engine's Adaptive Replacement Cache: records in DRAM.
 *
 * The algorithm
 * -------------
 * ARC (Megiddo & Modha, "ARC: A Self-Tuning, Low Overhead Replacement Cache",
 * FAST 2003) keeps c bytes of records in two lists and remembers the keys of
 * about c more bytes of recently evicted records in two ghost lists:
 *
 *   T1 (MRU)        resident records seen once recently
 *   T2 (MFU)        resident records seen at least twice recently
 *   B1 (MRU ghost)  keys (no data) evicted from T1
 *   B2 (MFU ghost)  keys (no data) evicted from T2
 *
 * L1 = T1 + B1 holds the "recency" history, L2 = T2 + B2 the "frequency"
 * history.  Invariants: T1 + T2 <= c, T1 + B1 <= c, T1 + T2 + B1 + B2 <= 2c,
 * and while the cache is not full there are no ghosts.  The target p in
 * [0, c] is the size T1 should have; REPLACE evicts from T1 when T1 exceeds
 * p, otherwise from T2.  On a request for x:
 *
 *   I   x in T1 or T2 (hit): move x to the MRU end of T2.
 *   II  x in B1 (a recency ghost hit: T1 was too small):
 *         p = min(c, p + d1), d1 = max(1, |B2| / |B1|);  REPLACE; x -> T2.
 *   III x in B2 (a frequency ghost hit: T2 was too small):
 *         p = max(0, p - d2), d2 = max(1, |B1| / |B2|);  REPLACE; x -> T2.
 *   IV  x nowhere (miss):
 *         A: |L1| = c:  if |T1| < c drop B1's LRU and REPLACE,
 *                       else destroy T1's LRU (no ghost);
 *         B: |L1| < c:  if the directory is full (2c) drop B2's LRU;
 *                       if the cache is full, REPLACE;
 *         then x -> MRU end of T1.
 *   REPLACE: if T1 is non-empty and (T1 > p, or x in B2 and T1 = p) move
 *            T1's LRU to B1, else move T2's LRU to B2.
 *
 * The adaptation is real-valued, as in the paper (p is a double).  Records
 * have byte sizes, so every count above is in bytes and a ghost hit moves p
 * by size(x) * max(1, B2/B1) bytes, as OpenZFS does (it scales by the size of
 * the buffer hit).  The steps are written as loops ("while the cache cannot
 * take x, REPLACE") that run exactly once where the paper acts once, so for
 * uniform power-of-two record sizes every comparison and every value of p is
 * bit-for-bit the paper's page-count algorithm scaled by the record size: the
 * trace simulator (arcsim.c) reproduces the paper's tables.  The loops also
 * keep the invariants after invalidations (the cache may then be non-full
 * while ghosts exist, and REPLACE is not forced).  A record bigger than c (or
 * empty) is not cached.  With ARC_POLICY_LRU there is one list (T1), no ghosts and no p.
 *
 * Buffers and headers
 * -------------------
 * A header (struct arc_hdr) is the key's place in the hash table and in one of
 * the four lists; a resident header points at a buffer (struct arc_buf) with
 * the data.  Buffers are refcounted: the cache holds one reference while the
 * record is resident and each arc_lookup/arc_insert caller holds one until
 * arc_release.  Eviction drops only the cache's reference, so a held buffer is
 * never freed under its holder; buffers never point back at the ARC, so they
 * may even outlive it.  arc_access (the simulator's entry point) keeps
 * data-less headers.
 *
 * Locking
 * -------
 * The hash table's buckets are covered by ARC_NSHARDS shard mutexes; the
 * lists, p and c by one ARC mutex.  Lock order: ARC mutex, then a shard.
 * Writers (anything changing a list, the hash chains or a header's residency)
 * hold the ARC mutex, and the shard mutex of the header they change while they
 * change its chain link, state or buffer pointer; so a writer may read the
 * hash table without shard locks, and a reader holding only a shard lock sees
 * consistent headers in that shard.  arc_lookup takes only the shard lock for
 * a miss and for a hit in T2 (LRU: T1): such a hit only sets the record's
 * `referenced` flag, and the move to the MRU end of T2 is made when the record
 * reaches T2's LRU end and would be evicted (a second chance, as in CLOCK and
 * CAR): so hits on the hot, frequent set never serialise on the ARC mutex.
 * It changes the order within T2 only, never which list a record is in, the
 * list sizes or p.  A T1 hit (promotion) and a ghost hit take the ARC mutex.
 * The simulator's arc_access applies every move at once: the paper exactly.
 * Hit/miss counters of lookups are per shard (under the shard lock).  The
 * eviction hook runs under the ARC mutex.
 */
#include "arc.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARC_NSHARDS 64                  /* power of two */
#define ARC_MIN_BUCKETS 1024u
#define ARC_MAX_BUCKETS (1u << 22)
#define ARC_BUCKET_REC 4096u            /* bucket count = 2 * max_bytes / this */

enum arc_state { ARC_NONE, ARC_T1, ARC_T2, ARC_B1, ARC_B2, ARC_NSTATES };

struct arc_buf {
	uint32_t refs;                  /* atomic */
	uint32_t size;
	unsigned char data[];
};

struct arc_link {
	struct arc_link *prev, *next;
};

struct arc_hdr {
	struct arc_link link;           /* first: list links (ARC mutex) */
	struct arc_hdr *hash_next;
	struct arc_key key;
	arc_buf_t *buf;                 /* resident with data; NULL otherwise */
	uint32_t size;
	uint8_t state;                  /* enum arc_state */
	uint8_t referenced;             /* hit by a lookup since its last move */
};

struct arc_list {
	struct arc_link head;           /* head.next = MRU end, head.prev = LRU end */
	uint64_t bytes, count;
};

struct arc_counts {
	uint64_t hits, misses, mru_hits, mfu_hits, mru_ghost_hits, mfu_ghost_hits;
};

struct arc_shard {
	pthread_mutex_t lock;
	struct arc_counts n;
} __attribute__((aligned(64)));

struct arc {
	pthread_mutex_t lock;
	enum arc_policy policy;
	uint64_t c;
	double p;
	struct arc_list list[ARC_NSTATES];
	struct arc_counts n;            /* arc_access and ghost-hit counters */
	uint64_t evictions, nhdrs, data_bytes;
	struct arc_hdr *spare;          /* freed headers for reuse (via hash_next) */
	arc_evict_fn evict_fn;
	void *evict_ctx;
	struct arc_hdr **buckets;
	uint64_t bucket_mask;
	struct arc_shard shards[ARC_NSHARDS];
};

/* ---- hashing ---- */

/* Bucket of a key.  Blocks 8-aligned groups of an object share a hashed base
 * and take adjacent buckets, so a sequential run touches one cache line of
 * bucket pointers per 8 blocks instead of 8 scattered ones. */
static inline uint64_t key_bucket(const arc_t *arc, struct arc_key k)
{
	uint64_t h = k.objid * 0x9E3779B97F4A7C15ull ^ (k.blkid >> 3);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return ((h << 3) | (k.blkid & 7)) & arc->bucket_mask;
}

static inline bool key_eq(struct arc_key a, struct arc_key b)
{
	return a.objid == b.objid && a.blkid == b.blkid;
}

static inline struct arc_shard *shard_of(arc_t *arc, uint64_t bucket)
{
	return &arc->shards[bucket & (ARC_NSHARDS - 1)];
}

static struct arc_hdr *hash_find(arc_t *arc, uint64_t bucket, struct arc_key key)
{
	for (struct arc_hdr *h = arc->buckets[bucket]; h; h = h->hash_next)
		if (key_eq(h->key, key))
			return h;
	return NULL;
}

/* Caller holds the ARC mutex and the bucket's shard. */
static void hash_remove(arc_t *arc, struct arc_hdr *hdr)
{
	struct arc_hdr **pp = &arc->buckets[key_bucket(arc, hdr->key)];
	while (*pp != hdr)
		pp = &(*pp)->hash_next;
	__atomic_store_n(pp, hdr->hash_next, __ATOMIC_RELAXED);  /* arc_prefetch reads */
}

/* ---- lists (ARC mutex) ---- */

static inline bool resident(uint8_t state)
{
	return state == ARC_T1 || state == ARC_T2;
}

static inline uint8_t state_of(const struct arc_hdr *hdr)
{
	return __atomic_load_n(&hdr->state, __ATOMIC_RELAXED);
}

static void list_unlink(arc_t *arc, struct arc_hdr *hdr)
{
	struct arc_list *l = &arc->list[hdr->state];
	hdr->link.prev->next = hdr->link.next;
	hdr->link.next->prev = hdr->link.prev;
	l->bytes -= hdr->size;
	l->count--;
}

/* Put hdr at the MRU end of list `state` (hdr->state must already say so). */
static void list_push_mru(arc_t *arc, struct arc_hdr *hdr)
{
	struct arc_list *l = &arc->list[hdr->state];
	hdr->link.next = l->head.next;
	hdr->link.prev = &l->head;
	l->head.next->prev = &hdr->link;
	l->head.next = &hdr->link;
	l->bytes += hdr->size;
	l->count++;
	__atomic_store_n(&hdr->referenced, 0, __ATOMIC_RELAXED);
}

static inline struct arc_hdr *list_lru(arc_t *arc, enum arc_state s)
{
	struct arc_link *tail = arc->list[s].head.prev;
	return tail == &arc->list[s].head ? NULL : (struct arc_hdr *)tail;
}

/* The record to evict from list s: its LRU one, after the deferred moves of
 * records that lookups hit in place (see arc_lookup) are applied — each such
 * record at the LRU end goes to the MRU end instead (a second chance). */
static struct arc_hdr *list_victim(arc_t *arc, enum arc_state s)
{
	struct arc_hdr *hdr = list_lru(arc, s);
	for (uint64_t n = arc->list[s].count; n > 0 &&
	     __atomic_load_n(&hdr->referenced, __ATOMIC_RELAXED) &&
	     __atomic_exchange_n(&hdr->referenced, 0, __ATOMIC_RELAXED); n--) {
		list_unlink(arc, hdr);
		list_push_mru(arc, hdr);
		hdr = list_lru(arc, s);
	}
	return hdr;
}

static inline uint64_t bytes_of(arc_t *arc, enum arc_state s)
{
	return arc->list[s].bytes;
}

static inline uint64_t total_bytes(arc_t *arc)
{
	return bytes_of(arc, ARC_T1) + bytes_of(arc, ARC_T2) +
	       bytes_of(arc, ARC_B1) + bytes_of(arc, ARC_B2);
}

/* Set the state of a hdr that is in no list, then list it; changes of
 * residency and the buffer pointer are made under the hdr's shard. */
static void hdr_set_state(arc_t *arc, struct arc_hdr *hdr, uint8_t state, arc_buf_t *buf)
{
	struct arc_shard *sh = shard_of(arc, key_bucket(arc, hdr->key));
	pthread_mutex_lock(&sh->lock);
	__atomic_store_n(&hdr->state, state, __ATOMIC_RELAXED);
	hdr->buf = buf;
	pthread_mutex_unlock(&sh->lock);
	list_push_mru(arc, hdr);
}

static void buf_put(arc_buf_t *buf)
{
	if (buf && __atomic_sub_fetch(&buf->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(buf);
}

static void hdr_detach_buf(arc_t *arc, struct arc_hdr *hdr)
{
	if (hdr->buf)
		arc->data_bytes -= hdr->buf->size;
}

static void call_evict_hook(arc_t *arc, struct arc_hdr *hdr)
{
	if (arc->evict_fn)
		arc->evict_fn(arc->evict_ctx, hdr->key, hdr->buf ? hdr->buf->data : NULL, hdr->size);
	arc->evictions++;
}

/* Take hdr out of the hash table and free it (it is in no list). */
static void hdr_destroy(arc_t *arc, struct arc_hdr *hdr)
{
	struct arc_shard *sh = shard_of(arc, key_bucket(arc, hdr->key));
	arc_buf_t *buf = hdr->buf;
	pthread_mutex_lock(&sh->lock);
	hash_remove(arc, hdr);
	pthread_mutex_unlock(&sh->lock);
	hdr_detach_buf(arc, hdr);
	buf_put(buf);
	arc->nhdrs--;
	hdr->hash_next = arc->spare;
	arc->spare = hdr;
}

/* Move a resident LRU record to a ghost list (its data goes). */
static void evict_to_ghost(arc_t *arc, enum arc_state from, enum arc_state ghost)
{
	struct arc_hdr *hdr = list_victim(arc, from);
	arc_buf_t *buf = hdr->buf;
	call_evict_hook(arc, hdr);
	list_unlink(arc, hdr);
	hdr_detach_buf(arc, hdr);
	hdr_set_state(arc, hdr, ghost, NULL);
	buf_put(buf);
}

/* Remove the LRU record of list s from the cache and the directory. */
static void drop_lru(arc_t *arc, enum arc_state s)
{
	struct arc_hdr *hdr = list_victim(arc, s);
	if (resident(s))
		call_evict_hook(arc, hdr);
	list_unlink(arc, hdr);
	hdr_destroy(arc, hdr);
}

/* REPLACE(x, p): evict one record to its ghost list. */
static void replace(arc_t *arc, bool x_in_b2)
{
	double t1 = (double)bytes_of(arc, ARC_T1);
	if (arc->list[ARC_T1].count > 0 &&
	    ((x_in_b2 && t1 == arc->p) || t1 > arc->p || arc->list[ARC_T2].count == 0))
		evict_to_ghost(arc, ARC_T1, ARC_B1);
	else
		evict_to_ghost(arc, ARC_T2, ARC_B2);
}

/* Evict until the cache can take `size` more bytes. */
static void make_room(arc_t *arc, uint64_t size, bool x_in_b2)
{
	while (bytes_of(arc, ARC_T1) + bytes_of(arc, ARC_T2) + size > arc->c &&
	       arc->list[ARC_T1].count + arc->list[ARC_T2].count > 0) {
		if (arc->policy == ARC_POLICY_LRU)
			drop_lru(arc, ARC_T1);
		else
			replace(arc, x_in_b2);
	}
}

/* Keep the directory within 2c after adding `size` bytes. */
static void trim_directory(arc_t *arc, uint64_t size)
{
	while (total_bytes(arc) + size > 2 * arc->c) {
		if (arc->list[ARC_B2].count)
			drop_lru(arc, ARC_B2);
		else if (arc->list[ARC_B1].count)
			drop_lru(arc, ARC_B1);
		else
			break;
	}
}

/* Case I: a hit moves the record to the MRU end of T2 (LRU: of T1). */
static void hit_move(arc_t *arc, struct arc_hdr *hdr)
{
	list_unlink(arc, hdr);
	if (arc->policy == ARC_POLICY_ARC)      /* T1 -> T2; the buffer stays */
		__atomic_store_n(&hdr->state, ARC_T2, __ATOMIC_RELAXED);
	list_push_mru(arc, hdr);
}

/* Cases II and III, first half: adapt p on a ghost hit. */
static void ghost_adapt(arc_t *arc, struct arc_hdr *hdr, struct arc_counts *n)
{
	double b1 = (double)bytes_of(arc, ARC_B1), b2 = (double)bytes_of(arc, ARC_B2);
	double s = (double)hdr->size;
	if (hdr->state == ARC_B1) {
		double d = b1 >= b2 ? s : s * (b2 / b1);
		arc->p = fmin((double)arc->c, arc->p + d);
		n->mru_ghost_hits++;
	} else {
		double d = b2 >= b1 ? s : s * (b1 / b2);
		arc->p = fmax(0.0, arc->p - d);
		n->mfu_ghost_hits++;
	}
}

/* Cases II and III, second half: REPLACE, then the record enters T2. */
static void ghost_place(arc_t *arc, struct arc_hdr *hdr, uint32_t size, arc_buf_t *buf)
{
	bool in_b2 = hdr->state == ARC_B2;
	list_unlink(arc, hdr);
	hdr->size = size;
	make_room(arc, size, in_b2);
	trim_directory(arc, size);
	if (buf)
		arc->data_bytes += buf->size;
	hdr_set_state(arc, hdr, ARC_T2, buf);
}

/* Case IV: make room for a new record, then put it at the MRU end of T1. */
static void miss_place(arc_t *arc, uint64_t bucket, struct arc_key key, uint32_t size,
		       arc_buf_t *buf)
{
	if (arc->policy == ARC_POLICY_ARC) {
		/* A: L1 is full.  Drop B1's LRU (then REPLACE below) or,
		 * with B1 empty, destroy T1's LRU. */
		while (bytes_of(arc, ARC_T1) + bytes_of(arc, ARC_B1) + size > arc->c) {
			if (arc->list[ARC_B1].count)
				drop_lru(arc, ARC_B1);
			else if (arc->list[ARC_T1].count)
				drop_lru(arc, ARC_T1);
			else
				break;
		}
		/* B: the directory is full: drop B2's LRU. */
		trim_directory(arc, size);
	}
	make_room(arc, size, false);

	struct arc_hdr *hdr = arc->spare;
	if (hdr)
		arc->spare = hdr->hash_next;
	else if (!(hdr = malloc(sizeof(*hdr)))) {
		fprintf(stderr, "arc: out of memory\n");
		abort();
	}
	hdr->key = key;
	hdr->size = size;
	arc->nhdrs++;
	if (buf)
		arc->data_bytes += buf->size;
	struct arc_shard *sh = shard_of(arc, bucket);
	pthread_mutex_lock(&sh->lock);
	hdr->state = ARC_T1;
	hdr->buf = buf;
	hdr->hash_next = arc->buckets[bucket];
	__atomic_store_n(&arc->buckets[bucket], hdr, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sh->lock);
	list_push_mru(arc, hdr);
}

/* ---- public API ---- */

arc_t *arc_create(uint64_t max_bytes, enum arc_policy policy)
{
	arc_t *arc = calloc(1, sizeof(*arc));
	if (!arc)
		return NULL;
	uint64_t want = max_bytes / ARC_BUCKET_REC * 2, nb = ARC_MIN_BUCKETS;
	while (nb < want && nb < ARC_MAX_BUCKETS)
		nb <<= 1;
	arc->buckets = calloc(nb, sizeof(*arc->buckets));
	if (!arc->buckets) {
		free(arc);
		return NULL;
	}
	arc->bucket_mask = nb - 1;
	arc->policy = policy;
	arc->c = max_bytes;
	pthread_mutex_init(&arc->lock, NULL);
	for (int i = 0; i < ARC_NSHARDS; i++)
		pthread_mutex_init(&arc->shards[i].lock, NULL);
	for (int s = 0; s < ARC_NSTATES; s++)
		arc->list[s].head.prev = arc->list[s].head.next = &arc->list[s].head;
	return arc;
}

void arc_destroy(arc_t *arc)
{
	if (!arc)
		return;
	for (int s = ARC_T1; s < ARC_NSTATES; s++) {
		struct arc_link *l = arc->list[s].head.next;
		while (l != &arc->list[s].head) {
			struct arc_hdr *hdr = (struct arc_hdr *)l;
			l = l->next;
			buf_put(hdr->buf);
			free(hdr);
		}
	}
	while (arc->spare) {
		struct arc_hdr *hdr = arc->spare;
		arc->spare = hdr->hash_next;
		free(hdr);
	}
	for (int i = 0; i < ARC_NSHARDS; i++)
		pthread_mutex_destroy(&arc->shards[i].lock);
	pthread_mutex_destroy(&arc->lock);
	free(arc->buckets);
	free(arc);
}

/* Slow path of a hit: apply case I under the ARC mutex if the record is
 * still resident with the buffer the caller holds. */
static void lookup_hit_slow(arc_t *arc, uint64_t bucket, struct arc_key key, arc_buf_t *buf)
{
	pthread_mutex_lock(&arc->lock);
	struct arc_hdr *hdr = hash_find(arc, bucket, key);
	if (hdr && resident(hdr->state) && hdr->buf == buf)
		hit_move(arc, hdr);
	pthread_mutex_unlock(&arc->lock);
}

/* Ghost hit seen by a lookup: adapt p (the caller's insert places it). */
static void lookup_ghost_slow(arc_t *arc, uint64_t bucket, struct arc_key key)
{
	pthread_mutex_lock(&arc->lock);
	struct arc_hdr *hdr = hash_find(arc, bucket, key);
	if (hdr && (hdr->state == ARC_B1 || hdr->state == ARC_B2))
		ghost_adapt(arc, hdr, &arc->n);
	pthread_mutex_unlock(&arc->lock);
}

bool arc_cached(arc_t *arc, struct arc_key key)
{
	uint64_t bucket = key_bucket(arc, key);
	struct arc_shard *sh = shard_of(arc, bucket);

	pthread_mutex_lock(&sh->lock);
	struct arc_hdr *hdr = hash_find(arc, bucket, key);
	bool cached = hdr && resident(state_of(hdr)) && hdr->buf;
	pthread_mutex_unlock(&sh->lock);
	return cached;
}

arc_buf_t *arc_lookup(arc_t *arc, struct arc_key key)
{
	uint64_t bucket = key_bucket(arc, key);
	struct arc_shard *sh = shard_of(arc, bucket);

	pthread_mutex_lock(&sh->lock);
	struct arc_hdr *hdr = hash_find(arc, bucket, key);
	uint8_t state = hdr ? state_of(hdr) : ARC_NONE;
	if (!resident(state) || !hdr->buf) {
		sh->n.misses++;
		pthread_mutex_unlock(&sh->lock);
		if (state == ARC_B1 || state == ARC_B2)
			lookup_ghost_slow(arc, bucket, key);
		return NULL;
	}
	arc_buf_t *buf = hdr->buf;
	__atomic_add_fetch(&buf->refs, 1, __ATOMIC_RELAXED);
	sh->n.hits++;
	if (state == ARC_T1)
		sh->n.mru_hits++;
	else
		sh->n.mfu_hits++;
	/* A hit on a record that stays in its list (T2; LRU: T1) only marks it;
	 * the move to the MRU end is applied when the record reaches the LRU end
	 * (list_victim).  A T1 hit (promotion to T2) is applied now. */
	enum arc_state hit_list = arc->policy == ARC_POLICY_LRU ? ARC_T1 : ARC_T2;
	bool stays = state == hit_list;
	if (stays && !__atomic_load_n(&hdr->referenced, __ATOMIC_RELAXED))
		__atomic_store_n(&hdr->referenced, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&sh->lock);
	if (!stays)
		lookup_hit_slow(arc, bucket, key, buf);
	return buf;
}

arc_buf_t *arc_insert(arc_t *arc, struct arc_key key, const void *data, uint32_t size)
{
	arc_buf_t *buf = malloc(sizeof(*buf) + size);
	if (!buf)
		return NULL;
	buf->size = size;
	buf->refs = 1;                  /* the caller's */
	if (size)
		memcpy(buf->data, data, size);

	uint64_t bucket = key_bucket(arc, key);
	pthread_mutex_lock(&arc->lock);
	if (size == 0 || size > arc->c) {       /* not cacheable: an anonymous buffer */
		pthread_mutex_unlock(&arc->lock);
		return buf;
	}
	struct arc_hdr *hdr = hash_find(arc, bucket, key);
	if (hdr && resident(hdr->state) && hdr->buf) {  /* raced: keep the cached one */
		arc_buf_t *old = hdr->buf;
		__atomic_add_fetch(&old->refs, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&arc->lock);
		free(buf);
		return old;
	}
	buf->refs = 2;                  /* the caller's and the cache's */
	if (hdr && resident(hdr->state)) {      /* data-less (arc_access) record */
		list_unlink(arc, hdr);
		hdr_destroy(arc, hdr);
		hdr = NULL;
	}
	if (hdr) {
		ghost_place(arc, hdr, size, buf);
	} else {
		miss_place(arc, bucket, key, size, buf);
	}
	pthread_mutex_unlock(&arc->lock);
	return buf;
}

bool arc_access(arc_t *arc, struct arc_key key, uint32_t size)
{
	uint64_t bucket = key_bucket(arc, key);
	bool hit = false;
	pthread_mutex_lock(&arc->lock);
	struct arc_hdr *hdr = hash_find(arc, bucket, key);
	if (hdr && resident(hdr->state)) {
		hit = true;
		arc->n.hits++;
		if (hdr->state == ARC_T1)
			arc->n.mru_hits++;
		else
			arc->n.mfu_hits++;
		hit_move(arc, hdr);
	} else if (size > 0 && size <= arc->c) {
		arc->n.misses++;
		if (hdr) {
			ghost_adapt(arc, hdr, &arc->n);
			ghost_place(arc, hdr, size, NULL);
		} else {
			miss_place(arc, bucket, key, size, NULL);
		}

	} else {
		arc->n.misses++;
	}
	pthread_mutex_unlock(&arc->lock);
	return hit;
}

void arc_prefetch(arc_t *arc, struct arc_key key)
{
	struct arc_hdr **slot = &arc->buckets[key_bucket(arc, key)];
	__builtin_prefetch(__atomic_load_n(slot, __ATOMIC_RELAXED));
}

const void *arc_buf_data(const arc_buf_t *buf)
{
	return buf->data;
}

uint32_t arc_buf_size(const arc_buf_t *buf)
{
	return buf->size;
}

void arc_release(arc_buf_t *buf)
{
	buf_put(buf);
}

void arc_invalidate(arc_t *arc, struct arc_key key)
{
	uint64_t bucket = key_bucket(arc, key);
	pthread_mutex_lock(&arc->lock);
	struct arc_hdr *hdr = hash_find(arc, bucket, key);
	if (hdr) {
		list_unlink(arc, hdr);
		hdr_destroy(arc, hdr);
	}
	pthread_mutex_unlock(&arc->lock);
}

void arc_set_max(arc_t *arc, uint64_t max_bytes)
{
	pthread_mutex_lock(&arc->lock);
	arc->c = max_bytes;
	arc->p = fmin(arc->p, (double)max_bytes);
	make_room(arc, 0, false);
	while (bytes_of(arc, ARC_T1) + bytes_of(arc, ARC_B1) > arc->c && arc->list[ARC_B1].count)
		drop_lru(arc, ARC_B1);
	trim_directory(arc, 0);
	pthread_mutex_unlock(&arc->lock);
}

void arc_set_evict_hook(arc_t *arc, arc_evict_fn fn, void *ctx)
{
	pthread_mutex_lock(&arc->lock);
	arc->evict_fn = fn;
	arc->evict_ctx = ctx;
	pthread_mutex_unlock(&arc->lock);
}

static void counts_add(struct arc_stats *out, const struct arc_counts *n)
{
	out->hits += n->hits;
	out->misses += n->misses;
	out->mru_hits += n->mru_hits;
	out->mfu_hits += n->mfu_hits;
	out->mru_ghost_hits += n->mru_ghost_hits;
	out->mfu_ghost_hits += n->mfu_ghost_hits;
}

void arc_get_stats(arc_t *arc, struct arc_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&arc->lock);
	counts_add(out, &arc->n);
	out->size = bytes_of(arc, ARC_T1) + bytes_of(arc, ARC_T2);
	out->c = arc->c;
	out->p = (uint64_t)llround(arc->p);
	out->evictions = arc->evictions;
	out->hdr_size = arc->nhdrs * sizeof(struct arc_hdr);
	out->data_size = arc->data_bytes;
	pthread_mutex_unlock(&arc->lock);
	for (int i = 0; i < ARC_NSHARDS; i++) {
		pthread_mutex_lock(&arc->shards[i].lock);
		counts_add(out, &arc->shards[i].n);
		pthread_mutex_unlock(&arc->shards[i].lock);
	}
}

void arc_get_lists(arc_t *arc, struct arc_lists *out)
{
	pthread_mutex_lock(&arc->lock);
	out->mru_bytes = bytes_of(arc, ARC_T1);
	out->mfu_bytes = bytes_of(arc, ARC_T2);
	out->mru_ghost_bytes = bytes_of(arc, ARC_B1);
	out->mfu_ghost_bytes = bytes_of(arc, ARC_B2);
	out->mru_count = arc->list[ARC_T1].count;
	out->mfu_count = arc->list[ARC_T2].count;
	out->mru_ghost_count = arc->list[ARC_B1].count;
	out->mfu_ghost_count = arc->list[ARC_B2].count;
	out->c = arc->c;
	out->p = arc->p;
	pthread_mutex_unlock(&arc->lock);
}
