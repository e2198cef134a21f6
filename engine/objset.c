/* objset.c — object table, datasets, and the record read/write paths
 * (dirty records first, then the ARC, then the L2ARC, then the pool; data
 * from the L2ARC and the pool is checked against the block pointer). */
#include "objset.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "l2arc.h"
#include "strata_probes.h"
#include "util.h"

static __thread uint8_t *scratch; /* per-thread record buffer for pool reads */

static uint8_t *scratch_buf(void)
{
	if (!scratch)
		scratch = xaligned(POOL_MAX_RECORD);
	return scratch;
}

/* A record changed or went away: drop its cached copies (ARC and L2ARC). */
static void cache_invalidate(struct objset *os, struct arc_key key)
{
	arc_invalidate(os->arc, key);
	if (os->l2arc)
		l2arc_invalidate(os->l2arc, key);
}

struct objset *objset_create(struct pool *pool, arc_t *arc)
{
	struct objset *os = xcalloc(1, sizeof(*os));
	os->pool = pool;
	os->arc = arc;
	os->table_size = 1024;
	os->table = xcalloc(os->table_size, sizeof(*os->table));
	os->next_objid = 1;
	os->open_txg = 1;
	pthread_rwlock_init(&os->table_lock, NULL);
	pthread_rwlock_init(&os->txg_lock, NULL);
	pthread_mutex_init(&os->ns_lock, NULL);
	return os;
}

static int free_dirty(uint64_t blkid, struct blkrec *r, void *ctx)
{
	free(r->dirty);
	r->dirty = NULL;
	return 0;
}

static void obj_free(struct object *o)
{
	blkmap_walk(&o->recs, 0, free_dirty, NULL);
	blkmap_free(&o->recs);
	for (uint32_t i = 0; i < o->nents; i++)
		free(o->ents[i].name);
	free(o->ents);
	free(o->target);
	pthread_rwlock_destroy(&o->lock);
	free(o);
}

void objset_destroy(struct objset *os)
{
	for (uint64_t i = 0; i < os->table_size; i++) {
		struct object *o = os->table[i];
		while (o) {
			struct object *n = o->hnext;
			obj_free(o);
			o = n;
		}
	}
	free(os->table);
	for (uint32_t i = 0; i < os->ndatasets; i++)
		free(os->datasets[i]);
	free(os->datasets);
	pthread_rwlock_destroy(&os->table_lock);
	pthread_rwlock_destroy(&os->txg_lock);
	pthread_mutex_destroy(&os->ns_lock);
	free(os);
}

static uint64_t slot(const struct objset *os, uint64_t id)
{
	return (id * 0x9e3779b97f4a7c15ull) >> 20 & (os->table_size - 1);
}

struct object *obj_get(struct objset *os, uint64_t id)
{
	pthread_rwlock_rdlock(&os->table_lock);
	struct object *o = os->table[slot(os, id)];
	while (o && o->id != id)
		o = o->hnext;
	if (o)
		__atomic_add_fetch(&o->refs, 1, __ATOMIC_ACQ_REL);
	pthread_rwlock_unlock(&os->table_lock);
	return o;
}

void obj_put(struct object *o)
{
	if (o && __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0)
		obj_free(o);
}

/* Caller holds table_lock exclusively. */
static void table_insert(struct objset *os, struct object *o)
{
	if (os->nobjects + 1 > os->table_size) {
		uint64_t old = os->table_size;
		struct object **ot = os->table;
		os->table_size *= 2;
		os->table = xcalloc(os->table_size, sizeof(*os->table));
		for (uint64_t i = 0; i < old; i++) {
			struct object *e = ot[i];
			while (e) {
				struct object *n = e->hnext;
				uint64_t s = slot(os, e->id);
				e->hnext = os->table[s];
				os->table[s] = e;
				e = n;
			}
		}
		free(ot);
	}
	uint64_t s = slot(os, o->id);
	o->hnext = os->table[s];
	os->table[s] = o;
	os->nobjects++;
	if (o->id >= os->next_objid)
		os->next_objid = o->id + 1;
}

void obj_insert_loaded(struct objset *os, struct object *o)
{
	pthread_rwlock_init(&o->lock, NULL);
	o->refs = 1;
	pthread_rwlock_wrlock(&os->table_lock);
	table_insert(os, o);
	pthread_rwlock_unlock(&os->table_lock);
}

static void new_generation(struct object *o, void *ctx)
{
	xrandom(&o->gen, sizeof(o->gen));
}

void objset_new_generations(struct objset *os)
{
	objset_foreach(os, new_generation, NULL);
	objset_mark_changed(os, NULL);
}

void obj_touch(struct object *o, int mtime, int ctime)
{
	struct nfs_time t;
	now_real(&t.sec, &t.nsec);
	if (mtime)
		o->mtime = t;
	if (ctime)
		o->ctime = t;
}

void objset_mark_changed(struct objset *os, struct object *o)
{
	uint64_t txg = __atomic_load_n(&os->open_txg, __ATOMIC_ACQUIRE);
	if (o)
		o->dirty_txg = txg;
	__atomic_store_n(&os->changed, 1, __ATOMIC_RELEASE);
}

struct object *obj_new(struct objset *os, uint32_t dsid, uint32_t type, uint32_t mode,
		       uint32_t uid, uint32_t gid, uint32_t recordsize)
{
	struct object *o = xcalloc(1, sizeof(*o));
	o->dsid = dsid;
	o->type = type;
	o->mode = mode & 07777;
	o->uid = uid;
	o->gid = gid;
	o->nlink = type == OBJ_DIR ? 2 : 1;
	o->recordsize = recordsize;
	o->next_cookie = 3; /* 1 and 2 are "." and ".." */
	obj_touch(o, 1, 1);
	o->atime = o->mtime;
	pthread_rwlock_init(&o->lock, NULL);
	o->refs = 2;
	xrandom(&o->gen, sizeof(o->gen));
	pthread_rwlock_wrlock(&os->table_lock);
	o->id = os->next_objid;
	table_insert(os, o);
	pthread_rwlock_unlock(&os->table_lock);
	objset_mark_changed(os, o);
	return o;
}

struct drop_ctx { struct objset *os; struct object *o; };

/* Frees a record (a blkmap_walk callback; caller holds o->lock write). */
static int drop_record(uint64_t blkid, struct blkrec *r, void *arg)
{
	struct drop_ctx *c = arg;
	if (r->dirty) {
		free(r->dirty);
		r->dirty = NULL;
		c->o->ndirty--;
		__atomic_sub_fetch(&c->os->dirty_bytes, c->o->recordsize, __ATOMIC_RELAXED);
	}
	struct blkptr *bp = &r->bp;
	if (bp->psize) {
		pool_free_deferred(c->os->pool, bp->vdev, bp->offset, bp->psize);
		c->o->used -= bp->psize;
		cache_invalidate(c->os, (struct arc_key){ c->o->id, blkid });
	}
	memset(bp, 0, sizeof(*bp));
	return 0;
}

/* Frees every record from number `first` on. */
static void drop_records(struct objset *os, struct object *o, uint64_t first)
{
	struct drop_ctx c = { os, o };
	blkmap_walk(&o->recs, first, drop_record, &c);
	blkmap_prune(&o->recs);
}

void obj_drop_link(struct objset *os, struct object *o)
{
	if (o->nlink)
		o->nlink--;
	if (o->type == OBJ_DIR && o->nlink == 1)
		o->nlink = 0; /* a removed directory has only its own "." left */
	obj_touch(o, 0, 1);
	objset_mark_changed(os, o);
	if (o->nlink)
		return;
	drop_records(os, o, 0);
	pthread_rwlock_wrlock(&os->table_lock);
	struct object **pp = &os->table[slot(os, o->id)];
	while (*pp && *pp != o)
		pp = &(*pp)->hnext;
	if (*pp) {
		*pp = o->hnext;
		os->nobjects--;
		o->removed = 1;
	}
	pthread_rwlock_unlock(&os->table_lock);
	if (o->removed)
		obj_put(o); /* the table's reference; the caller still holds one */
}

struct dataset *objset_dataset_by_id(struct objset *os, uint32_t id)
{
	for (uint32_t i = 0; i < os->ndatasets; i++)
		if (os->datasets[i]->id == id)
			return os->datasets[i];
	return NULL;
}

/* Sets a root directory's mode (caller holds txg_lock shared or excludes the sync). */
static void set_root_mode(struct objset *os, uint64_t root, uint32_t mode)
{
	struct object *o = obj_get(os, root);
	if (!o)
		return;
	pthread_rwlock_wrlock(&o->lock);
	if (o->mode != mode) {
		o->mode = mode;
		obj_touch(o, 0, 1);
		objset_mark_changed(os, o);
	}
	pthread_rwlock_unlock(&o->lock);
	obj_put(o);
}

struct dataset *objset_dataset(struct objset *os, const char *name, uint32_t recordsize,
			       int root_mode, int create)
{
	struct dataset *ds = NULL;
	for (uint32_t i = 0; i < os->ndatasets && !ds; i++)
		if (!strcmp(os->datasets[i]->name, name))
			ds = os->datasets[i];
	if (ds) {
		if (recordsize && ds->recordsize != recordsize) {
			ds->recordsize = recordsize;
			objset_mark_changed(os, NULL);
		}
	} else {
		if (!create || strlen(name) >= DATASET_NAME_MAX)
			return NULL;
		ds = xcalloc(1, sizeof(*ds));
		ds->id = os->ndatasets ? os->datasets[os->ndatasets - 1]->id + 1 : 1;
		strcpy(ds->name, name);
		ds->recordsize = recordsize ? recordsize : os->pool->recordsize;
		os->datasets = xrealloc(os->datasets, (os->ndatasets + 1) * sizeof(*os->datasets));
		os->datasets[os->ndatasets++] = ds;
		struct object *root = obj_new(os, ds->id, OBJ_DIR, DATASET_ROOT_MODE, 0, 0, ds->recordsize);
		root->parent = root->id;
		ds->root = root->id;
		obj_put(root);
	}
	if (root_mode >= 0)
		set_root_mode(os, ds->root, (uint32_t)root_mode & 07777);
	return ds;
}

/* An ARC miss tries the L2ARC: true with the record in buf (zero-padded to
 * psize) when the copy there matches the block pointer's checksum.  A copy
 * that does not (rebuilt after a restart but older than the pool's record)
 * is dropped; the caller reads the pool. */
static bool l2arc_fetch(struct objset *os, struct arc_key key, const struct blkptr *bp, uint8_t *buf)
{
	if (!os->l2arc)
		return false;
	int n = l2arc_read(os->l2arc, key, buf, POOL_MAX_RECORD);
	if (n <= 0)
		return false;
	if ((uint32_t)n == bp->lsize) {
		struct cksum ck;
		memset(buf + n, 0, bp->psize - (uint32_t)n);
		fletcher4(buf, bp->psize, &ck);
		if (cksum_equal(&ck, &bp->ck))
			return true;
	}
	l2arc_invalidate(os->l2arc, key);
	return false;
}

/* Finds record contents: *data (NULL = hole, all zeros) valid for *len bytes,
 * zeros beyond.  *held is an ARC buffer to release after use. */
static int rec_fetch(struct objset *os, struct object *o, uint64_t blkid, const uint8_t **data,
		     uint32_t *len, arc_buf_t **held, struct io_acct *acct)
{
	*held = NULL;
	*data = NULL;
	*len = 0;
	const struct blkrec *r = blkmap_find(&o->recs, blkid);
	if (!r)
		return 0;
	if (r->dirty) {
		*data = r->dirty;
		*len = o->recordsize;
		acct->tiers |= STRATA_TIER_DIRTY;
		return 0;
	}
	const struct blkptr *bp = &r->bp;
	if (!bp->psize)
		return 0;
	struct arc_key key = { o->id, blkid };
	arc_buf_t *b = arc_lookup(os->arc, key);
	if (b) {
		acct->arc_hits++;
		acct->tiers |= STRATA_TIER_ARC;
	} else if (acct->nowait) {
		return -EWOULDBLOCK; /* evicted since obj_read looked */
	} else {
		acct->arc_misses++;
		uint8_t *buf = scratch_buf();
		if (l2arc_fetch(os, key, bp, buf)) {
			acct->l2arc_hits++;
			acct->tiers |= STRATA_TIER_L2ARC;
		} else {
			acct->tiers |= STRATA_TIER_POOL;
			int err = pool_read(os->pool, bp->vdev, bp->offset, buf, bp->psize);
			if (err)
				return err;
			struct cksum ck;
			fletcher4(buf, bp->psize, &ck);
			if (!cksum_equal(&ck, &bp->ck))
				return -EIO;
		}
		b = arc_insert(os->arc, key, buf, bp->lsize);
		if (!b) {
			*data = buf;
			*len = bp->lsize;
			return 0;
		}
	}
	*held = b;
	*data = arc_buf_data(b);
	*len = arc_buf_size(b);
	return 0;
}

/* Whether records first..last are all in memory (dirty, holes or in the ARC),
 * so that reading them waits for no device; nothing is counted. */
static bool recs_cached(struct objset *os, struct object *o, uint64_t first, uint64_t last)
{
	for (uint64_t blkid = first; blkid <= last; blkid++) {
		const struct blkrec *r = blkmap_find(&o->recs, blkid);
		if (r && !r->dirty && r->bp.psize && !arc_cached(os->arc, (struct arc_key){ o->id, blkid }))
			return false;
	}
	return true;
}

int obj_read(struct objset *os, struct object *o, uint64_t off, uint32_t count,
	     uint8_t *dst, uint32_t *got, int *eof, struct io_acct *acct)
{
	*got = 0;
	*eof = 0;
	if (off >= o->size) {
		*eof = 1;
		return 0;
	}
	uint64_t end = off + count < o->size ? off + count : o->size;
	uint32_t rs = o->recordsize;
	if (acct->nowait && end > off && !recs_cached(os, o, off / rs, (end - 1) / rs))
		return -EWOULDBLOCK;
	for (uint64_t pos = off; pos < end;) {
		uint64_t blkid = pos / rs;
		uint32_t inrec = (uint32_t)(pos % rs);
		uint32_t n = (uint32_t)(end - pos < rs - inrec ? end - pos : rs - inrec);
		const uint8_t *data;
		uint32_t len;
		arc_buf_t *held;
		int err = rec_fetch(os, o, blkid, &data, &len, &held, acct);
		if (err)
			return err;
		uint32_t avail = len > inrec ? len - inrec : 0;
		if (avail > n)
			avail = n;
		if (avail)
			memcpy(dst + (pos - off), data + inrec, avail);
		if (avail < n)
			memset(dst + (pos - off) + avail, 0, n - avail);
		if (held)
			arc_release(held);
		pos += n;
	}
	*got = (uint32_t)(end - off);
	*eof = end == o->size;
	return 0;
}

/* Makes record blkid dirty, filled with its current contents unless the
 * caller overwrites it whole; *out is its dirty buffer. */
static int make_dirty(struct objset *os, struct object *o, uint64_t blkid, int whole,
		      uint8_t **out, struct io_acct *acct)
{
	const struct blkrec *cur = blkmap_find(&o->recs, blkid);
	if (cur && cur->dirty) {
		*out = cur->dirty;
		return 0;
	}
	uint32_t rs = o->recordsize;
	uint8_t *buf = xaligned(rs);
	if (!whole) {
		const uint8_t *data;
		uint32_t len;
		arc_buf_t *held;
		int err = rec_fetch(os, o, blkid, &data, &len, &held, acct);
		if (err) {
			free(buf);
			return err;
		}
		if (len > rs)
			len = rs;
		if (len)
			memcpy(buf, data, len);
		memset(buf + len, 0, rs - len);
		if (held)
			arc_release(held);
	}
	cache_invalidate(os, (struct arc_key){ o->id, blkid });
	blkmap_get(&o->recs, blkid)->dirty = buf;
	*out = buf;
	o->ndirty++;
	__atomic_add_fetch(&os->dirty_bytes, rs, __ATOMIC_RELAXED);
	return 0;
}

int obj_write(struct objset *os, struct object *o, uint64_t off, uint32_t count,
	      const uint8_t *src, struct io_acct *acct)
{
	if (off > OBJ_MAX_FILE_SIZE || count > OBJ_MAX_FILE_SIZE - off)
		return -EFBIG;
	uint32_t rs = o->recordsize;
	uint64_t end = off + count;
	for (uint64_t pos = off; pos < end;) {
		uint64_t blkid = pos / rs;
		uint32_t inrec = (uint32_t)(pos % rs);
		uint32_t n = (uint32_t)(end - pos < rs - inrec ? end - pos : rs - inrec);
		int whole = inrec == 0 && (n == rs || pos + n >= o->size);
		uint8_t *buf;
		int err = make_dirty(os, o, blkid, whole, &buf, acct);
		if (err)
			return err;
		if (whole)
			memset(buf + n, 0, rs - n);
		memcpy(buf + inrec, src + (pos - off), n);
		pos += n;
	}
	acct->tiers |= STRATA_TIER_DIRTY;
	if (end > o->size)
		o->size = end;
	obj_touch(o, 1, 1);
	objset_mark_changed(os, o);
	return 0;
}

int obj_truncate(struct objset *os, struct object *o, uint64_t size)
{
	if (size > OBJ_MAX_FILE_SIZE)
		return -EFBIG;
	uint32_t rs = o->recordsize;
	if (size < o->size) {
		uint64_t keep = (size + rs - 1) / rs;
		drop_records(os, o, keep);
		const struct blkrec *last = size % rs ? blkmap_find(&o->recs, keep - 1) : NULL;
		if (last && (last->dirty || last->bp.psize)) {
			struct io_acct acct = { 0 };
			uint8_t *buf;
			int err = make_dirty(os, o, keep - 1, 0, &buf, &acct);
			if (err)
				return err;
			memset(buf + size % rs, 0, rs - size % rs);
		}
	}
	o->size = size;
	obj_touch(o, 1, 1);
	objset_mark_changed(os, o);
	return 0;
}

uint64_t obj_used_bytes(const struct object *o)
{
	return o->used + o->ndirty * o->recordsize;
}

void objset_foreach(struct objset *os, void (*fn)(struct object *o, void *ctx), void *ctx)
{
	pthread_rwlock_rdlock(&os->table_lock);
	for (uint64_t i = 0; i < os->table_size; i++)
		for (struct object *o = os->table[i]; o; o = o->hnext)
			fn(o, ctx);
	pthread_rwlock_unlock(&os->table_lock);
}
