/* nfs3_attr.h — NFSv3 attribute plumbing: fattr3 snapshots, post_op_attr,
 * wcc_data, sattr3 decoding/applying and UNIX permission checks. */
#ifndef ENGINE_NFS3_ATTR_H
#define ENGINE_NFS3_ATTR_H

#include <stdint.h>

#include "objset.h"
#include "rpc.h"
#include "xdr.h"

struct attrs {
	uint32_t type, mode, nlink, uid, gid;
	uint64_t size, used, fsid, fileid;
	struct nfs_time atime, mtime, ctime;
};

struct wcc_pre {
	int valid;
	uint64_t size;
	struct nfs_time mtime, ctime;
};

struct sattr {
	int set_mode, set_uid, set_gid, set_size;
	uint32_t mode, uid, gid;
	uint64_t size;
	int set_atime, set_mtime; /* 0 don't, 1 server time, 2 client time */
	struct nfs_time atime, mtime;
};

/* Snapshot; the caller holds o->lock (either mode). */
void attrs_snap(const struct object *o, struct attrs *a);
/* Snapshot taking o->lock shared. */
void attrs_snap_locked(struct object *o, struct attrs *a);
void wcc_pre_snap(const struct object *o, struct wcc_pre *pre);

void put_fattr(struct xdr_out *x, const struct attrs *a);
void put_post_op_attr(struct xdr_out *x, const struct attrs *a); /* NULL: none */
void put_wcc(struct xdr_out *x, const struct wcc_pre *pre, const struct attrs *post);

void get_sattr(struct xdr_in *x, struct sattr *s);
/* Checks permissions and applies (caller holds txg_lock shared and o->lock
 * exclusively); returns an nfsstat3. */
uint32_t sattr_apply(struct objset *os, struct object *o, const struct sattr *s,
		     const struct rpc_cred *cred);

/* UNIX permission check: want is a mask of 4 (r), 2 (w), 1 (x). */
int perm_ok(const struct object *o, const struct rpc_cred *cred, uint32_t want);
/* Maps a -errno from the object store to an nfsstat3. */
uint32_t errno_to_nfs(int err);

#endif
