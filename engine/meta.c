/* meta.c — encoding and decoding of the metadata block (see meta.h). */
#include "meta.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

#define META_MAGIC 0x53544d44u /* "STMD" */
#define META_VERSION 1

static void put_bp(struct xdr_out *o, const struct blkptr *bp)
{
	xdr_put_u32(o, bp->vdev);
	xdr_put_u32(o, bp->psize);
	xdr_put_u64(o, bp->offset);
	xdr_put_u32(o, bp->lsize);
	xdr_put_u64(o, bp->birth);
	for (int i = 0; i < 4; i++)
		xdr_put_u64(o, bp->ck.w[i]);
}

static void get_bp(struct xdr_in *x, struct blkptr *bp)
{
	bp->vdev = xdr_get_u32(x);
	bp->psize = xdr_get_u32(x);
	bp->offset = xdr_get_u64(x);
	bp->lsize = xdr_get_u32(x);
	bp->birth = xdr_get_u64(x);
	for (int i = 0; i < 4; i++)
		bp->ck.w[i] = xdr_get_u64(x);
}

static int count_bp(uint64_t blkid, struct blkrec *r, void *ctx)
{
	*(uint64_t *)ctx += r->bp.psize != 0;
	return 0;
}

static int put_rec(uint64_t blkid, struct blkrec *r, void *ctx)
{
	if (r->bp.psize) {
		xdr_put_u64(ctx, blkid);
		put_bp(ctx, &r->bp);
	}
	return 0;
}

static void put_obj(struct object *ob, void *ctx)
{
	struct xdr_out *o = ctx;
	xdr_put_u64(o, ob->id);
	xdr_put_u64(o, ob->gen);
	xdr_put_u32(o, ob->dsid);
	xdr_put_u32(o, ob->type);
	xdr_put_u32(o, ob->mode);
	xdr_put_u32(o, ob->nlink);
	xdr_put_u32(o, ob->uid);
	xdr_put_u32(o, ob->gid);
	xdr_put_u64(o, ob->size);
	const struct nfs_time *t[3] = { &ob->atime, &ob->mtime, &ob->ctime };
	for (int i = 0; i < 3; i++) {
		xdr_put_u32(o, t[i]->sec);
		xdr_put_u32(o, t[i]->nsec);
	}
	xdr_put_u32(o, ob->recordsize);
	xdr_put_u64(o, ob->parent);
	xdr_put_fixed(o, ob->createverf, 8);
	uint64_t nbp = 0;
	blkmap_walk(&ob->recs, 0, count_bp, &nbp);
	xdr_put_u64(o, nbp);
	blkmap_walk(&ob->recs, 0, put_rec, o);
	xdr_put_u32(o, ob->nents);
	xdr_put_u64(o, ob->next_cookie);
	for (uint32_t i = 0; i < ob->nents; i++) {
		xdr_put_string(o, ob->ents[i].name);
		xdr_put_u64(o, ob->ents[i].objid);
		xdr_put_u64(o, ob->ents[i].cookie);
	}
	xdr_put_string(o, ob->target ? ob->target : "");
}

void meta_encode(struct objset *os, uint64_t txg, struct xdr_out *o, const struct pool_extent *skip)
{
	xdr_put_u32(o, META_MAGIC);
	xdr_put_u32(o, META_VERSION);
	xdr_put_u64(o, txg);
	xdr_put_u64(o, os->next_objid);
	xdr_put_u64(o, 0); /* reserved */
	xdr_put_u32(o, os->ndatasets);
	for (uint32_t i = 0; i < os->ndatasets; i++) {
		const struct dataset *ds = os->datasets[i];
		xdr_put_u32(o, ds->id);
		xdr_put_string(o, ds->name);
		xdr_put_u64(o, ds->root);
		xdr_put_u32(o, ds->recordsize);
	}
	xdr_put_u64(o, os->nobjects);
	objset_foreach(os, put_obj, o);
	pool_spacemap_encode(os->pool, o, skip);
}

static int valid_recordsize(uint32_t rs)
{
	return rs >= POOL_MIN_RECORD && rs <= POOL_MAX_RECORD && !(rs & (rs - 1));
}

static struct object *get_obj(struct xdr_in *x)
{
	struct object *ob = xcalloc(1, sizeof(*ob));
	ob->id = xdr_get_u64(x);
	ob->gen = xdr_get_u64(x);
	ob->dsid = xdr_get_u32(x);
	ob->type = xdr_get_u32(x);
	ob->mode = xdr_get_u32(x);
	ob->nlink = xdr_get_u32(x);
	ob->uid = xdr_get_u32(x);
	ob->gid = xdr_get_u32(x);
	ob->size = xdr_get_u64(x);
	struct nfs_time *t[3] = { &ob->atime, &ob->mtime, &ob->ctime };
	for (int i = 0; i < 3; i++) {
		t[i]->sec = xdr_get_u32(x);
		t[i]->nsec = xdr_get_u32(x);
	}
	ob->recordsize = xdr_get_u32(x);
	ob->parent = xdr_get_u64(x);
	const uint8_t *v = xdr_get_fixed(x, 8);
	if (v)
		memcpy(ob->createverf, v, 8);
	uint64_t nbp = xdr_get_u64(x);
	if (x->err || !valid_recordsize(ob->recordsize) || ob->size > OBJ_MAX_FILE_SIZE ||
	    nbp > xdr_remaining(x) / 64)
		goto bad;
	uint64_t nrec = (ob->size + ob->recordsize - 1) / ob->recordsize;
	if (nbp > nrec)
		goto bad;
	for (uint64_t i = 0; i < nbp; i++) {
		uint64_t b = xdr_get_u64(x);
		if (x->err || b >= nrec)
			goto bad;
		struct blkrec *r = blkmap_get(&ob->recs, b);
		get_bp(x, &r->bp);
		ob->used += r->bp.psize;
	}
	uint32_t nents = xdr_get_u32(x);
	ob->next_cookie = xdr_get_u64(x);
	if (x->err || nents > xdr_remaining(x) / 20)
		goto bad;
	ob->ents = xcalloc(nents, sizeof(*ob->ents));
	ob->capents = nents;
	char name[NAME_MAX_LEN + 1];
	for (uint32_t i = 0; i < nents; i++) {
		if (xdr_get_string(x, name, sizeof(name)))
			goto bad;
		ob->ents[i].name = xstrdup(name);
		ob->nents++;
		ob->ents[i].objid = xdr_get_u64(x);
		ob->ents[i].cookie = xdr_get_u64(x);
	}
	char target[4096];
	if (xdr_get_string(x, target, sizeof(target)))
		goto bad;
	if (ob->type == OBJ_LNK)
		ob->target = xstrdup(target);
	return ob;
bad:
	for (uint32_t i = 0; i < ob->nents; i++)
		free(ob->ents[i].name);
	free(ob->ents);
	blkmap_free(&ob->recs);
	free(ob);
	return NULL;
}

int meta_decode(struct objset *os, const uint8_t *buf, size_t len, uint64_t *txg)
{
	struct xdr_in x;
	xdr_in_init(&x, buf, len);
	if (xdr_get_u32(&x) != META_MAGIC || xdr_get_u32(&x) != META_VERSION)
		return -1;
	*txg = xdr_get_u64(&x);
	uint64_t next_objid = xdr_get_u64(&x);
	xdr_get_u64(&x); /* reserved */
	uint32_t nds = xdr_get_u32(&x);
	if (x.err || nds > 1024)
		return -1;
	os->datasets = xcalloc(nds, sizeof(*os->datasets));
	for (uint32_t i = 0; i < nds; i++) {
		struct dataset *ds = xcalloc(1, sizeof(*ds));
		os->datasets[os->ndatasets++] = ds;
		ds->id = xdr_get_u32(&x);
		if (xdr_get_string(&x, ds->name, sizeof(ds->name)))
			return -1;
		ds->root = xdr_get_u64(&x);
		ds->recordsize = xdr_get_u32(&x);
	}
	uint64_t nobj = xdr_get_u64(&x);
	if (x.err)
		return -1;
	for (uint64_t i = 0; i < nobj; i++) {
		struct object *ob = get_obj(&x);
		if (!ob)
			return -1;
		obj_insert_loaded(os, ob);
	}
	if (pool_spacemap_decode(os->pool, &x))
		return -1;
	if (next_objid > os->next_objid)
		os->next_objid = next_objid;
	return 0;
}
