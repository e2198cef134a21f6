/* nfs3.c — the 22 NFSv3 procedures (RFC 1813 section 3.3).  Each decodes its
 * arguments with the bounds-checked decoder, resolves file handles to held
 * objects, runs under the object-store locks (objset.h) and encodes the
 * result.  Metadata changes return only once their txg is on disk;
 * FILE_SYNC/DATA_SYNC writes and COMMIT once the intent log holds them
 * (tiers.h); UNSTABLE writes wait for COMMIT or the periodic sync. */
#include "nfs3.h"

#include <errno.h>
#include <string.h>

#include "devmodel.h"
#include "dir.h"
#include "engine.h"
#include "fh.h"
#include "nfs3_attr.h"
#include "strata_probes.h"
#include "tiers.h"
#include "util.h"

#define GARBAGE (-1)
#define RTMAX (1024u * 1024u)
#define WTMAX (1024u * 1024u)

enum { UNSTABLE = 0, DATA_SYNC = 1, FILE_SYNC = 2 };
enum { ACC_READ = 1, ACC_LOOKUP = 2, ACC_MODIFY = 4, ACC_EXTEND = 8, ACC_DELETE = 16, ACC_EXECUTE = 32 };

struct target { /* a resolved handle argument */
	struct fh fh;
	uint32_t len;
	struct export *exp;
	struct object *obj;
	struct rpc_cred cred;
};

static uint32_t resolve(struct rpc_req *r, struct target *t)
{
	return fh_resolve(r, &t->fh, t->len, &t->exp, &t->obj, &t->cred);
}

static void release(struct target *t)
{
	obj_put(t->obj);
	t->obj = NULL;
}

/* filename3: 0 ok, NFS3ERR_NAMETOOLONG, or GARBAGE. */
static int get_name(struct xdr_in *x, char *name)
{
	uint32_t n;
	const uint8_t *p = xdr_get_opaque(x, 8192, &n);
	if (!p)
		return GARBAGE;
	if (n > NAME_MAX_LEN)
		return NFS3ERR_NAMETOOLONG;
	memcpy(name, p, n);
	name[n] = 0;
	if (memchr(p, 0, n))
		return NFS3ERR_INVAL;
	return 0;
}

static void put_status(struct rpc_req *r, struct xdr_out *o, uint32_t st)
{
	r->status = st;
	xdr_put_u32(o, st);
}

static void put_obj_fh(struct xdr_out *o, const struct object *obj)
{
	struct fh fh;
	fh_make(&fh, obj->dsid, obj->id, obj->gen);
	fh_put(o, &fh);
}

/* Waits until the txg holding a change is on disk (metadata ops, sync writes). */
static uint32_t make_stable(uint64_t txg)
{
	return txg_wait_synced(&g_engine.txg, txg) ? NFS3ERR_IO : NFS3_OK;
}

static int proc_null(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	return RPC_SUCCESS;
}

/* Decodes a handle argument into t (resolve() looks it up). */
static int one_handle(struct rpc_req *r, struct xdr_in *x, struct target *t)
{
	memset(t, 0, sizeof(*t));
	fh_get(x, &t->fh, &t->len);
	return x->err ? GARBAGE : 0;
}

/* Resolves t for a procedure whose reply on failure is "status, post_op_attr":
 * on failure writes that reply and returns the status. */
static uint32_t resolve_or_fail(struct rpc_req *r, struct xdr_out *o, struct target *t)
{
	uint32_t st = resolve(r, t);
	if (st) {
		put_status(r, o, st);
		put_post_op_attr(o, NULL);
	}
	return st;
}

/* Takes the object's lock shared; a request that may not wait (r->acct.nowait)
 * takes it only if it is free: -1 then, nothing taken. */
static int rdlock_obj(struct rpc_req *r, struct object *obj)
{
	if (!r->acct.nowait) {
		pthread_rwlock_rdlock(&obj->lock);
		return 0;
	}
	return pthread_rwlock_tryrdlock(&obj->lock) ? -1 : 0;
}

static int proc_getattr(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target t;
	if (one_handle(r, x, &t))
		return GARBAGE;
	uint32_t st = resolve(r, &t);
	put_status(r, o, st);
	if (st)
		return RPC_SUCCESS;
	struct attrs a;
	if (rdlock_obj(r, t.obj)) {
		release(&t);
		return NFS3_WOULD_BLOCK;
	}
	attrs_snap(t.obj, &a);
	pthread_rwlock_unlock(&t.obj->lock);
	put_fattr(o, &a);
	release(&t);
	return RPC_SUCCESS;
}

static int proc_setattr(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target t;
	struct sattr s;
	if (one_handle(r, x, &t))
		return GARBAGE;
	get_sattr(x, &s);
	int guard = xdr_get_bool(x);
	struct nfs_time gtime = { 0, 0 };
	if (guard) {
		gtime.sec = xdr_get_u32(x);
		gtime.nsec = xdr_get_u32(x);
	}
	if (x->err)
		return GARBAGE;
	uint32_t st = resolve(r, &t);
	if (st) {
		put_status(r, o, st);
		put_wcc(o, NULL, NULL);
		return RPC_SUCCESS;
	}
	struct objset *os = g_engine.os;
	struct wcc_pre pre;
	uint64_t txg = 0;
	pthread_rwlock_rdlock(&os->txg_lock);
	pthread_rwlock_wrlock(&t.obj->lock);
	wcc_pre_snap(t.obj, &pre);
	if (t.exp->read_only)
		st = NFS3ERR_ROFS;
	else if (guard && (gtime.sec != t.obj->ctime.sec || gtime.nsec != t.obj->ctime.nsec))
		st = NFS3ERR_NOT_SYNC;
	else
		st = sattr_apply(os, t.obj, &s, &t.cred);
	txg = t.obj->dirty_txg;
	pthread_rwlock_unlock(&t.obj->lock);
	pthread_rwlock_unlock(&os->txg_lock);
	if (!st)
		st = make_stable(txg);
	struct attrs a;
	attrs_snap_locked(t.obj, &a);
	put_status(r, o, st);
	put_wcc(o, &pre, &a);
	release(&t);
	return RPC_SUCCESS;
}

/* Looks `name` up in dir (caller holds dir->lock); returns a held object. */
static uint32_t lookup_locked(struct target *d, const char *name, struct object **out)
{
	struct object *dir = d->obj;
	uint64_t id;
	*out = NULL;
	if (dir->type != OBJ_DIR)
		return NFS3ERR_NOTDIR;
	if (!perm_ok(dir, &d->cred, 1))
		return NFS3ERR_ACCES;
	if (!strcmp(name, "."))
		id = dir->id;
	else if (!strcmp(name, ".."))
		id = dir->id == d->exp->ds->root ? dir->id : dir->parent; /* never above the export */
	else
		id = dir_lookup(dir, name);
	if (!id)
		return NFS3ERR_NOENT;
	*out = obj_get(g_engine.os, id);
	return *out ? NFS3_OK : NFS3ERR_NOENT;
}

static int proc_lookup(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target d;
	char name[NAME_MAX_LEN + 1];
	if (one_handle(r, x, &d))
		return GARBAGE;
	int nst = get_name(x, name);
	if (nst == GARBAGE || x->err)
		return GARBAGE;
	if (resolve_or_fail(r, o, &d))
		return RPC_SUCCESS;
	struct object *child = NULL;
	struct attrs da, ca;
	pthread_rwlock_rdlock(&d.obj->lock);
	uint32_t st = nst ? (uint32_t)nst : lookup_locked(&d, name, &child);
	attrs_snap(d.obj, &da);
	pthread_rwlock_unlock(&d.obj->lock);
	put_status(r, o, st);
	if (st) {
		put_post_op_attr(o, &da);
	} else {
		attrs_snap_locked(child, &ca);
		put_obj_fh(o, child);
		put_post_op_attr(o, &ca);
		put_post_op_attr(o, &da);
		obj_put(child);
	}
	release(&d);
	return RPC_SUCCESS;
}

static int proc_access(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target t;
	if (one_handle(r, x, &t))
		return GARBAGE;
	uint32_t want = xdr_get_u32(x);
	if (x->err)
		return GARBAGE;
	if (resolve_or_fail(r, o, &t))
		return RPC_SUCCESS;
	struct attrs a;
	uint32_t got = 0;
	if (rdlock_obj(r, t.obj)) {
		release(&t);
		return NFS3_WOULD_BLOCK;
	}
	put_status(r, o, NFS3_OK);
	attrs_snap(t.obj, &a);
	int rd = perm_ok(t.obj, &t.cred, 4), wr = perm_ok(t.obj, &t.cred, 2) && !t.exp->read_only;
	int ex = perm_ok(t.obj, &t.cred, 1);
	if (t.cred.uid == 0 && t.obj->type == OBJ_REG && !(t.obj->mode & 0111))
		ex = 0;
	pthread_rwlock_unlock(&t.obj->lock);
	if (rd)
		got |= ACC_READ;
	if (wr)
		got |= ACC_MODIFY | ACC_EXTEND | (a.type == OBJ_DIR ? ACC_DELETE : 0);
	if (ex)
		got |= a.type == OBJ_DIR ? ACC_LOOKUP : ACC_EXECUTE;
	put_post_op_attr(o, &a);
	xdr_put_u32(o, got & want);
	release(&t);
	return RPC_SUCCESS;
}

static int proc_readlink(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target t;
	if (one_handle(r, x, &t))
		return GARBAGE;
	if (resolve_or_fail(r, o, &t))
		return RPC_SUCCESS;
	struct attrs a;
	pthread_rwlock_rdlock(&t.obj->lock);
	attrs_snap(t.obj, &a);
	uint32_t st = t.obj->type == OBJ_LNK ? NFS3_OK : NFS3ERR_INVAL;
	put_status(r, o, st);
	put_post_op_attr(o, &a);
	if (!st)
		xdr_put_string(o, t.obj->target);
	pthread_rwlock_unlock(&t.obj->lock);
	release(&t);
	return RPC_SUCCESS;
}

static int proc_read(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target t;
	if (one_handle(r, x, &t))
		return GARBAGE;
	uint64_t off = xdr_get_u64(x);
	uint32_t count = xdr_get_u32(x);
	if (x->err)
		return GARBAGE;
	if (r->acct.nowait && count > NFS3_NOWAIT_READ_MAX)
		return NFS3_WOULD_BLOCK;
	if (resolve_or_fail(r, o, &t))
		return RPC_SUCCESS;
	if (count > RTMAX)
		count = RTMAX;
	/* status + post_op_attr(fattr3) + count + eof + data length */
	const size_t hdr = 4 + 4 + 84 + 4 + 4 + 4;
	uint8_t *data = xdr_reserve(o, hdr + count);
	if (!data) {
		release(&t);
		return RPC_SYSTEM_ERR;
	}
	o->pos -= (hdr + count + 3) & ~(size_t)3;
	struct attrs a;
	uint32_t st, got = 0;
	int eof = 0, err = 0;
	if (rdlock_obj(r, t.obj)) {
		release(&t);
		return NFS3_WOULD_BLOCK;
	}
	attrs_snap(t.obj, &a);
	if (t.obj->type == OBJ_DIR)
		st = NFS3ERR_ISDIR;
	else if (t.obj->type != OBJ_REG)
		st = NFS3ERR_INVAL;
	else if (t.cred.uid != t.obj->uid && !perm_ok(t.obj, &t.cred, 4))
		st = NFS3ERR_ACCES;
	else
		st = errno_to_nfs(err = obj_read(g_engine.os, t.obj, off, count, data + hdr, &got, &eof, &r->acct));
	pthread_rwlock_unlock(&t.obj->lock);
	if (err == -EWOULDBLOCK) {
		release(&t);
		return NFS3_WOULD_BLOCK;
	}
	put_status(r, o, st);
	put_post_op_attr(o, &a);
	if (!st) {
		xdr_put_u32(o, got);
		xdr_put_u32(o, eof);
		xdr_put_u32(o, got);
		xdr_reserve(o, got); /* the data is already in place; this pads it */
		r->bytes = got;
		CTR_ADD(read_bytes, got);
	}
	release(&t);
	return RPC_SUCCESS;
}

static int proc_write(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target t;
	if (one_handle(r, x, &t))
		return GARBAGE;
	uint64_t off = xdr_get_u64(x);
	uint32_t count = xdr_get_u32(x);
	uint32_t stable = xdr_get_u32(x), len;
	const uint8_t *data = xdr_get_opaque(x, WTMAX, &len);
	if (x->err || stable > FILE_SYNC)
		return GARBAGE;
	uint32_t st = resolve(r, &t);
	if (st) {
		put_status(r, o, st);
		put_wcc(o, NULL, NULL);
		return RPC_SUCCESS;
	}
	struct objset *os = g_engine.os;
	struct wcc_pre pre;
	uint64_t txg = 0;
	if (count > len)
		st = NFS3ERR_INVAL;
	txg_throttle(&g_engine.txg);
	pthread_rwlock_rdlock(&os->txg_lock);
	pthread_rwlock_wrlock(&t.obj->lock);
	wcc_pre_snap(t.obj, &pre);
	if (st)
		;
	else if (t.exp->read_only)
		st = NFS3ERR_ROFS;
	else if (t.obj->type == OBJ_DIR)
		st = NFS3ERR_ISDIR;
	else if (t.obj->type != OBJ_REG)
		st = NFS3ERR_INVAL;
	else if (t.cred.uid != t.obj->uid && !perm_ok(t.obj, &t.cred, 2))
		st = NFS3ERR_ACCES;
	else if (count && pool_free_bytes(os->pool) <
		 __atomic_load_n(&os->dirty_bytes, __ATOMIC_RELAXED) + count + (16u << 20))
		st = NFS3ERR_NOSPC;
	else if (count)
		st = errno_to_nfs(obj_write(os, t.obj, off, count, data, &r->acct));
	txg = t.obj->dirty_txg;
	bool logged = !st && stable != UNSTABLE && count &&
		      tiers_log_write(t.obj->id, off, count, data, txg, &r->acct);
	pthread_rwlock_unlock(&t.obj->lock);
	pthread_rwlock_unlock(&os->txg_lock);
	if (!st && stable != UNSTABLE && count && !logged) {
		st = make_stable(txg);
		r->acct.tiers |= STRATA_TIER_POOL;
	}
	struct attrs a;
	attrs_snap_locked(t.obj, &a);
	put_status(r, o, st);
	put_wcc(o, &pre, &a);
	if (!st) {
		xdr_put_u32(o, count);
		xdr_put_u32(o, stable == UNSTABLE ? UNSTABLE : FILE_SYNC);
		xdr_put_fixed(o, g_engine.write_verf, 8);
		r->bytes = count;
		CTR_ADD(write_bytes, count);
	}
	release(&t);
	return RPC_SUCCESS;
}

/* Shared tail of CREATE, MKDIR, SYMLINK: a new object named `name` in dir. */
struct create_args {
	uint32_t type;
	int mode; /* createmode3 for CREATE, else UNCHECKED-like GUARDED */
	struct sattr sattr;
	uint8_t verf[8];
	const char *target;
};

enum { CREATE_UNCHECKED = 0, CREATE_GUARDED = 1, CREATE_EXCLUSIVE = 2 };

static int do_create(struct rpc_req *r, struct target *d, const char *name, uint32_t nst,
		     struct create_args *ca, struct xdr_out *o)
{
	struct objset *os = g_engine.os;
	uint32_t st = nst ? nst : resolve(r, d);
	if (st) {
		put_status(r, o, st);
		put_wcc(o, NULL, NULL);
		release(d);
		return RPC_SUCCESS;
	}
	struct wcc_pre pre = { 0 };
	struct object *obj = NULL, *dir = d->obj;
	uint64_t txg = 0;
	pthread_rwlock_rdlock(&os->txg_lock);
	pthread_mutex_lock(&os->ns_lock);
	pthread_rwlock_wrlock(&dir->lock);
	wcc_pre_snap(dir, &pre);
	uint64_t existing = dir->type == OBJ_DIR ? dir_lookup(dir, name) : 0;
	if (d->exp->read_only)
		st = NFS3ERR_ROFS;
	else if (dir->type != OBJ_DIR)
		st = NFS3ERR_NOTDIR;
	else if (!dir_name_ok(name))
		st = !strcmp(name, ".") || !strcmp(name, "..") ? NFS3ERR_EXIST : NFS3ERR_INVAL;
	else if (!perm_ok(dir, &d->cred, 3))
		st = NFS3ERR_ACCES;
	else if (existing) {
		obj = obj_get(os, existing);
		if (!obj)
			st = NFS3ERR_IO;
		else if (ca->type != OBJ_REG || ca->mode == CREATE_GUARDED)
			st = NFS3ERR_EXIST;
		else if (ca->mode == CREATE_EXCLUSIVE)
			st = memcmp(obj->createverf, ca->verf, 8) ? NFS3ERR_EXIST : NFS3_OK;
		else if (obj->type != OBJ_REG)
			st = NFS3ERR_EXIST;
		else {
			pthread_rwlock_wrlock(&obj->lock);
			struct sattr s = ca->sattr;
			s.set_mode = s.set_uid = s.set_gid = 0; /* UNCHECKED on an existing file: size only */
			st = s.set_size ? sattr_apply(os, obj, &s, &d->cred) : NFS3_OK;
			txg = obj->dirty_txg;
			pthread_rwlock_unlock(&obj->lock);
		}
	} else {
		uint32_t mode = ca->sattr.set_mode ? ca->sattr.mode
			: ca->type == OBJ_DIR ? 0755 : ca->type == OBJ_LNK ? 0777 : 0644;
		uint32_t gid = dir->mode & 02000 ? dir->gid : d->cred.gid;
		obj = obj_new(os, dir->dsid, ca->type, mode, d->cred.uid, gid,
			      d->exp->recordsize ? d->exp->recordsize : d->exp->ds->recordsize);
		pthread_rwlock_wrlock(&obj->lock);
		if (ca->type == OBJ_DIR) {
			obj->parent = dir->id;
			dir->nlink++;
		}
		if (ca->type == OBJ_LNK)
			obj->target = xstrdup(ca->target);
		if (ca->mode == CREATE_EXCLUSIVE)
			memcpy(obj->createverf, ca->verf, 8);
		struct sattr s = ca->sattr;
		s.set_mode = 0;
		st = ca->mode == CREATE_EXCLUSIVE ? NFS3_OK : sattr_apply(os, obj, &s, &d->cred);
		if (st) /* e.g. a chown the caller may not do: create plainly */
			st = NFS3_OK;
		txg = obj->dirty_txg;
		pthread_rwlock_unlock(&obj->lock);
		dir_add(dir, name, obj->id);
		obj_touch(dir, 1, 1);
		objset_mark_changed(os, dir);
	}
	pthread_rwlock_unlock(&dir->lock);
	pthread_mutex_unlock(&os->ns_lock);
	pthread_rwlock_unlock(&os->txg_lock);
	if (!st)
		st = make_stable(txg > dir->dirty_txg ? txg : dir->dirty_txg);
	struct attrs da, oa;
	attrs_snap_locked(dir, &da);
	put_status(r, o, st);
	if (!st) {
		attrs_snap_locked(obj, &oa);
		r->file_id = obj->id;
		xdr_put_u32(o, 1);
		put_obj_fh(o, obj);
		put_post_op_attr(o, &oa);
	}
	put_wcc(o, &pre, &da);
	obj_put(obj);
	release(d);
	return RPC_SUCCESS;
}

static int proc_create(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target d;
	char name[NAME_MAX_LEN + 1];
	struct create_args ca = { .type = OBJ_REG };
	if (one_handle(r, x, &d))
		return GARBAGE;
	int nst = get_name(x, name);
	ca.mode = (int)xdr_get_u32(x);
	if (ca.mode == CREATE_EXCLUSIVE) {
		const uint8_t *v = xdr_get_fixed(x, 8);
		if (v)
			memcpy(ca.verf, v, 8);
	} else if (ca.mode == CREATE_UNCHECKED || ca.mode == CREATE_GUARDED) {
		get_sattr(x, &ca.sattr);
	} else {
		x->err = 1;
	}
	if (nst == GARBAGE || x->err)
		return GARBAGE;
	return do_create(r, &d, name, (uint32_t)nst, &ca, o);
}

static int proc_mkdir(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target d;
	char name[NAME_MAX_LEN + 1];
	struct create_args ca = { .type = OBJ_DIR, .mode = CREATE_GUARDED };
	if (one_handle(r, x, &d))
		return GARBAGE;
	int nst = get_name(x, name);
	get_sattr(x, &ca.sattr);
	if (nst == GARBAGE || x->err)
		return GARBAGE;
	return do_create(r, &d, name, (uint32_t)nst, &ca, o);
}

static int proc_symlink(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target d;
	char name[NAME_MAX_LEN + 1], target[4096];
	struct create_args ca = { .type = OBJ_LNK, .mode = CREATE_GUARDED, .target = target };
	if (one_handle(r, x, &d))
		return GARBAGE;
	int nst = get_name(x, name);
	get_sattr(x, &ca.sattr);
	uint32_t tlen;
	const uint8_t *p = xdr_get_opaque(x, 65536, &tlen);
	if (nst == GARBAGE || x->err)
		return GARBAGE;
	if (!nst && (tlen >= sizeof(target) || memchr(p, 0, tlen)))
		nst = tlen >= sizeof(target) ? NFS3ERR_NAMETOOLONG : NFS3ERR_INVAL;
	if (!nst) {
		memcpy(target, p, tlen);
		target[tlen] = 0;
	}
	return do_create(r, &d, name, (uint32_t)nst, &ca, o);
}

static int proc_mknod(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target d;
	char name[NAME_MAX_LEN + 1];
	if (one_handle(r, x, &d))
		return GARBAGE;
	int nst = get_name(x, name);
	uint32_t type = xdr_get_u32(x);
	struct sattr s;
	if (type == 3 || type == 4) { /* NF3CHR, NF3BLK: sattr + specdata */
		get_sattr(x, &s);
		xdr_get_u32(x);
		xdr_get_u32(x);
	} else if (type == 6 || type == 7) { /* NF3SOCK, NF3FIFO */
		get_sattr(x, &s);
	}
	if (nst == GARBAGE || x->err)
		return GARBAGE;
	uint32_t st = resolve(r, &d);
	struct attrs a;
	struct wcc_pre pre = { 0 };
	if (!st) {
		pthread_rwlock_rdlock(&d.obj->lock);
		wcc_pre_snap(d.obj, &pre);
		attrs_snap(d.obj, &a);
		pthread_rwlock_unlock(&d.obj->lock);
		/* Device and special files are not stored by this engine. */
		st = type >= 3 && type <= 7 && type != 5 ? NFS3ERR_NOTSUPP : NFS3ERR_BADTYPE;
	}
	put_status(r, o, st);
	put_wcc(o, d.obj ? &pre : NULL, d.obj ? &a : NULL);
	release(&d);
	return RPC_SUCCESS;
}

/* A sticky directory lets only root, the directory's owner and the entry's
 * owner remove the entry or rename it away or over. */
static int sticky_denies(const struct object *dir, const struct rpc_cred *cred, uint32_t entry_uid)
{
	return (dir->mode & 01000) && cred->uid != 0 && cred->uid != dir->uid && cred->uid != entry_uid;
}

/* REMOVE (want_dir = 0) and RMDIR (want_dir = 1). */
static int do_remove(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o, int want_dir)
{
	struct target d;
	char name[NAME_MAX_LEN + 1];
	if (one_handle(r, x, &d))
		return GARBAGE;
	int nst = get_name(x, name);
	if (nst == GARBAGE || x->err)
		return GARBAGE;
	uint32_t st = nst ? (uint32_t)nst : resolve(r, &d);
	if (st) {
		put_status(r, o, st);
		put_wcc(o, NULL, NULL);
		release(&d);
		return RPC_SUCCESS;
	}
	struct objset *os = g_engine.os;
	struct object *dir = d.obj, *child = NULL;
	struct wcc_pre pre;
	pthread_rwlock_rdlock(&os->txg_lock);
	pthread_mutex_lock(&os->ns_lock);
	pthread_rwlock_wrlock(&dir->lock);
	wcc_pre_snap(dir, &pre);
	uint64_t id = dir->type == OBJ_DIR ? dir_lookup(dir, name) : 0;
	if (d.exp->read_only)
		st = NFS3ERR_ROFS;
	else if (dir->type != OBJ_DIR)
		st = NFS3ERR_NOTDIR;
	else if (!strcmp(name, "."))
		st = NFS3ERR_INVAL;
	else if (!strcmp(name, ".."))
		st = want_dir ? NFS3ERR_EXIST : NFS3ERR_INVAL;
	else if (!perm_ok(dir, &d.cred, 3))
		st = NFS3ERR_ACCES;
	else if (!id || !(child = obj_get(os, id)))
		st = NFS3ERR_NOENT;
	else {
		pthread_rwlock_wrlock(&child->lock);
		if (want_dir && child->type != OBJ_DIR)
			st = NFS3ERR_NOTDIR;
		else if (!want_dir && child->type == OBJ_DIR)
			st = NFS3ERR_ISDIR;
		else if (want_dir && child->nents)
			st = NFS3ERR_NOTEMPTY;
		else if (sticky_denies(dir, &d.cred, child->uid))
			st = NFS3ERR_ACCES;
		else {
			dir_remove(dir, name);
			if (want_dir)
				dir->nlink--;
			obj_drop_link(os, child);
			obj_touch(dir, 1, 1);
			objset_mark_changed(os, dir);
		}
		pthread_rwlock_unlock(&child->lock);
	}
	uint64_t txg = dir->dirty_txg;
	pthread_rwlock_unlock(&dir->lock);
	pthread_mutex_unlock(&os->ns_lock);
	pthread_rwlock_unlock(&os->txg_lock);
	if (!st)
		st = make_stable(txg);
	struct attrs da;
	attrs_snap_locked(dir, &da);
	put_status(r, o, st);
	put_wcc(o, &pre, &da);
	obj_put(child);
	release(&d);
	return RPC_SUCCESS;
}

static int proc_remove(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	return do_remove(r, x, o, 0);
}

static int proc_rmdir(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	return do_remove(r, x, o, 1);
}

/* True when `anc` is `id` or one of its ancestors (caller holds ns_lock). */
static int is_ancestor(uint64_t anc, uint64_t id)
{
	for (int depth = 0; depth < 4096; depth++) {
		if (id == anc)
			return 1;
		struct object *o = obj_get(g_engine.os, id);
		if (!o)
			return 0;
		uint64_t parent = o->parent;
		obj_put(o);
		if (parent == id)
			return 0;
		id = parent;
	}
	return 1;
}

static int proc_rename(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target f, t;
	char fname[NAME_MAX_LEN + 1], tname[NAME_MAX_LEN + 1];
	if (one_handle(r, x, &f))
		return GARBAGE;
	int n1 = get_name(x, fname);
	if (one_handle(r, x, &t))
		return GARBAGE;
	int n2 = get_name(x, tname);
	if (n1 == GARBAGE || n2 == GARBAGE || x->err)
		return GARBAGE;
	uint32_t st = n1 ? (uint32_t)n1 : n2 ? (uint32_t)n2 : resolve(r, &f);
	if (!st)
		st = resolve(r, &t);
	if (st) {
		put_status(r, o, st);
		put_wcc(o, NULL, NULL);
		put_wcc(o, NULL, NULL);
		release(&f);
		release(&t);
		return RPC_SUCCESS;
	}
	struct objset *os = g_engine.os;
	struct object *fd = f.obj, *td = t.obj, *src = NULL, *dst = NULL;
	struct wcc_pre fpre, tpre;
	pthread_rwlock_rdlock(&os->txg_lock);
	pthread_mutex_lock(&os->ns_lock);
	/* ns_lock serialises all namespace changes, so the directories can be
	 * examined and changed one lock at a time. */
	pthread_rwlock_rdlock(&fd->lock);
	wcc_pre_snap(fd, &fpre);
	uint64_t sid = fd->type == OBJ_DIR ? dir_lookup(fd, fname) : 0;
	pthread_rwlock_unlock(&fd->lock);
	pthread_rwlock_rdlock(&td->lock);
	wcc_pre_snap(td, &tpre);
	uint64_t did = td->type == OBJ_DIR ? dir_lookup(td, tname) : 0;
	pthread_rwlock_unlock(&td->lock);
	if (f.exp->read_only)
		st = NFS3ERR_ROFS;
	else if (fd->type != OBJ_DIR || td->type != OBJ_DIR)
		st = NFS3ERR_NOTDIR;
	else if (f.exp != t.exp)
		st = NFS3ERR_XDEV;
	else if (!dir_name_ok(fname) || !dir_name_ok(tname))
		st = NFS3ERR_INVAL;
	else if (!perm_ok(fd, &f.cred, 3) || !perm_ok(td, &t.cred, 3))
		st = NFS3ERR_ACCES;
	else if (!sid || !(src = obj_get(os, sid)))
		st = NFS3ERR_NOENT;
	else if (did && !(dst = obj_get(os, did)))
		st = NFS3ERR_IO;
	else if (sticky_denies(fd, &f.cred, src->uid) || (dst && sticky_denies(td, &t.cred, dst->uid)))
		st = NFS3ERR_ACCES;
	else if (src->type == OBJ_DIR && is_ancestor(src->id, td->id))
		st = NFS3ERR_INVAL;
	else if (dst && dst != src) {
		if (src->type == OBJ_DIR && dst->type != OBJ_DIR)
			st = NFS3ERR_NOTDIR;
		else if (src->type != OBJ_DIR && dst->type == OBJ_DIR)
			st = NFS3ERR_ISDIR;
		else if (dst->type == OBJ_DIR && dst->nents)
			st = NFS3ERR_NOTEMPTY;
	}
	if (!st && dst != src) {
		if (dst) {
			pthread_rwlock_wrlock(&td->lock);
			dir_remove(td, tname);
			if (dst->type == OBJ_DIR)
				td->nlink--;
			pthread_rwlock_unlock(&td->lock);
			pthread_rwlock_wrlock(&dst->lock);
			obj_drop_link(os, dst);
			pthread_rwlock_unlock(&dst->lock);
		}
		pthread_rwlock_wrlock(&fd->lock);
		dir_remove(fd, fname);
		if (src->type == OBJ_DIR)
			fd->nlink--;
		obj_touch(fd, 1, 1);
		objset_mark_changed(os, fd);
		pthread_rwlock_unlock(&fd->lock);
		pthread_rwlock_wrlock(&td->lock);
		dir_add(td, tname, src->id);
		if (src->type == OBJ_DIR)
			td->nlink++;
		obj_touch(td, 1, 1);
		objset_mark_changed(os, td);
		pthread_rwlock_unlock(&td->lock);
		pthread_rwlock_wrlock(&src->lock);
		if (src->type == OBJ_DIR)
			src->parent = td->id;
		obj_touch(src, 0, 1);
		objset_mark_changed(os, src);
		pthread_rwlock_unlock(&src->lock);
	}
	uint64_t txg = os->open_txg;
	pthread_mutex_unlock(&os->ns_lock);
	pthread_rwlock_unlock(&os->txg_lock);
	if (!st)
		st = make_stable(txg);
	struct attrs fa, ta;
	attrs_snap_locked(fd, &fa);
	attrs_snap_locked(td, &ta);
	put_status(r, o, st);
	put_wcc(o, &fpre, &fa);
	put_wcc(o, &tpre, &ta);
	obj_put(src);
	obj_put(dst);
	release(&f);
	release(&t);
	return RPC_SUCCESS;
}

static int proc_link(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target f, d;
	char name[NAME_MAX_LEN + 1];
	if (one_handle(r, x, &f) || one_handle(r, x, &d))
		return GARBAGE;
	int nst = get_name(x, name);
	if (nst == GARBAGE || x->err)
		return GARBAGE;
	uint32_t st = nst ? (uint32_t)nst : resolve(r, &f);
	if (!st)
		st = resolve(r, &d);
	if (st) {
		put_status(r, o, st);
		put_post_op_attr(o, NULL);
		put_wcc(o, NULL, NULL);
		release(&f);
		release(&d);
		return RPC_SUCCESS;
	}
	struct objset *os = g_engine.os;
	struct wcc_pre pre;
	pthread_rwlock_rdlock(&os->txg_lock);
	pthread_mutex_lock(&os->ns_lock);
	pthread_rwlock_wrlock(&d.obj->lock);
	wcc_pre_snap(d.obj, &pre);
	if (f.exp->read_only)
		st = NFS3ERR_ROFS;
	else if (d.obj->type != OBJ_DIR)
		st = NFS3ERR_NOTDIR;
	else if (f.exp != d.exp)
		st = NFS3ERR_XDEV;
	else if (f.obj->type == OBJ_DIR)
		st = NFS3ERR_ISDIR;
	else if (!dir_name_ok(name))
		st = !strcmp(name, ".") || !strcmp(name, "..") ? NFS3ERR_EXIST : NFS3ERR_INVAL;
	else if (!perm_ok(d.obj, &d.cred, 3))
		st = NFS3ERR_ACCES;
	else if (dir_lookup(d.obj, name))
		st = NFS3ERR_EXIST;
	else if (f.obj->nlink >= 65000)
		st = NFS3ERR_MLINK;
	else {
		dir_add(d.obj, name, f.obj->id);
		obj_touch(d.obj, 1, 1);
		objset_mark_changed(os, d.obj);
		pthread_rwlock_wrlock(&f.obj->lock);
		f.obj->nlink++;
		obj_touch(f.obj, 0, 1);
		objset_mark_changed(os, f.obj);
		pthread_rwlock_unlock(&f.obj->lock);
	}
	uint64_t txg = d.obj->dirty_txg;
	pthread_rwlock_unlock(&d.obj->lock);
	pthread_mutex_unlock(&os->ns_lock);
	pthread_rwlock_unlock(&os->txg_lock);
	if (!st)
		st = make_stable(txg);
	struct attrs fa, da;
	attrs_snap_locked(f.obj, &fa);
	attrs_snap_locked(d.obj, &da);
	put_status(r, o, st);
	put_post_op_attr(o, &fa);
	put_wcc(o, &pre, &da);
	release(&f);
	release(&d);
	return RPC_SUCCESS;
}

/* READDIR (plus = 0) and READDIRPLUS (plus = 1). */
static int do_readdir(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o, int plus)
{
	struct target d;
	if (one_handle(r, x, &d))
		return GARBAGE;
	uint64_t cookie = xdr_get_u64(x);
	xdr_get_fixed(x, 8); /* cookieverf: cookies stay valid, so it is not checked */
	uint32_t dircount = xdr_get_u32(x), maxcount = plus ? xdr_get_u32(x) : dircount;
	if (x->err)
		return GARBAGE;
	if (resolve_or_fail(r, o, &d))
		return RPC_SUCCESS;
	struct object *dir = d.obj;
	struct attrs da;
	uint32_t st = NFS3_OK;
	if (maxcount > 1024 * 1024)
		maxcount = 1024 * 1024;
	pthread_rwlock_rdlock(&dir->lock);
	attrs_snap(dir, &da);
	if (dir->type != OBJ_DIR)
		st = NFS3ERR_NOTDIR;
	else if (!perm_ok(dir, &d.cred, 4))
		st = NFS3ERR_ACCES;
	put_status(r, o, st);
	put_post_op_attr(o, &da);
	if (st) {
		pthread_rwlock_unlock(&dir->lock);
		release(&d);
		return RPC_SUCCESS;
	}
	xdr_put_u64(o, 0); /* cookieverf */
	size_t start = o->pos - (4 + 4 + 84 + 8);
	size_t used_dir = 0;
	int n = 0, eof = 1;
	uint32_t i = cookie >= 2 ? dir_seek(dir, cookie) : 0;
	uint64_t parent = dir->id == d.exp->ds->root ? dir->id : dir->parent;
	for (uint64_t k = cookie;; ) {
		const char *name;
		uint64_t id, ck;
		if (k < 2) {
			name = k == 0 ? "." : "..";
			id = k == 0 ? dir->id : parent;
			ck = k + 1;
		} else if (i < dir->nents) {
			name = dir->ents[i].name;
			id = dir->ents[i].objid;
			ck = dir->ents[i].cookie;
		} else {
			break;
		}
		size_t nlen = strlen(name), pad = (nlen + 3) & ~(size_t)3;
		size_t dirpart = 8 + 4 + pad + 8;
		size_t entry = 4 + dirpart + (plus ? 4 + 84 + 4 + 4 + FH_SIZE : 0);
		/* keep room for the list terminator and eof */
		if ((o->pos - start) + entry + 8 > maxcount || (plus && used_dir + dirpart > dircount)) {
			eof = 0;
			break;
		}
		struct object *child = plus ? obj_get(g_engine.os, id) : NULL;
		xdr_put_u32(o, 1);
		xdr_put_u64(o, id);
		xdr_put_opaque(o, name, (uint32_t)nlen);
		xdr_put_u64(o, ck);
		if (plus) {
			struct attrs ca;
			if (child && child != dir) {
				attrs_snap_locked(child, &ca);
				put_post_op_attr(o, &ca);
			} else {
				put_post_op_attr(o, child ? &da : NULL);
			}
			xdr_put_u32(o, child != NULL);
			if (child)
				put_obj_fh(o, child);
			obj_put(child);
		}
		used_dir += dirpart;
		n++;
		if (k < 2)
			k++;
		else
			i++;
	}
	pthread_rwlock_unlock(&dir->lock);
	if (!n && !eof) {
		o->pos = start;
		put_status(r, o, NFS3ERR_TOOSMALL);
		put_post_op_attr(o, &da);
	} else {
		xdr_put_u32(o, 0);
		xdr_put_u32(o, eof);
	}
	release(&d);
	return RPC_SUCCESS;
}

static int proc_readdir(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	return do_readdir(r, x, o, 0);
}

static int proc_readdirplus(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	return do_readdir(r, x, o, 1);
}

/* FSSTAT, FSINFO and PATHCONF: status, the object's attributes and the fields
 * put_fields writes; on failure status and no attributes. */
static int fs_reply(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o,
		    void (*put_fields)(struct xdr_out *o, const struct target *t))
{
	struct target t;
	if (one_handle(r, x, &t))
		return GARBAGE;
	if (resolve_or_fail(r, o, &t))
		return RPC_SUCCESS;
	struct attrs a;
	attrs_snap_locked(t.obj, &a);
	put_status(r, o, NFS3_OK);
	put_post_op_attr(o, &a);
	put_fields(o, &t);
	release(&t);
	return RPC_SUCCESS;
}

static void fsstat_fields(struct xdr_out *o, const struct target *t)
{
	struct pool *p = g_engine.pool;
	uint64_t total = pool_total_bytes(p), dirty = __atomic_load_n(&g_engine.os->dirty_bytes, __ATOMIC_RELAXED);
	uint64_t fr = pool_free_bytes(p);
	fr = fr > dirty ? fr - dirty : 0;
	uint64_t files = g_engine.os->nobjects;
	xdr_put_u64(o, total);
	xdr_put_u64(o, fr);
	xdr_put_u64(o, fr);
	xdr_put_u64(o, files + fr / 4096);
	xdr_put_u64(o, fr / 4096);
	xdr_put_u64(o, fr / 4096);
	xdr_put_u32(o, 0); /* invarsec */
}

static void fsinfo_fields(struct xdr_out *o, const struct target *t)
{
	uint32_t pref = t->exp->recordsize ? t->exp->recordsize : t->exp->ds->recordsize;
	xdr_put_u32(o, RTMAX);
	xdr_put_u32(o, pref);
	xdr_put_u32(o, 4096);
	xdr_put_u32(o, WTMAX);
	xdr_put_u32(o, pref);
	xdr_put_u32(o, 4096);
	xdr_put_u32(o, 64 * 1024);
	xdr_put_u64(o, OBJ_MAX_FILE_SIZE);
	xdr_put_u32(o, 0); /* time_delta: 1 ns */
	xdr_put_u32(o, 1);
	xdr_put_u32(o, 0x1 | 0x2 | 0x8 | 0x10); /* LINK, SYMLINK, HOMOGENEOUS, CANSETTIME */
}

static void pathconf_fields(struct xdr_out *o, const struct target *t)
{
	xdr_put_u32(o, 65000);        /* linkmax */
	xdr_put_u32(o, NAME_MAX_LEN); /* name_max */
	xdr_put_u32(o, 1);            /* no_trunc */
	xdr_put_u32(o, 1);            /* chown_restricted */
	xdr_put_u32(o, 0);            /* case_insensitive */
	xdr_put_u32(o, 1);            /* case_preserving */
}

static int proc_fsstat(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	return fs_reply(r, x, o, fsstat_fields);
}

static int proc_fsinfo(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	return fs_reply(r, x, o, fsinfo_fields);
}

static int proc_pathconf(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	return fs_reply(r, x, o, pathconf_fields);
}

static int proc_commit(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o)
{
	struct target t;
	if (one_handle(r, x, &t))
		return GARBAGE;
	xdr_get_u64(x); /* offset */
	xdr_get_u32(x); /* count: the whole file is committed */
	if (x->err)
		return GARBAGE;
	uint32_t st = resolve(r, &t);
	if (st) {
		put_status(r, o, st);
		put_wcc(o, NULL, NULL);
		return RPC_SUCCESS;
	}
	struct wcc_pre pre;
	pthread_rwlock_rdlock(&t.obj->lock);
	wcc_pre_snap(t.obj, &pre);
	pthread_rwlock_unlock(&t.obj->lock);
	st = t.obj->type == OBJ_REG ? tiers_commit(t.obj, &r->acct)
		: t.obj->type == OBJ_DIR ? NFS3ERR_ISDIR : NFS3ERR_INVAL;
	struct attrs a;
	attrs_snap_locked(t.obj, &a);
	put_status(r, o, st);
	put_wcc(o, &pre, &a);
	if (!st)
		xdr_put_fixed(o, g_engine.write_verf, 8);
	release(&t);
	return RPC_SUCCESS;
}

typedef int (*nfs_proc)(struct rpc_req *r, struct xdr_in *x, struct xdr_out *o);

static const nfs_proc procs[22] = {
	proc_null, proc_getattr, proc_setattr, proc_lookup, proc_access, proc_readlink,
	proc_read, proc_write, proc_create, proc_mkdir, proc_symlink, proc_mknod,
	proc_remove, proc_rmdir, proc_rename, proc_link, proc_readdir, proc_readdirplus,
	proc_fsstat, proc_fsinfo, proc_pathconf, proc_commit,
};

static uint64_t reply_delay_ns;

/* Delays up to this spin, so the reply is late by the delay and not by a timer
 * wakeup (tens of us on a busy VM); longer ones sleep. */
#define REPLY_DELAY_SPIN_NS 100000ull
/* Delays up to this spin on the event loop's thread too, so a planted delay of a few
 * hundred ns adds just that to a READ served inline, not a hand-off to a worker. */
#define REPLY_DELAY_INLINE_NS 10000ull

void nfs3_set_reply_delay(uint64_t ns)
{
	__atomic_store_n(&reply_delay_ns, ns, __ATOMIC_RELAXED);
}

uint64_t nfs3_reply_delay(void)
{
	return __atomic_load_n(&reply_delay_ns, __ATOMIC_RELAXED);
}

static void reply_delay(void)
{
	uint64_t ns = __atomic_load_n(&reply_delay_ns, __ATOMIC_RELAXED);
	if (ns > REPLY_DELAY_SPIN_NS) {
		devmodel_delay(ns);
		return;
	}
	for (uint64_t end = clock_mono_ns() + ns; ns && clock_mono_ns() < end;)
		;
}

/* Procedures that can run without waiting (r->acct.nowait): they change nothing
 * and read only what is in memory, or say NFS3_WOULD_BLOCK. */
static const uint8_t nowait_ok[22] = {
	[0] = 1 /* NULL */, [1] = 1 /* GETATTR */, [4] = 1 /* ACCESS */, [6] = 1 /* READ */,
};

int nfs3_dispatch(struct rpc_req *r, struct xdr_out *o)
{
	if (r->call.proc >= 22)
		return RPC_PROC_UNAVAIL;
	if (r->acct.nowait &&
	    (!nowait_ok[r->call.proc] || __atomic_load_n(&reply_delay_ns, __ATOMIC_RELAXED) > REPLY_DELAY_INLINE_NS))
		return NFS3_WOULD_BLOCK;
	int rc = procs[r->call.proc](r, &r->args, o);
	if (rc == NFS3_WOULD_BLOCK)
		return rc;
	reply_delay();
	return rc == GARBAGE ? RPC_GARBAGE_ARGS : rc;
}
