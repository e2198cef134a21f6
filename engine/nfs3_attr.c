/* nfs3_attr.c — fattr3/wcc encoding, sattr3 handling, permissions. */
#include "nfs3_attr.h"

#include <errno.h>
#include <string.h>

#include "engine.h"
#include "nfsstat.h"
#include "util.h"

/* The size a directory reports: grows with its entries. */
static uint64_t dir_size(const struct object *o)
{
	return 4096 + (uint64_t)o->nents * 32;
}

void attrs_snap(const struct object *o, struct attrs *a)
{
	a->type = o->type;
	a->mode = o->mode;
	a->nlink = o->nlink;
	a->uid = o->uid;
	a->gid = o->gid;
	a->size = o->type == OBJ_LNK && o->target ? strlen(o->target) : o->size;
	a->used = obj_used_bytes(o);
	a->fsid = g_engine.pool->guid ^ o->dsid;
	a->fileid = o->id;
	a->atime = o->atime;
	a->mtime = o->mtime;
	a->ctime = o->ctime;
	if (o->type == OBJ_DIR)
		a->size = a->used = dir_size(o);
}

void attrs_snap_locked(struct object *o, struct attrs *a)
{
	pthread_rwlock_rdlock(&o->lock);
	attrs_snap(o, a);
	pthread_rwlock_unlock(&o->lock);
}

void wcc_pre_snap(const struct object *o, struct wcc_pre *pre)
{
	pre->valid = 1;
	pre->size = o->type == OBJ_DIR ? dir_size(o) : o->size;
	pre->mtime = o->mtime;
	pre->ctime = o->ctime;
}

static void put_time(struct xdr_out *x, const struct nfs_time *t)
{
	xdr_put_u32(x, t->sec);
	xdr_put_u32(x, t->nsec);
}

void put_fattr(struct xdr_out *x, const struct attrs *a)
{
	xdr_put_u32(x, a->type);
	xdr_put_u32(x, a->mode);
	xdr_put_u32(x, a->nlink);
	xdr_put_u32(x, a->uid);
	xdr_put_u32(x, a->gid);
	xdr_put_u64(x, a->size);
	xdr_put_u64(x, a->used);
	xdr_put_u32(x, 0); /* rdev */
	xdr_put_u32(x, 0);
	xdr_put_u64(x, a->fsid);
	xdr_put_u64(x, a->fileid);
	put_time(x, &a->atime);
	put_time(x, &a->mtime);
	put_time(x, &a->ctime);
}

void put_post_op_attr(struct xdr_out *x, const struct attrs *a)
{
	xdr_put_u32(x, a != NULL);
	if (a)
		put_fattr(x, a);
}

void put_wcc(struct xdr_out *x, const struct wcc_pre *pre, const struct attrs *post)
{
	xdr_put_u32(x, pre && pre->valid);
	if (pre && pre->valid) {
		xdr_put_u64(x, pre->size);
		put_time(x, &pre->mtime);
		put_time(x, &pre->ctime);
	}
	put_post_op_attr(x, post);
}

void get_sattr(struct xdr_in *x, struct sattr *s)
{
	memset(s, 0, sizeof(*s));
	if ((s->set_mode = xdr_get_bool(x)))
		s->mode = xdr_get_u32(x);
	if ((s->set_uid = xdr_get_bool(x)))
		s->uid = xdr_get_u32(x);
	if ((s->set_gid = xdr_get_bool(x)))
		s->gid = xdr_get_u32(x);
	if ((s->set_size = xdr_get_bool(x)))
		s->size = xdr_get_u64(x);
	struct nfs_time *t[2] = { &s->atime, &s->mtime };
	int *how[2] = { &s->set_atime, &s->set_mtime };
	for (int i = 0; i < 2; i++) {
		uint32_t h = xdr_get_u32(x);
		if (h > 2)
			x->err = 1;
		*how[i] = (int)h;
		if (h == 2) {
			t[i]->sec = xdr_get_u32(x);
			t[i]->nsec = xdr_get_u32(x);
		}
	}
}

static int in_group(const struct rpc_cred *c, uint32_t gid)
{
	if (c->gid == gid)
		return 1;
	for (uint32_t i = 0; i < c->ngids; i++)
		if (c->gids[i] == gid)
			return 1;
	return 0;
}

int perm_ok(const struct object *o, const struct rpc_cred *cred, uint32_t want)
{
	if (cred->uid == 0)
		return 1;
	uint32_t bits;
	if (cred->uid == o->uid)
		bits = o->mode >> 6;
	else if (in_group(cred, o->gid))
		bits = o->mode >> 3;
	else
		bits = o->mode;
	return (bits & want & 7) == (want & 7);
}

uint32_t sattr_apply(struct objset *os, struct object *o, const struct sattr *s,
		     const struct rpc_cred *cred)
{
	int owner = cred->uid == 0 || cred->uid == o->uid;
	if ((s->set_mode || s->set_uid || s->set_gid) && !owner)
		return NFS3ERR_PERM;
	if (s->set_uid && cred->uid != 0 && s->uid != o->uid)
		return NFS3ERR_PERM;
	if (s->set_gid && cred->uid != 0 && s->gid != o->gid && !in_group(cred, s->gid))
		return NFS3ERR_PERM;
	if (s->set_size) {
		if (o->type == OBJ_DIR)
			return NFS3ERR_ISDIR;
		if (o->type != OBJ_REG)
			return NFS3ERR_INVAL;
		if (!owner && !perm_ok(o, cred, 2))
			return NFS3ERR_ACCES;
	}
	if ((s->set_atime == 2 || s->set_mtime == 2) && !owner)
		return NFS3ERR_PERM;
	if ((s->set_atime == 1 || s->set_mtime == 1) && !owner && !perm_ok(o, cred, 2))
		return NFS3ERR_ACCES;
	if (s->set_size && s->size != o->size) {
		int err = obj_truncate(os, o, s->size);
		if (err)
			return errno_to_nfs(err);
	}
	if (s->set_mode)
		o->mode = s->mode & 07777;
	if (s->set_uid)
		o->uid = s->uid;
	if (s->set_gid)
		o->gid = s->gid;
	struct nfs_time now;
	now_real(&now.sec, &now.nsec);
	if (s->set_atime)
		o->atime = s->set_atime == 2 ? s->atime : now;
	if (s->set_mtime)
		o->mtime = s->set_mtime == 2 ? s->mtime : now;
	o->ctime = now;
	objset_mark_changed(os, o);
	return NFS3_OK;
}

uint32_t errno_to_nfs(int err)
{
	switch (-err) {
	case 0: return NFS3_OK;
	case ENOSPC: return NFS3ERR_NOSPC;
	case EFBIG: return NFS3ERR_FBIG;
	case EACCES: return NFS3ERR_ACCES;
	case EINVAL: return NFS3ERR_INVAL;
	default: return NFS3ERR_IO;
	}
}
