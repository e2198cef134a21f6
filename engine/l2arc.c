/* l2arc.c — L2ARC index (compact headers in a hash table and per-device
 * lists), staging of evicted records, reads with checksum verification, and
 * the feed thread that writes staged records to the device rings (l2arc.h). */
#include "l2arc_impl.h"

#include <errno.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "devmodel.h"
#include "strata_probes.h"
#include "util.h"

_Static_assert(sizeof(struct l2hdr) == 72, "L2ARC header grew");

#define F(x) TIER_STAT_FIELD(struct l2arc_stats, x)
const struct tier_stat_field l2arc_stat_fields[] = {
	F(l2_hits), F(l2_misses), F(l2_feeds), F(l2_writes_sent), F(l2_write_bytes),
	F(l2_writes_error), F(l2_read_bytes), F(l2_size), F(l2_asize), F(l2_hdr_size),
	F(l2_bufs), F(l2_hdr_sizeof), F(l2_cksum_bad), F(l2_io_error), F(l2_read_races),
	F(l2_evict_bufs), F(l2_invalidated), F(l2_feed_drops), F(l2_stage_bufs),
	F(l2_stage_bytes), F(l2_log_blk_writes), F(l2_rebuild_success), F(l2_rebuild_bufs),
	F(l2_rebuild_log_blks), F(l2_rebuild_lb_bad), F(l2_rebuild_io_errors),
	F(l2_rebuild_aborts), F(l2_dev_bytes), F(l2_enabled), F(l2_compress),
};
#undef F
const size_t l2arc_stat_nfields = sizeof(l2arc_stat_fields) / sizeof(l2arc_stat_fields[0]);

void l2arc_config_defaults(struct l2arc_config *cfg)
{
	*cfg = (struct l2arc_config){
		.write_max = 8ull << 20,
		.write_boost = 8ull << 20,
		.headroom = 2,
		.feed_interval_ms = 1000,
		.feed_min_ms = 200,
		.log_entries = 64,
		.max_buf = 1u << 20,
		.compress = true,
		.rebuild = true,
	};
}

uint64_t l2_key_hash(struct arc_key k)
{
	uint64_t x = k.objid * 0x9E3779B97F4A7C15ull ^ (k.blkid + 0x632BE59BD9B4E019ull);
	x ^= x >> 31;
	x *= 0xBF58476D1CE4E5B9ull;
	x ^= x >> 29;
	return x;
}

/* ---- headers: hash table and per-device lists (caller holds l2->lock) ---- */

static uint32_t hdr_alloc(struct l2arc *l2)
{
	if (l2->free_head == L2_NIL) {
		struct l2hdr **c = realloc(l2->chunks, (l2->nchunks + 1) * sizeof(*c));
		struct l2hdr *chunk = calloc(L2_CHUNK, sizeof(struct l2hdr));
		if (!c || !chunk)
			abort();
		l2->chunks = c;
		c[l2->nchunks] = chunk;
		uint32_t base = l2->nchunks << L2_CHUNK_SHIFT;
		for (uint32_t i = L2_CHUNK; i-- > 0;) {
			chunk[i].hnext = l2->free_head;
			l2->free_head = base + i;
		}
		l2->nchunks++;
	}
	uint32_t i = l2->free_head;
	l2->free_head = l2_hdr(l2, i)->hnext;
	return i;
}

static void hash_grow(struct l2arc *l2)
{
	uint32_t n = l2->nbuckets * 2;
	uint32_t *b = malloc(n * sizeof(*b));
	if (!b)
		return; /* longer chains, still correct */
	memset(b, 0xff, n * sizeof(*b));
	for (uint32_t k = 0; k < l2->nbuckets; k++) {
		for (uint32_t i = l2->buckets[k], next; i != L2_NIL; i = next) {
			struct l2hdr *h = l2_hdr(l2, i);
			next = h->hnext;
			uint32_t nb = (uint32_t)(l2_key_hash(h->key) & (n - 1));
			h->hnext = b[nb];
			b[nb] = i;
		}
	}
	free(l2->buckets);
	l2->buckets = b;
	l2->nbuckets = n;
}

uint32_t l2_lookup(struct l2arc *l2, struct arc_key key)
{
	uint32_t i = l2->buckets[l2_key_hash(key) & (l2->nbuckets - 1)];
	while (i != L2_NIL && !l2_key_eq(l2_hdr(l2, i)->key, key))
		i = l2_hdr(l2, i)->hnext;
	return i;
}

static void hdr_drop(struct l2arc *l2, uint32_t i)
{
	struct l2hdr *h = l2_hdr(l2, i);
	uint32_t *pp = &l2->buckets[l2_key_hash(h->key) & (l2->nbuckets - 1)];
	while (*pp != i)
		pp = &l2_hdr(l2, *pp)->hnext;
	*pp = h->hnext;
	struct l2dev *d = &l2->devs[h->dev];
	if (h->prev != L2_NIL)
		l2_hdr(l2, h->prev)->next = h->next;
	else
		d->order_head = h->next;
	if (h->next != L2_NIL)
		l2_hdr(l2, h->next)->prev = h->prev;
	else
		d->order_tail = h->prev;
	l2->st.l2_size -= h->lsize;
	l2->st.l2_asize -= l2_asize(h->psize);
	l2->nlive--;
	h->hnext = l2->free_head;
	l2->free_head = i;
}

void l2_hdr_add(struct l2arc *l2, struct l2dev *d, const struct l2hdr *src, int oldest)
{
	uint32_t old = l2_lookup(l2, src->key);
	if (old != L2_NIL)
		hdr_drop(l2, old);
	uint32_t i = hdr_alloc(l2);
	struct l2hdr *h = l2_hdr(l2, i);
	*h = *src;
	h->dev = d->index;
	uint32_t b = (uint32_t)(l2_key_hash(h->key) & (l2->nbuckets - 1));
	h->hnext = l2->buckets[b];
	l2->buckets[b] = i;
	if (oldest) {
		h->prev = L2_NIL;
		h->next = d->order_head;
		if (d->order_head != L2_NIL)
			l2_hdr(l2, d->order_head)->prev = i;
		else
			d->order_tail = i;
		d->order_head = i;
	} else {
		h->next = L2_NIL;
		h->prev = d->order_tail;
		if (d->order_tail != L2_NIL)
			l2_hdr(l2, d->order_tail)->next = i;
		else
			d->order_head = i;
		d->order_tail = i;
	}
	l2->st.l2_size += h->lsize;
	l2->st.l2_asize += l2_asize(h->psize);
	if (++l2->nlive > 2 * l2->nbuckets)
		hash_grow(l2);
}

/* Drops the oldest headers of d that start in [lo, hi): the region the hand
 * is about to overwrite. */
static void evict_region(struct l2arc *l2, struct l2dev *d, uint64_t lo, uint64_t hi)
{
	while (d->order_head != L2_NIL) {
		struct l2hdr *h = l2_hdr(l2, d->order_head);
		uint64_t off = (uint64_t)h->daddr * L2_SECTOR;
		if (off < lo || off >= hi)
			break;
		hdr_drop(l2, d->order_head);
		l2->st.l2_evict_bufs++;
	}
}

/* ---- staging and rebuild tombstones (caller holds l2->lock) ---- */

struct l2stage *l2_stage_find(struct l2arc *l2, struct arc_key key)
{
	struct l2stage *s = l2->stage_hash[l2_key_hash(key) & (L2_STAGE_HASH - 1)];
	while (s && !l2_key_eq(s->key, key))
		s = s->hnext;
	return s;
}

static void stage_unhash(struct l2arc *l2, struct l2stage *s)
{
	struct l2stage **pp = &l2->stage_hash[l2_key_hash(s->key) & (L2_STAGE_HASH - 1)];
	while (*pp != s)
		pp = &(*pp)->hnext;
	*pp = s->hnext;
}

/* Removes a queued (not in-flight) entry from the FIFO and the hash. */
static void stage_remove(struct l2arc *l2, struct l2stage *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		l2->stage_head = s->next;
	if (s->next)
		s->next->prev = s->prev;
	else
		l2->stage_tail = s->prev;
	stage_unhash(l2, s);
	l2->st.l2_stage_bufs--;
	l2->st.l2_stage_bytes -= s->size;
}

int l2_tomb_has(struct l2arc *l2, struct arc_key key)
{
	for (struct l2tomb *t = l2->tomb_hash[l2_key_hash(key) & (L2_TOMB_HASH - 1)]; t; t = t->next)
		if (l2_key_eq(t->key, key))
			return 1;
	return 0;
}

static void tomb_add(struct l2arc *l2, struct arc_key key)
{
	if (l2_tomb_has(l2, key))
		return;
	struct l2tomb *t = l2->ntombs < L2_TOMB_MAX ? malloc(sizeof(*t)) : NULL;
	if (!t) {
		l2->tomb_overflow = 1; /* the rebuilds stop: they can no longer tell */
		return;
	}
	uint32_t b = (uint32_t)(l2_key_hash(key) & (L2_TOMB_HASH - 1));
	t->key = key;
	t->next = l2->tomb_hash[b];
	l2->tomb_hash[b] = t;
	l2->ntombs++;
}

void l2_tombs_clear(struct l2arc *l2)
{
	for (uint32_t b = 0; b < L2_TOMB_HASH; b++) {
		while (l2->tomb_hash[b]) {
			struct l2tomb *t = l2->tomb_hash[b];
			l2->tomb_hash[b] = t->next;
			free(t);
		}
	}
	l2->ntombs = 0;
	l2->tomb_overflow = 0;
}

/* ---- public: offer, invalidate, read ---- */

bool l2arc_feed_offer(struct l2arc *l2, struct arc_key key, const void *data, uint32_t size)
{
	if (!data || !size || size > l2->cfg.max_buf || !__atomic_load_n(&l2->enabled, __ATOMIC_RELAXED))
		return false;
	pthread_mutex_lock(&l2->lock);
	int ok = l2->enabled && l2->ndevs && l2_lookup(l2, key) == L2_NIL && !l2_stage_find(l2, key);
	if (ok && l2->st.l2_stage_bytes + size > l2->stage_cap) {
		l2->st.l2_feed_drops++;
		ok = 0;
	}
	pthread_mutex_unlock(&l2->lock);
	if (!ok)
		return false;
	struct l2stage *s = malloc(sizeof(*s) + size);
	if (!s)
		return false;
	memset(s, 0, sizeof(*s));
	s->key = key;
	s->size = size;
	memcpy(s->data, data, size);
	pthread_mutex_lock(&l2->lock);
	ok = l2->enabled && l2_lookup(l2, key) == L2_NIL && !l2_stage_find(l2, key) &&
	     l2->st.l2_stage_bytes + size <= l2->stage_cap;
	if (ok) {
		s->prev = l2->stage_tail;
		if (l2->stage_tail)
			l2->stage_tail->next = s;
		else
			l2->stage_head = s;
		l2->stage_tail = s;
		uint32_t b = (uint32_t)(l2_key_hash(key) & (L2_STAGE_HASH - 1));
		s->hnext = l2->stage_hash[b];
		l2->stage_hash[b] = s;
		l2->st.l2_stage_bufs++;
		l2->st.l2_stage_bytes += size;
	}
	pthread_mutex_unlock(&l2->lock);
	if (!ok)
		free(s);
	return ok;
}

void l2arc_arc_evict_hook(void *l2, struct arc_key key, const void *data, uint32_t size)
{
	l2arc_feed_offer(l2, key, data, size);
}

void l2arc_invalidate(struct l2arc *l2, struct arc_key key)
{
	struct l2stage *gone = NULL;
	pthread_mutex_lock(&l2->lock);
	uint32_t i = l2_lookup(l2, key);
	if (i != L2_NIL) {
		hdr_drop(l2, i);
		l2->st.l2_invalidated++;
	}
	struct l2stage *s = l2_stage_find(l2, key);
	if (s && s->inflight) {
		s->cancelled = 1;
	} else if (s) {
		stage_remove(l2, s);
		gone = s;
	}
	if (l2->rebuilding)
		tomb_add(l2, key);
	pthread_mutex_unlock(&l2->lock);
	free(gone);
}

int l2arc_read(struct l2arc *l2, struct arc_key key, void *buf, uint32_t bufsize)
{
	uint64_t start = clock_mono_ns();
	pthread_mutex_lock(&l2->lock);
	uint32_t i = l2->enabled ? l2_lookup(l2, key) : L2_NIL;
	if (i == L2_NIL) {
		l2->st.l2_misses++;
		pthread_mutex_unlock(&l2->lock);
		return 0;
	}
	struct l2hdr h = *l2_hdr(l2, i);
	struct l2dev *d = &l2->devs[h.dev];
	pthread_mutex_unlock(&l2->lock);
	if (h.lsize > bufsize)
		return -ENOSPC;

	uint32_t asz = l2_asize(h.psize);
	uint64_t off = (uint64_t)h.daddr * L2_SECTOR;
	uint64_t aoff = off & ~(uint64_t)(TIERDEV_ALIGN - 1);
	size_t span = tier_roundup(off + asz - aoff, TIERDEV_ALIGN);
	void *bounce;
	if (posix_memalign(&bounce, TIERDEV_ALIGN, span))
		return -ENOMEM;
	uint64_t t0 = clock_mono_ns();
	int ret = tierdev_pread(&d->io, bounce, span, aoff);
	devmodel_service(l2->model, DEVMODEL_READ, aoff, (uint32_t)span, clock_mono_ns() - t0);
	devmodel_delay(__atomic_load_n(&l2->read_delay_ns, __ATOMIC_RELAXED));
	int bad = 0;
	if (!ret) {
		const uint8_t *p = (const uint8_t *)bounce + (off - aoff);
		struct cksum ck;
		fletcher4(p, asz, &ck);
		if (!cksum_equal(&ck, &h.ck))
			bad = 1;
		else if (h.flags & L2F_COMPRESSED)
			bad = LZ4_decompress_safe((const char *)p, buf, (int)h.psize, (int)bufsize) != (int)h.lsize;
		else
			memcpy(buf, p, h.lsize);
	}
	free(bounce);

	int error = 0;
	if (ret || bad) {
		pthread_mutex_lock(&l2->lock);
		uint32_t j = l2_lookup(l2, key);
		if (j == L2_NIL || l2_hdr(l2, j)->daddr != h.daddr || l2_hdr(l2, j)->dev != h.dev) {
			/* The feed evicted it and overwrote the region meanwhile. */
			l2->st.l2_read_races++;
			l2->st.l2_misses++;
			pthread_mutex_unlock(&l2->lock);
			return 0;
		}
		hdr_drop(l2, j);
		if (ret) {
			l2->st.l2_io_error++;
			error = ret = -EIO;
		} else {
			l2->st.l2_cksum_bad++;
			error = ret = -EBADMSG;
		}
		pthread_mutex_unlock(&l2->lock);
	} else {
		__atomic_add_fetch(&l2->st.l2_hits, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&l2->st.l2_read_bytes, h.lsize, __ATOMIC_RELAXED);
		ret = (int)h.lsize;
	}
	if (STRATA_PROBE_ENABLED(l2arc_read)) {
		struct strata_tier_io io = { .start_ns = start, .file_id = key.objid, .bytes = h.lsize,
					     .asize = asz, .error = error, .count = 1 };
		STRATA_PROBE(l2arc_read, &io);
	}
	return ret;
}

/* ---- feed ---- */

static struct l2dev *pick_dev(struct l2arc *l2)
{
	for (uint32_t k = 0; k < l2->ndevs; k++) {
		uint32_t idx = (l2->next_dev + k) % l2->ndevs;
		if (!l2->devs[idx].rebuilding) {
			l2->next_dev = idx + 1;
			return &l2->devs[idx];
		}
	}
	return NULL;
}

/* Lays out the batch at lpos L: buffers (compressed when it saves >= 1/8),
 * a log block after every log_entries buffers and at the end.  Returns the
 * bytes used; ents[] gets each buffer's entry and *chain the newest block. */
static uint64_t build_batch(struct l2arc *l2, const struct l2dev *d, struct l2stage **batch,
			    uint32_t n, uint64_t L, uint8_t *buf, struct l2_lbent *ents,
			    struct l2_lbptr *chain, uint32_t *nlb)
{
	int compress = __atomic_load_n(&l2->compress, __ATOMIC_RELAXED);
	uint64_t cur = 0;
	uint32_t first = 0;
	*nlb = 0;
	for (uint32_t j = 0; j < n; j++) {
		struct l2stage *s = batch[j];
		uint8_t *dst = buf + cur;
		uint32_t psize = s->size, flags = 0;
		if (compress) {
			int c = LZ4_compress_default((const char *)s->data, (char *)dst, (int)s->size,
						     (int)(s->size - s->size / 8));
			if (c > 0) {
				psize = (uint32_t)c;
				flags = L2F_COMPRESSED;
			}
		}
		if (!flags)
			memcpy(dst, s->data, s->size);
		uint32_t asz = l2_asize(psize);
		memset(dst + psize, 0, asz - psize);
		ents[j] = (struct l2_lbent){ .key = s->key, .lpos = L + cur, .lsize = s->size,
					     .psize_flags = psize | flags << 24 };
		fletcher4(dst, asz, &ents[j].ck);
		cur += asz;
		if (j + 1 - first == l2->cfg.log_entries || j + 1 == n) {
			cur += l2_lb_encode(buf + cur, d, L + cur, ents + first, j + 1 - first, chain);
			(*nlb)++;
			first = j + 1;
		}
	}
	return cur;
}

/* One feed's batch, from staging to the device's index. */
struct feed {
	struct l2dev *d;
	struct l2stage **batch;    /* staged copies taken, n of them */
	uint32_t n;
	uint64_t target;           /* asize bytes the feed aims at */
	uint64_t bound, logical;   /* the batch's asize and logical bytes */
	uint64_t L, P, total;      /* where it goes (logical, physical) and the bytes reserved there */
	struct l2dev snap;         /* the device as the intent superblock records it */
	uint8_t *buf;              /* the write: buffers and log blocks */
	struct l2_lbent *ents;     /* each buffer's log entry */
	struct l2_lbptr chain;     /* the newest log block once written */
	uint32_t nlb;              /* log blocks written */
	uint64_t len;              /* bytes written */
};

/* What one feed of d writes at most: write_max, plus write_boost until the ring
 * has filled once, and never more than a quarter of the ring. */
static uint64_t feed_target(const struct l2arc *l2, const struct l2dev *d)
{
	uint64_t tgt = l2->cfg.write_max + (d->filled ? 0 : l2->cfg.write_boost);
	return tgt > d->ring_len / 4 ? d->ring_len / 4 : tgt;
}

/* Takes staged copies, oldest first, up to the target (at least one) into the
 * batch; each stays findable in the staged-key hash while in flight (l2->lock held). */
static void take_batch(struct l2arc *l2, struct feed *f)
{
	uint32_t cap = 64;
	f->batch = malloc(cap * sizeof(*f->batch));
	while (l2->stage_head && f->batch) {
		struct l2stage *s = l2->stage_head;
		if (f->n && f->bound + l2_asize(s->size) > f->target)
			break;
		if (f->n == cap) {
			struct l2stage **nb = realloc(f->batch, 2 * cap * sizeof(*nb));
			if (!nb)
				break;
			f->batch = nb;
			cap *= 2;
		}
		stage_remove(l2, s);
		uint32_t b = (uint32_t)(l2_key_hash(s->key) & (L2_STAGE_HASH - 1));
		s->hnext = l2->stage_hash[b];
		l2->stage_hash[b] = s;
		s->inflight = 1;
		f->batch[f->n++] = s;
		f->bound += l2_asize(s->size);
		f->logical += s->size;
	}
}

/* Reserves the batch's region at the device's hand (skipping to the next lap
 * where it would cross the ring's end) and evicts what it overwrites (l2->lock held). */
static void reserve_region(struct l2arc *l2, struct feed *f)
{
	struct l2dev *d = f->d;
	uint32_t lbmax = (f->n + l2->cfg.log_entries - 1) / l2->cfg.log_entries;
	f->total = tier_roundup(f->bound + (uint64_t)lbmax * l2_lb_bytes(l2->cfg.log_entries), TIERDEV_ALIGN);
	f->L = d->hand_lpos;
	f->P = l2_phys(d, f->L);
	if (f->P + f->total > d->ring_end) {
		evict_region(l2, d, f->P, d->ring_end);
		f->L += d->ring_end - f->P;
		f->P = d->ring_start;
		d->filled = 1;
	}
	evict_region(l2, d, f->P, f->P + f->total);
	if (f->L + f->total > d->ring_len && f->L + f->total - d->ring_len > d->evict_lpos)
		d->evict_lpos = f->L + f->total - d->ring_len;
	d->evict_gen++;
	f->snap = *d;
	f->snap.hand_lpos = f->L;
}

/* Records the intent in the superblock, lays the batch out and writes it
 * (l2->lock not held); 0 or a negative errno. */
static int write_batch(struct l2arc *l2, struct feed *f)
{
	int err = l2_sb_write(f->d, &f->snap); /* intent: the region below evict_lpos is going */
	f->buf = tierdev_alloc(f->total);
	f->ents = malloc(f->n * sizeof(*f->ents));
	f->chain = f->snap.head;
	if (!f->ents)
		err = -ENOMEM;
	if (err)
		return err;
	f->len = tier_roundup(build_batch(l2, f->d, f->batch, f->n, f->L, f->buf, f->ents, &f->chain, &f->nlb),
			      TIERDEV_ALIGN);
	uint64_t t0 = clock_mono_ns();
	err = tierdev_pwrite(&f->d->io, f->buf, f->len, f->P);
	devmodel_service(l2->model, DEVMODEL_WRITE, f->P, (uint32_t)f->len, clock_mono_ns() - t0);
	return err;
}

/* Indexes the written buffers (those not cancelled meanwhile) and moves the
 * hand past them; after an error, past the whole region (l2->lock held). */
static void index_batch(struct l2arc *l2, struct feed *f, int err)
{
	struct l2dev *d = f->d;
	for (uint32_t j = 0; j < f->n; j++) {
		struct l2stage *s = f->batch[j];
		stage_unhash(l2, s);
		if (err || s->cancelled)
			continue;
		const struct l2_lbent *e = &f->ents[j];
		struct l2hdr h = { .key = s->key, .ck = e->ck,
				   .daddr = (uint32_t)((f->P + (e->lpos - f->L)) / L2_SECTOR),
				   .lsize = s->size, .psize = e->psize_flags & 0xffffff,
				   .flags = e->psize_flags >> 24 };
		l2_hdr_add(l2, d, &h, 0);
		l2->st.l2_writes_sent++;
	}
	if (err) {
		l2->st.l2_writes_error++;
		d->hand_lpos = f->L + f->total; /* skip the region; the chain goes around it */
	} else {
		d->head = f->chain;
		d->hand_lpos = f->L + f->len;
		l2->st.l2_feeds++;
		l2->st.l2_write_bytes += f->len;
		l2->st.l2_log_blk_writes += f->nlb;
	}
}

static void feed_free(struct feed *f)
{
	for (uint32_t j = 0; j < f->n; j++)
		free(f->batch[j]);
	free(f->batch);
	free(f->ents);
	free(f->buf);
}

/* One feed: returns the logical bytes written; *target gets the feed's target. */
static uint64_t feed_once(struct l2arc *l2, uint64_t *target)
{
	struct feed f = { 0 };
	pthread_mutex_lock(&l2->lock);
	f.d = l2->enabled && l2->stage_head ? pick_dev(l2) : NULL;
	if (f.d) {
		f.target = feed_target(l2, f.d);
		take_batch(l2, &f);
	}
	*target = f.target;
	if (!f.n) {
		pthread_mutex_unlock(&l2->lock);
		free(f.batch);
		return 0;
	}
	l2->feeding = 1;
	reserve_region(l2, &f);
	pthread_mutex_unlock(&l2->lock);

	uint64_t start = clock_mono_ns();
	int err = write_batch(l2, &f);

	pthread_mutex_lock(&l2->lock);
	index_batch(l2, &f, err);
	struct l2dev snap = *f.d;
	l2->feeding = 0;
	pthread_mutex_unlock(&l2->lock);
	if (!err)
		l2_sb_write(f.d, &snap);

	if (STRATA_PROBE_ENABLED(l2arc_write)) {
		struct strata_tier_io io = { .start_ns = start, .bytes = (uint32_t)f.logical,
					     .asize = (uint32_t)f.len, .error = err, .count = 1 };
		STRATA_PROBE(l2arc_write, &io);
	}
	feed_free(&f);
	return err ? 0 : f.logical;
}

static void deadline_after(struct timespec *ts, uint32_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void *feed_main(void *arg)
{
	struct l2arc *l2 = arg;
	struct timespec deadline;
	pthread_mutex_lock(&l2->lock);
	deadline_after(&deadline, l2->cfg.feed_interval_ms);
	while (!l2->stop) {
		if (!l2->kick && pthread_cond_timedwait(&l2->feed_cv, &l2->lock, &deadline) != ETIMEDOUT)
			continue; /* kicked, stopped or spurious: re-check */
		l2->kick = 0;
		pthread_mutex_unlock(&l2->lock);
		uint64_t target;
		uint64_t wrote = feed_once(l2, &target);
		pthread_mutex_lock(&l2->lock);
		l2->feed_cycles++;
		pthread_cond_broadcast(&l2->done_cv);
		deadline_after(&deadline, target && wrote * 2 > target ? l2->cfg.feed_min_ms
								       : l2->cfg.feed_interval_ms);
	}
	pthread_mutex_unlock(&l2->lock);
	return NULL;
}

/* ---- rebuild ---- */

/* Restores the entries of one verified log block, newest first, at the old
 * end of the device's list; 0 if the rebuild must stop. */
static int restore_block(void *ctx, const uint8_t *p, const struct l2_lbhdr *h)
{
	struct l2_rebuild_arg *a = ctx;
	struct l2arc *l2 = a->l2;
	struct l2dev *d = a->dev;
	pthread_mutex_lock(&l2->lock);
	if (l2->stop || l2->tomb_overflow) {
		l2->st.l2_rebuild_aborts++;
		pthread_mutex_unlock(&l2->lock);
		return 0;
	}
	for (uint32_t i = h->nentries; i-- > 0;) {
		struct l2_lbent e;
		memcpy(&e, p + sizeof(*h) + i * sizeof(e), sizeof(e));
		if (!l2_lbent_valid(d, &e, h->lpos, l2->cfg.max_buf) || l2_lookup(l2, e.key) != L2_NIL ||
		    l2_stage_find(l2, e.key) || l2_tomb_has(l2, e.key))
			continue;
		struct l2hdr hdr = { .key = e.key, .ck = e.ck,
				     .daddr = (uint32_t)(l2_phys(d, e.lpos) / L2_SECTOR),
				     .lsize = e.lsize, .psize = e.psize_flags & 0xffffff,
				     .flags = e.psize_flags >> 24 };
		l2_hdr_add(l2, d, &hdr, 1);
		l2->st.l2_rebuild_bufs++;
	}
	l2->st.l2_rebuild_log_blks++;
	pthread_mutex_unlock(&l2->lock);
	return 1;
}

/* Marks d rebuilt (ok: the chain was walked to its end) and wakes waiters. */
static void rebuild_finish(struct l2arc *l2, struct l2dev *d, int ok)
{
	pthread_mutex_lock(&l2->lock);
	if (ok)
		l2->st.l2_rebuild_success++;
	d->rebuilding = 0;
	if (--l2->rebuilding == 0)
		l2_tombs_clear(l2);
	pthread_cond_broadcast(&l2->done_cv);
	pthread_mutex_unlock(&l2->lock);
}

/* The rebuild thread of one device (arg: malloc'ed struct l2_rebuild_arg, freed here):
 * the headers of its log chain restored, block after block. */
static void *rebuild_main(void *arg)
{
	struct l2_rebuild_arg a = *(struct l2_rebuild_arg *)arg;
	free(arg);
	enum l2_walk end = l2_log_walk(a.dev, restore_block, &a);
	if (end == L2_WALK_IO_ERROR)
		__atomic_add_fetch(&a.l2->st.l2_rebuild_io_errors, 1, __ATOMIC_RELAXED);
	else if (end == L2_WALK_BAD_BLOCK)
		__atomic_add_fetch(&a.l2->st.l2_rebuild_lb_bad, 1, __ATOMIC_RELAXED);
	rebuild_finish(a.l2, a.dev, end == L2_WALK_END);
	return NULL;
}

/* ---- lifecycle ---- */

struct l2arc *l2arc_create(const struct l2arc_config *cfg)
{
	struct l2arc *l2 = calloc(1, sizeof(*l2));
	if (!l2)
		return NULL;
	l2->cfg = *cfg;
	if (l2->cfg.max_buf > L2_MAX_BUF || !l2->cfg.max_buf)
		l2->cfg.max_buf = L2_MAX_BUF;
	if (!l2->cfg.log_entries || l2->cfg.log_entries > L2_LB_MAX_ENTRIES)
		l2->cfg.log_entries = 64;
	if (!l2->cfg.headroom)
		l2->cfg.headroom = 1;
	l2->stage_cap = l2->cfg.headroom * (l2->cfg.write_max + l2->cfg.write_boost);
	l2->enabled = 1;
	l2->compress = cfg->compress;
	l2->free_head = L2_NIL;
	l2->nbuckets = 1024;
	l2->buckets = malloc(l2->nbuckets * sizeof(*l2->buckets));
	if (!l2->buckets) {
		free(l2);
		return NULL;
	}
	memset(l2->buckets, 0xff, l2->nbuckets * sizeof(*l2->buckets));
	pthread_mutex_init(&l2->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l2->feed_cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&l2->done_cv, NULL);
	if (pthread_create(&l2->feed_thread, NULL, feed_main, l2)) {
		free(l2->buckets);
		free(l2);
		return NULL;
	}
	return l2;
}

int l2arc_add_device(struct l2arc *l2, const char *path, uint64_t create_size, char *err, size_t errsz)
{
	pthread_mutex_lock(&l2->lock);
	uint32_t idx = l2->ndevs;
	pthread_mutex_unlock(&l2->lock);
	if (idx >= L2ARC_MAX_DEVS) {
		snprintf(err, errsz, "%s: at most %d cache devices", path, L2ARC_MAX_DEVS);
		return -ENOSPC;
	}
	struct l2dev *d = &l2->devs[idx];
	int rc = tierdev_open(&d->io, path, create_size, err, errsz);
	if (rc)
		return rc;
	d->index = idx;
	d->order_head = d->order_tail = L2_NIL;
	d->ring_start = TIERDEV_ALIGN;
	d->ring_end = d->io.size;
	if (d->ring_end - d->ring_start > L2_MAX_RING)
		d->ring_end = d->ring_start + (L2_MAX_RING & ~(uint64_t)(TIERDEV_ALIGN - 1));
	uint64_t need = 4 * ((uint64_t)l2->cfg.max_buf + l2_lb_bytes(l2->cfg.log_entries) + TIERDEV_ALIGN);
	if (d->io.size < d->ring_start + need) {
		snprintf(err, errsz, "%s: too small for a cache device (need at least %llu bytes)", path,
			 (unsigned long long)(d->ring_start + need));
		tierdev_close(&d->io);
		return -ENOSPC;
	}
	d->ring_len = d->ring_end - d->ring_start;
	if (l2->cfg.rebuild && l2_sb_load(d)) {
		d->rebuilding = 1;
	} else {
		l2_sb_format(d);
		rc = l2_sb_write(d, d);
		if (rc) {
			snprintf(err, errsz, "%s: cannot write the superblock: %s", path, strerror(-rc));
			tierdev_close(&d->io);
			return rc;
		}
	}
	pthread_mutex_lock(&l2->lock);
	l2->ndevs++;
	l2->st.l2_dev_bytes += d->ring_len;
	l2->rebuilding += d->rebuilding;
	pthread_mutex_unlock(&l2->lock);
	if (d->rebuilding) {
		struct l2_rebuild_arg *a = malloc(sizeof(*a));
		if (a) {
			*a = (struct l2_rebuild_arg){ l2, d };
			d->rebuild_thread_live = !pthread_create(&d->rebuild_thread, NULL, rebuild_main, a);
		}
		if (!d->rebuild_thread_live) {
			free(a);
			rebuild_finish(l2, d, 0);
		}
	}
	return 0;
}

void l2arc_destroy(struct l2arc *l2)
{
	if (!l2)
		return;
	pthread_mutex_lock(&l2->lock);
	l2->stop = 1;
	pthread_cond_broadcast(&l2->feed_cv);
	pthread_cond_broadcast(&l2->done_cv);
	pthread_mutex_unlock(&l2->lock);
	pthread_join(l2->feed_thread, NULL);
	for (uint32_t i = 0; i < l2->ndevs; i++) {
		if (l2->devs[i].rebuild_thread_live)
			pthread_join(l2->devs[i].rebuild_thread, NULL);
		tierdev_close(&l2->devs[i].io);
	}
	while (l2->stage_head) {
		struct l2stage *s = l2->stage_head;
		l2->stage_head = s->next;
		free(s);
	}
	l2_tombs_clear(l2);
	for (uint32_t c = 0; c < l2->nchunks; c++)
		free(l2->chunks[c]);
	free(l2->chunks);
	free(l2->buckets);
	pthread_mutex_destroy(&l2->lock);
	pthread_cond_destroy(&l2->feed_cv);
	pthread_cond_destroy(&l2->done_cv);
	free(l2);
}

void l2arc_set_enabled(struct l2arc *l2, bool on)
{
	pthread_mutex_lock(&l2->lock);
	__atomic_store_n(&l2->enabled, on ? 1 : 0, __ATOMIC_RELAXED);
	struct l2stage *drop = NULL;
	if (!on) {
		while (l2->stage_head) {
			struct l2stage *s = l2->stage_head;
			stage_remove(l2, s);
			s->next = drop;
			drop = s;
		}
	}
	pthread_mutex_unlock(&l2->lock);
	while (drop) {
		struct l2stage *s = drop;
		drop = s->next;
		free(s);
	}
}

bool l2arc_enabled(struct l2arc *l2)
{
	return __atomic_load_n(&l2->enabled, __ATOMIC_RELAXED);
}

void l2arc_set_compress(struct l2arc *l2, bool on)
{
	__atomic_store_n(&l2->compress, on ? 1 : 0, __ATOMIC_RELAXED);
}

void l2arc_set_model(struct l2arc *l2, struct devmodel *m)
{
	l2->model = m;
}

void l2arc_set_read_delay(struct l2arc *l2, uint64_t ns)
{
	__atomic_store_n(&l2->read_delay_ns, ns, __ATOMIC_RELAXED);
}

static int can_feed(struct l2arc *l2)
{
	for (uint32_t i = 0; i < l2->ndevs; i++)
		if (!l2->devs[i].rebuilding)
			return 1;
	return 0;
}

void l2arc_flush(struct l2arc *l2)
{
	pthread_mutex_lock(&l2->lock);
	while (!l2->stop && l2->enabled && (l2->stage_head || l2->feeding) && can_feed(l2)) {
		uint64_t c = l2->feed_cycles;
		l2->kick = 1;
		pthread_cond_signal(&l2->feed_cv);
		while (l2->feed_cycles == c && !l2->stop)
			pthread_cond_wait(&l2->done_cv, &l2->lock);
	}
	pthread_mutex_unlock(&l2->lock);
}

void l2arc_wait_rebuild(struct l2arc *l2)
{
	pthread_mutex_lock(&l2->lock);
	while (l2->rebuilding)
		pthread_cond_wait(&l2->done_cv, &l2->lock);
	pthread_mutex_unlock(&l2->lock);
}

void l2arc_get_stats(struct l2arc *l2, struct l2arc_stats *out)
{
	pthread_mutex_lock(&l2->lock);
	*out = l2->st;
	out->l2_bufs = l2->nlive;
	out->l2_hdr_sizeof = sizeof(struct l2hdr);
	out->l2_hdr_size = (uint64_t)l2->nlive * sizeof(struct l2hdr) + (uint64_t)l2->nbuckets * sizeof(uint32_t);
	out->l2_enabled = (uint64_t)l2->enabled;
	out->l2_compress = (uint64_t)l2->compress;
	pthread_mutex_unlock(&l2->lock);
}
