/* txg.c — periodic sync, uberblocks and pool import (see txg.h). */
#include "txg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meta.h"
#include "util.h"

#define UB_MAGIC 0x5354524154415542ull /* "STRATAUB" */
#define UB_VERSION 1

struct uberblock {
	uint64_t magic;
	uint32_t version;
	uint32_t meta_vdev;
	uint64_t txg;
	uint64_t guid;
	uint64_t meta_offset;
	uint64_t meta_psize;
	uint64_t meta_lsize;
	struct cksum meta_ck;
	struct cksum ck; /* fletcher4 of the fields above */
};

static int read_uberblock(struct pool *p, int slot, struct uberblock *ub)
{
	uint8_t *buf = xaligned(POOL_BLOCK);
	int ok = 0;
	if (!pool_read(p, 0, POOL_UB_OFFSET(slot), buf, POOL_BLOCK)) {
		memcpy(ub, buf, sizeof(*ub));
		struct cksum ck;
		fletcher4(ub, offsetof(struct uberblock, ck), &ck);
		ok = ub->magic == UB_MAGIC && ub->version == UB_VERSION && ub->guid == p->guid &&
		     cksum_equal(&ck, &ub->ck) && ub->meta_vdev < p->nvdevs &&
		     ub->meta_lsize <= ub->meta_psize && ub->meta_psize <= (1ull << 32) &&
		     ub->meta_psize % POOL_BLOCK == 0;
	}
	free(buf);
	return ok;
}

static int load_meta(struct objset *os, const struct uberblock *ub)
{
	uint8_t *buf = xaligned(ub->meta_psize);
	int rc = -1;
	if (pool_read(os->pool, ub->meta_vdev, ub->meta_offset, buf, (uint32_t)ub->meta_psize))
		goto out;
	struct cksum ck;
	fletcher4(buf, ub->meta_psize, &ck);
	if (!cksum_equal(&ck, &ub->meta_ck))
		goto out;
	uint64_t txg;
	if (meta_decode(os, buf, ub->meta_lsize, &txg) || txg != ub->txg)
		goto out;
	pool_mark_allocated(os->pool, ub->meta_vdev, ub->meta_offset, ub->meta_psize);
	rc = 0;
out:
	free(buf);
	return rc;
}

int txg_import(struct txg *t, struct objset *os, char *err, size_t errsz)
{
	memset(t, 0, sizeof(*t));
	t->os = os;
	struct uberblock ub[2];
	int ok[2] = { read_uberblock(os->pool, 0, &ub[0]), read_uberblock(os->pool, 1, &ub[1]) };
	if (!ok[0] && !ok[1])
		return 0; /* freshly created pool */
	int first = ok[0] && (!ok[1] || ub[0].txg > ub[1].txg) ? 0 : 1;
	for (int k = 0; k < 2; k++) {
		int s = k ? !first : first;
		if (!ok[s])
			continue;
		if (!load_meta(os, &ub[s])) {
			t->synced_txg = ub[s].txg;
			os->open_txg = ub[s].txg + 1;
			t->meta = (struct pool_extent){ ub[s].meta_vdev, ub[s].meta_offset, ub[s].meta_psize };
			return 0;
		}
		if (k == 0 && ok[!s])
			fprintf(stderr, "strata-engine: txg %llu metadata unreadable, using the previous txg\n",
				(unsigned long long)ub[s].txg);
		/* Start the fallback from a clean objset. */
		struct objset *fresh = objset_create(os->pool, os->arc);
		struct objset tmp = *os;
		*os = *fresh;
		*fresh = tmp;
		objset_destroy(fresh);
	}
	snprintf(err, errsz, "pool metadata is corrupt (no readable uberblock/metadata pair)");
	return -1;
}

/* Writes one object's dirty records to new blocks (caller holds txg_lock
 * exclusively, so nothing else changes them), then swaps the block pointers
 * under the object lock and moves the synced records into the ARC. */
struct sync_ctx {
	struct txg *t;
	uint64_t txg;
	int err;
};

struct dirty_rec { uint64_t blkid; uint8_t *buf; };
struct dirty_list { struct dirty_rec *v; uint64_t n, cap; };

static int collect_dirty(uint64_t blkid, struct blkrec *r, void *arg)
{
	struct dirty_list *l = arg;
	if (r->dirty && l->n < l->cap)
		l->v[l->n++] = (struct dirty_rec){ blkid, r->dirty };
	return 0;
}

static void sync_object(struct object *o, void *arg)
{
	struct sync_ctx *c = arg;
	struct objset *os = c->t->os;
	if (!o->ndirty || c->err)
		return;
	uint32_t rs = o->recordsize;
	struct dirty_list l = { xcalloc(o->ndirty, sizeof(*l.v)), 0, o->ndirty };
	pthread_rwlock_rdlock(&o->lock);
	blkmap_walk(&o->recs, 0, collect_dirty, &l);
	pthread_rwlock_unlock(&o->lock);
	for (uint64_t i = 0; i < l.n && !c->err; i++) {
		uint64_t b = l.v[i].blkid;
		uint8_t *buf = l.v[i].buf;
		struct blkptr nbp = { 0 };
		if (b * rs < o->size) {
			uint64_t left = o->size - b * rs;
			nbp.lsize = (uint32_t)(left < rs ? left : rs);
			nbp.psize = (nbp.lsize + POOL_BLOCK - 1) & ~(POOL_BLOCK - 1);
			memset(buf + nbp.lsize, 0, nbp.psize - nbp.lsize);
			fletcher4(buf, nbp.psize, &nbp.ck);
			nbp.birth = c->txg;
			int err = pool_alloc(os->pool, nbp.psize, &nbp.vdev, &nbp.offset);
			if (!err) {
				err = pool_write(os->pool, nbp.vdev, nbp.offset, buf, nbp.psize);
				if (err)
					pool_free_deferred(os->pool, nbp.vdev, nbp.offset, nbp.psize);
			}
			if (err) {
				c->err = err;
				break;
			}
			c->t->synced_bytes += nbp.psize;
		}
		pthread_rwlock_wrlock(&o->lock);
		struct blkrec *r = blkmap_find(&o->recs, b);
		struct blkptr *old = &r->bp;
		if (old->psize) {
			pool_free_deferred(os->pool, old->vdev, old->offset, old->psize);
			o->used -= old->psize;
		}
		*old = nbp;
		o->used += nbp.psize;
		r->dirty = NULL;
		o->ndirty--;
		__atomic_sub_fetch(&os->dirty_bytes, rs, __ATOMIC_RELAXED);
		if (nbp.psize) {
			arc_buf_t *ab = arc_insert(os->arc, (struct arc_key){ o->id, b }, buf, nbp.lsize);
			if (ab)
				arc_release(ab);
		}
		pthread_rwlock_unlock(&o->lock);
		free(buf);
	}
	free(l.v);
	pthread_rwlock_wrlock(&o->lock);
	blkmap_prune(&o->recs); /* records past the end came back empty */
	pthread_rwlock_unlock(&o->lock);
}

static int write_uberblock(struct pool *p, uint64_t txg, const struct pool_extent *meta,
			   uint64_t lsize, const struct cksum *meta_ck)
{
	uint8_t *buf = xaligned(POOL_BLOCK);
	memset(buf, 0, POOL_BLOCK);
	struct uberblock ub = { .magic = UB_MAGIC, .version = UB_VERSION, .meta_vdev = meta->vdev,
		.txg = txg, .guid = p->guid, .meta_offset = meta->offset, .meta_psize = meta->size,
		.meta_lsize = lsize, .meta_ck = *meta_ck };
	fletcher4(&ub, offsetof(struct uberblock, ck), &ub.ck);
	memcpy(buf, &ub, sizeof(ub));
	int err = pool_write(p, 0, POOL_UB_OFFSET(txg % 2), buf, POOL_BLOCK);
	if (!err)
		err = pool_flush(p);
	free(buf);
	return err;
}

int txg_sync(struct txg *t)
{
	struct objset *os = t->os;
	struct pool *p = os->pool;
	uint64_t t0 = clock_mono_ns();
	pthread_rwlock_wrlock(&os->txg_lock);
	uint64_t txg = os->open_txg;
	if (!__atomic_load_n(&os->changed, __ATOMIC_ACQUIRE)) {
		/* Nothing changed: the txg closes empty, without I/O. */
		os->open_txg++;
		pthread_rwlock_unlock(&os->txg_lock);
		return 0;
	}
	struct sync_ctx c = { t, txg, 0 };
	objset_foreach(os, sync_object, &c);
	if (c.err) {
		pthread_rwlock_unlock(&os->txg_lock);
		return c.err;
	}
	os->open_txg++;
	os->changed = 0;
	if (t->meta.size)
		pool_free_deferred(p, t->meta.vdev, t->meta.offset, t->meta.size);
	pool_deferred_cut(p);
	struct xdr_out o;
	xdr_out_init_grow(&o, 64 * 1024);
	meta_encode(os, txg, &o, NULL);
	pthread_rwlock_unlock(&os->txg_lock);

	uint64_t lsize = o.pos, psize = (lsize + POOL_BLOCK - 1) & ~(uint64_t)(POOL_BLOCK - 1);
	struct pool_extent meta = { 0, 0, psize };
	int err = pool_alloc(p, psize, &meta.vdev, &meta.offset);
	if (!err) {
		uint8_t *buf = xaligned(psize);
		memcpy(buf, o.buf, lsize);
		memset(buf + lsize, 0, psize - lsize);
		struct cksum ck;
		fletcher4(buf, psize, &ck);
		err = pool_write(p, meta.vdev, meta.offset, buf, (uint32_t)psize);
		if (!err)
			err = pool_flush(p);
		if (!err)
			err = write_uberblock(p, txg, &meta, lsize, &ck);
		free(buf);
		if (err)
			pool_free_deferred(p, meta.vdev, meta.offset, psize);
	}
	free(o.buf);
	if (err) {
		/* The next sync rewrites everything still marked changed. */
		__atomic_store_n(&os->changed, 1, __ATOMIC_RELEASE);
		return err;
	}
	pool_apply_deferred(p);
	t->meta = meta;
	t->syncs++;
	t->sync_ns += clock_mono_ns() - t0;
	return 0;
}

static void run_sync(struct txg *t)
{
	uint64_t target = __atomic_load_n(&t->os->open_txg, __ATOMIC_ACQUIRE);
	int err = txg_sync(t);
	pthread_mutex_lock(&t->lock);
	t->attempts++;
	if (err) {
		t->failures++;
		fprintf(stderr, "strata-engine: txg sync failed: %s\n", strerror(-err));
	} else if (target > t->synced_txg) {
		t->synced_txg = target;
	}
	pthread_cond_broadcast(&t->done_cv);
	pthread_mutex_unlock(&t->lock);
	if (!err && t->synced_fn)
		t->synced_fn(t->synced_ctx, target);
}

static void *sync_thread(void *arg)
{
	struct txg *t = arg;
	pthread_mutex_lock(&t->lock);
	while (!t->stop) {
		if (!t->kick) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			uint64_t ns = (uint64_t)ts.tv_nsec + (t->interval_ms % 1000) * 1000000ull;
			ts.tv_sec += (time_t)(t->interval_ms / 1000 + ns / 1000000000ull);
			ts.tv_nsec = (long)(ns % 1000000000ull);
			pthread_cond_timedwait(&t->kick_cv, &t->lock, &ts);
		}
		if (t->stop)
			break;
		t->kick = 0;
		pthread_mutex_unlock(&t->lock);
		run_sync(t);
		pthread_mutex_lock(&t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return NULL;
}

int txg_start(struct txg *t, uint64_t interval_ms, uint64_t dirty_max)
{
	t->interval_ms = interval_ms ? interval_ms : 5000;
	t->dirty_max = dirty_max;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->kick_cv, NULL);
	pthread_cond_init(&t->done_cv, NULL);
	if (pthread_create(&t->thread, NULL, sync_thread, t))
		return -1;
	t->running = 1;
	return 0;
}

int txg_stop(struct txg *t)
{
	if (t->running) {
		pthread_mutex_lock(&t->lock);
		t->stop = 1;
		pthread_cond_signal(&t->kick_cv);
		pthread_mutex_unlock(&t->lock);
		pthread_join(t->thread, NULL);
		t->running = 0;
	}
	uint64_t before = t->failures;
	run_sync(t);
	return t->failures == before ? 0 : -EIO;
}

int txg_wait_synced(struct txg *t, uint64_t txg)
{
	pthread_mutex_lock(&t->lock);
	uint64_t start = t->attempts, failures = t->failures;
	int err = 0;
	while (t->synced_txg < txg) {
		if (t->failures != failures && t->attempts > start) {
			err = -EIO;
			break;
		}
		t->kick = 1;
		pthread_cond_signal(&t->kick_cv);
		pthread_cond_wait(&t->done_cv, &t->lock);
	}
	pthread_mutex_unlock(&t->lock);
	return err;
}

void txg_throttle(struct txg *t)
{
	if (__atomic_load_n(&t->os->dirty_bytes, __ATOMIC_RELAXED) <= t->dirty_max)
		return;
	pthread_mutex_lock(&t->lock);
	uint64_t start = t->attempts;
	while (t->attempts == start && !t->stop &&
	       __atomic_load_n(&t->os->dirty_bytes, __ATOMIC_RELAXED) > t->dirty_max) {
		t->kick = 1;
		pthread_cond_signal(&t->kick_cv);
		pthread_cond_wait(&t->done_cv, &t->lock);
	}
	pthread_mutex_unlock(&t->lock);
}
