/* arc_test.c — unit test of engine/arc.c: step-by-step agreement with a
 * page-count transcription of the ARC paper's pseudo-code, list invariants,
 * invalidation, arc_cached, refcounts under eviction, the eviction hook, LRU (also with
 * the deferred moves of lookups), resizing
 * and concurrent lookups/inserts/invalidates from several threads.
 * Exits non-zero on the first failure. */
#include "arc.h"
#include "unit_check.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096u

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static struct arc_key K(uint64_t blk)
{
	return (struct arc_key){ 7, blk };
}

/* ---- the paper's ARC(c) in pages, with plain arrays (index 0 = LRU) ---- */

#define REF_MAX 256
struct ref_list { uint64_t v[REF_MAX]; int n; };
struct ref { int c; double p; struct ref_list t1, t2, b1, b2; };

static int rl_find(struct ref_list *l, uint64_t x)
{
	for (int i = 0; i < l->n; i++)
		if (l->v[i] == x)
			return i;
	return -1;
}

static uint64_t rl_take(struct ref_list *l, int i)
{
	uint64_t x = l->v[i];
	memmove(&l->v[i], &l->v[i + 1], (size_t)(l->n - i - 1) * sizeof(uint64_t));
	l->n--;
	return x;
}

static void rl_push(struct ref_list *l, uint64_t x)
{
	l->v[l->n++] = x;
}

static void ref_replace(struct ref *r, bool x_in_b2)
{
	if (r->t1.n >= 1 && ((x_in_b2 && r->t1.n == r->p) || r->t1.n > r->p))
		rl_push(&r->b1, rl_take(&r->t1, 0));
	else
		rl_push(&r->b2, rl_take(&r->t2, 0));
}

static bool ref_access(struct ref *r, uint64_t x)
{
	int i;
	if ((i = rl_find(&r->t1, x)) >= 0 || (i = rl_find(&r->t2, x)) >= 0) {
		rl_take(rl_find(&r->t1, x) >= 0 ? &r->t1 : &r->t2, i);
		rl_push(&r->t2, x);
		return true;
	}
	if ((i = rl_find(&r->b1, x)) >= 0) {
		double d = r->b1.n >= r->b2.n ? 1.0 : (double)r->b2.n / r->b1.n;
		r->p = r->p + d < r->c ? r->p + d : r->c;
		ref_replace(r, false);
		rl_take(&r->b1, i);
		rl_push(&r->t2, x);
		return false;
	}
	if ((i = rl_find(&r->b2, x)) >= 0) {
		double d = r->b2.n >= r->b1.n ? 1.0 : (double)r->b1.n / r->b2.n;
		r->p = r->p - d > 0 ? r->p - d : 0;
		ref_replace(r, true);
		rl_take(&r->b2, i);
		rl_push(&r->t2, x);
		return false;
	}
	int total = r->t1.n + r->t2.n + r->b1.n + r->b2.n;
	if (r->t1.n + r->b1.n == r->c) {
		if (r->t1.n < r->c) {
			rl_take(&r->b1, 0);
			ref_replace(r, false);
		} else {
			rl_take(&r->t1, 0);
		}
	} else if (total >= r->c) {
		if (total == 2 * r->c)
			rl_take(&r->b2, 0);
		ref_replace(r, false);
	}
	rl_push(&r->t1, x);
	return false;
}

static uint64_t workload_key(uint64_t *seq)
{
	switch (rnd() % 4) {
	case 0:                                  /* scan */
		return 1000 + (*seq)++ % 300;
	case 1:                                  /* hot set */
		return rnd() % 8;
	default:                                 /* skewed */
		return rnd() % (rnd() % 120 + 1);
	}
}

static void test_matches_paper(void)
{
	static const int sizes[] = { 1, 2, 3, 5, 8, 13, 40, 100 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		int c = sizes[s];
		struct ref r = { .c = c };
		arc_t *arc = arc_create((uint64_t)c * PAGE, ARC_POLICY_ARC);
		uint64_t seq = 0;
		for (int step = 0; step < 20000; step++) {
			uint64_t x = workload_key(&seq);
			bool want = ref_access(&r, x);
			bool got = arc_access(arc, K(x), PAGE);
			struct arc_lists l;
			arc_get_lists(arc, &l);
			REQUIRE(got == want, "c=%d step %d key %llu: hit %d, paper %d", c, step,
			      (unsigned long long)x, got, want);
			REQUIRE(l.p == r.p * PAGE, "c=%d step %d: p %.6f pages, paper %.6f", c, step,
			      l.p / PAGE, r.p);
			REQUIRE(l.mru_count == (uint64_t)r.t1.n && l.mfu_count == (uint64_t)r.t2.n &&
				      l.mru_ghost_count == (uint64_t)r.b1.n &&
				      l.mfu_ghost_count == (uint64_t)r.b2.n,
			      "c=%d step %d: lists %llu/%llu/%llu/%llu, paper %d/%d/%d/%d", c, step,
			      (unsigned long long)l.mru_count, (unsigned long long)l.mfu_count,
			      (unsigned long long)l.mru_ghost_count,
			      (unsigned long long)l.mfu_ghost_count, r.t1.n, r.t2.n, r.b1.n, r.b2.n);
		}
		arc_destroy(arc);
	}
}

/* ---- invariants with data, variable sizes, invalidations, resizing ---- */

static void check_invariants(arc_t *arc, const char *when, int step)
{
	struct arc_lists l;
	struct arc_stats st;
	arc_get_lists(arc, &l);
	arc_get_stats(arc, &st);
	uint64_t t = l.mru_bytes + l.mfu_bytes;
	REQUIRE(t <= l.c, "%s %d: |T1|+|T2| %llu > c %llu", when, step, (unsigned long long)t,
	      (unsigned long long)l.c);
	REQUIRE(l.mru_bytes + l.mru_ghost_bytes <= l.c, "%s %d: |T1|+|B1| > c", when, step);
	REQUIRE(t + l.mru_ghost_bytes + l.mfu_ghost_bytes <= 2 * l.c, "%s %d: total > 2c", when, step);
	REQUIRE(l.p >= 0 && l.p <= (double)l.c, "%s %d: p %.1f outside [0, c]", when, step, l.p);
	REQUIRE(st.size == t && st.c == l.c, "%s %d: stats disagree with lists", when, step);
	REQUIRE(st.data_size == t, "%s %d: data_size %llu != size %llu", when, step,
	      (unsigned long long)st.data_size, (unsigned long long)t);
}

static void fill(unsigned char *b, uint64_t blk, uint32_t size)
{
	for (uint32_t i = 0; i < size; i++)
		b[i] = (unsigned char)(blk * 31 + i);
}

static bool data_ok_raw(const unsigned char *d, uint64_t blk, uint32_t size)
{
	for (uint32_t i = 0; i < size; i++)
		if (d[i] != (unsigned char)(blk * 31 + i))
			return false;
	return true;
}

static bool data_ok(const arc_buf_t *buf, uint64_t blk)
{
	return data_ok_raw(arc_buf_data(buf), blk, arc_buf_size(buf));
}

/* The engine's pattern: lookup, on a miss insert. */
static arc_buf_t *get(arc_t *arc, uint64_t blk, uint32_t size, unsigned char *scratch)
{
	arc_buf_t *b = arc_lookup(arc, K(blk));
	if (b)
		return b;
	fill(scratch, blk, size);
	return arc_insert(arc, K(blk), scratch, size);
}

static void test_invariants(void)
{
	static unsigned char scratch[3 * PAGE];
	arc_t *arc = arc_create(64 * PAGE, ARC_POLICY_ARC);
	uint64_t seq = 0;
	for (int step = 0; step < 30000; step++) {
		uint64_t x = workload_key(&seq);
		uint32_t size = PAGE / 2 + (uint32_t)(x % 5) * PAGE / 2;  /* 2K..6K */
		if (rnd() % 50 == 0) {
			arc_invalidate(arc, K(rnd() % 120));
		} else if (step == 10000) {
			arc_set_max(arc, 20 * PAGE);
		} else if (step == 20000) {
			arc_set_max(arc, 80 * PAGE);
		} else {
			arc_buf_t *b = get(arc, x, size, scratch);
			REQUIRE(b && arc_buf_size(b) == size && data_ok(b, x), "step %d: bad buffer", step);
			arc_release(b);
		}
		check_invariants(arc, "step", step);
		if (failures)
			break;
	}
	struct arc_stats st;
	arc_get_stats(arc, &st);
	REQUIRE(st.hits > 0 && st.misses > 0 && st.mru_ghost_hits > 0 && st.mfu_ghost_hits > 0 &&
		      st.evictions > 0, "workload did not exercise all cases");
	REQUIRE(st.mru_hits + st.mfu_hits == st.hits, "mru+mfu hits != hits");
	REQUIRE(st.hdr_size > 0, "hdr_size is 0");
	arc_destroy(arc);
}

static void test_invalidate(void)
{
	unsigned char d[PAGE];
	arc_t *arc = arc_create(4 * PAGE, ARC_POLICY_ARC);
	fill(d, 1, PAGE);
	arc_release(arc_insert(arc, K(1), d, PAGE));
	arc_invalidate(arc, K(1));
	REQUIRE(arc_lookup(arc, K(1)) == NULL, "invalidated record still cached");
	struct arc_stats st;
	arc_get_stats(arc, &st);
	REQUIRE(st.size == 0 && st.data_size == 0 && st.hdr_size == 0, "invalidate left bytes");

	/* a ghost goes too: no ghost hit afterwards */
	for (uint64_t k = 10; k < 12; k++) {
		arc_release(arc_insert(arc, K(k), d, PAGE));
		arc_release(arc_lookup(arc, K(k)));     /* -> MFU */
	}
	for (uint64_t k = 12; k < 20; k++)
		arc_release(arc_insert(arc, K(k), d, PAGE));
	struct arc_lists l;
	arc_get_lists(arc, &l);
	REQUIRE(l.mru_ghost_count > 0, "no ghosts made");
	for (uint64_t k = 10; k < 20; k++)
		arc_invalidate(arc, K(k));
	arc_get_lists(arc, &l);
	REQUIRE(l.mru_count + l.mfu_count + l.mru_ghost_count + l.mfu_ghost_count == 0,
	      "invalidate left headers");
	arc_get_stats(arc, &st);
	uint64_t gh = st.mru_ghost_hits;
	REQUIRE(arc_lookup(arc, K(12)) == NULL, "lookup after invalidate hit");
	arc_get_stats(arc, &st);
	REQUIRE(st.mru_ghost_hits == gh, "ghost hit on an invalidated key");
	arc_invalidate(arc, K(12345));  /* absent: no-op */
	arc_destroy(arc);
}

/* arc_cached: what is resident, without counting or moving anything (ghosts are not cached) */
static void test_cached(void)
{
	unsigned char d[PAGE];
	arc_t *arc = arc_create(2 * PAGE, ARC_POLICY_ARC);
	fill(d, 1, PAGE);
	for (uint64_t k = 1; k <= 3; k++)
		arc_release(arc_insert(arc, K(k), d, PAGE)); /* 1 becomes a ghost */
	struct arc_stats before, after;
	struct arc_lists lb, la;
	arc_get_stats(arc, &before);
	arc_get_lists(arc, &lb);
	REQUIRE(!arc_cached(arc, K(1)) && arc_cached(arc, K(2)) && arc_cached(arc, K(3)) && !arc_cached(arc, K(9)),
		"arc_cached disagrees with what is resident");
	arc_get_stats(arc, &after);
	arc_get_lists(arc, &la);
	REQUIRE(after.hits == before.hits && after.misses == before.misses && after.p == before.p &&
		after.mru_ghost_hits == before.mru_ghost_hits && la.mru_count == lb.mru_count &&
		la.mfu_count == lb.mfu_count, "arc_cached counted or moved a record");
	arc_invalidate(arc, K(2));
	REQUIRE(!arc_cached(arc, K(2)), "an invalidated record is cached");
	arc_destroy(arc);
}

struct hook_log { int n; uint64_t last; bool had_data; };
static void hook(void *ctx, struct arc_key key, const void *data, uint32_t size)
{
	struct hook_log *h = ctx;
	h->n++;
	h->last = key.blkid;
	h->had_data = data && size == PAGE && data_ok_raw(data, key.blkid, size);
}

static void test_refcounts_and_hook(void)
{
	unsigned char d[PAGE];
	struct hook_log log = { 0 };
	arc_t *arc = arc_create(4 * PAGE, ARC_POLICY_ARC);
	arc_set_evict_hook(arc, hook, &log);
	fill(d, 1, PAGE);
	arc_buf_t *held = arc_insert(arc, K(1), d, PAGE);
	fill(d, 2, PAGE);
	arc_buf_t *again = arc_insert(arc, K(1), d, PAGE);
	REQUIRE(again == held, "raced insert did not return the cached buffer");
	arc_release(again);
	for (uint64_t k = 2; k < 40; k++) {
		fill(d, k, PAGE);
		arc_release(arc_insert(arc, K(k), d, PAGE));
	}
	REQUIRE(arc_lookup(arc, K(1)) == NULL, "record 1 should be evicted");
	REQUIRE(data_ok(held, 1), "held buffer changed after eviction");   /* ASan: no UAF */
	REQUIRE(log.n > 0 && log.had_data, "eviction hook not called with the data");
	struct arc_stats st;
	arc_get_stats(arc, &st);
	REQUIRE(st.evictions == (uint64_t)log.n, "evictions %llu, hook calls %d",
	      (unsigned long long)st.evictions, log.n);
	arc_destroy(arc);
	REQUIRE(data_ok(held, 1), "held buffer changed after arc_destroy");
	arc_release(held);              /* LeakSanitizer: freed exactly here */

	arc = arc_create(2 * PAGE, ARC_POLICY_ARC);
	unsigned char big[3 * PAGE];
	fill(big, 9, sizeof(big));
	arc_buf_t *b = arc_insert(arc, K(9), big, sizeof(big));
	REQUIRE(b && data_ok(b, 9), "oversized insert failed");
	REQUIRE(arc_lookup(arc, K(9)) == NULL, "record larger than c was cached");
	arc_release(b);
	b = arc_insert(arc, K(10), big, 0);
	REQUIRE(b && arc_buf_size(b) == 0, "empty insert failed");
	REQUIRE(arc_lookup(arc, K(10)) == NULL, "empty record was cached");
	arc_release(b);
	arc_destroy(arc);
}

static void test_lru(void)
{
	arc_t *arc = arc_create(3 * PAGE, ARC_POLICY_LRU);
	/* 1 2 3 1 4: LRU evicts 2; ARC semantics would not matter here */
	static const uint64_t seq[] = { 1, 2, 3, 1, 4 };
	for (size_t i = 0; i < 5; i++)
		arc_access(arc, K(seq[i]), PAGE);
	REQUIRE(arc_access(arc, K(1), PAGE), "1 should hit");
	REQUIRE(arc_access(arc, K(3), PAGE), "3 should hit");
	REQUIRE(!arc_access(arc, K(2), PAGE), "2 should have been evicted");
	struct arc_lists l;
	arc_get_lists(arc, &l);
	REQUIRE(l.mru_ghost_count + l.mfu_ghost_count == 0 && l.mfu_count == 0,
	      "LRU made ghosts or MFU entries");
	arc_destroy(arc);

	/* The same through lookups, whose in-place hits are applied when the
	 * record reaches the LRU end: still exactly LRU's choice of victim. */
	unsigned char d[PAGE];
	arc = arc_create(3 * PAGE, ARC_POLICY_LRU);
	for (uint64_t k = 1; k <= 3; k++)
		arc_release(arc_insert(arc, K(k), d, PAGE));
	arc_buf_t *b = arc_lookup(arc, K(1));
	REQUIRE(b, "1 should hit");
	arc_release(b);
	arc_release(arc_insert(arc, K(4), d, PAGE));
	REQUIRE((b = arc_lookup(arc, K(1))) != NULL, "hit record 1 was evicted");
	arc_release(b);
	REQUIRE(arc_lookup(arc, K(2)) == NULL, "2 (least recently used) should be evicted");
	arc_destroy(arc);
}

/* ---- threads ---- */

#define NTHREADS 4
#define NOPS 40000
struct worker { arc_t *arc; unsigned seed; uint64_t lookups, bad; };

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	unsigned char d[PAGE];
	for (int i = 0; i < NOPS; i++) {
		unsigned r = (unsigned)rand_r(&w->seed);
		uint64_t blk = r % 7 ? r % 64 : 64 + r % 2000;  /* hot set + scans */
		uint32_t size = 512 + (uint32_t)(blk % 4) * 512;
		if (r % 97 == 0) {
			arc_invalidate(w->arc, K(blk));
			continue;
		}
		w->lookups++;
		arc_buf_t *b = arc_lookup(w->arc, K(blk));
		if (!b) {
			fill(d, blk, size);
			b = arc_insert(w->arc, K(blk), d, size);
		}
		if (!b || arc_buf_size(b) != size || !data_ok(b, blk))
			w->bad++;
		arc_release(b);
	}
	return NULL;
}

static void test_threads(void)
{
	arc_t *arc = arc_create(96 * 1024, ARC_POLICY_ARC);
	pthread_t th[NTHREADS];
	struct worker w[NTHREADS];
	for (int i = 0; i < NTHREADS; i++) {
		w[i] = (struct worker){ .arc = arc, .seed = 1234u + (unsigned)i };
		pthread_create(&th[i], NULL, worker_main, &w[i]);
	}
	uint64_t lookups = 0, bad = 0;
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		lookups += w[i].lookups;
		bad += w[i].bad;
	}
	REQUIRE(bad == 0, "%llu lookups returned wrong data", (unsigned long long)bad);
	struct arc_stats st;
	arc_get_stats(arc, &st);
	REQUIRE(st.hits + st.misses == lookups, "hits %llu + misses %llu != lookups %llu",
	      (unsigned long long)st.hits, (unsigned long long)st.misses,
	      (unsigned long long)lookups);
	REQUIRE(st.hits > 0 && st.mfu_hits > 0, "no hits under concurrency");
	check_invariants(arc, "after threads", 0);
	arc_destroy(arc);
}

int main(void)
{
	test_matches_paper();
	test_invariants();
	test_invalidate();
	test_cached();
	test_refcounts_and_hook();
	test_lru();
	test_threads();
	return unit_result("arc_test");
}
