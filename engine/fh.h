/* fh.h — NFS file handles: opaque 32 bytes holding a magic, the export's
 * dataset id, the object id, its (random) generation and a SipHash-2-4 MAC
 * of those fields keyed by the pool's secret (pool.h), so a client can
 * neither forge nor alter one, and a handle of another pool fails; and their
 * resolution into a held object (forged, stale, foreign or disallowed
 * handles are refused). */
#ifndef ENGINE_FH_H
#define ENGINE_FH_H

#include <stdint.h>

#include "export.h"
#include "rpc_req.h"
#include "objset.h"

#define FH_SIZE 32
#define FH_MAX 64

struct fh { uint8_t b[FH_SIZE]; };

void fh_make(struct fh *fh, uint32_t dsid, uint64_t objid, uint64_t gen);
/* Decodes an nfs_fh3 from the arguments (sets x->err when malformed). */
int fh_get(struct xdr_in *x, struct fh *fh, uint32_t *len);
void fh_put(struct xdr_out *o, const struct fh *fh);

/* Resolves to a held object in an export this client may use, filling the
 * squashed credential.  Returns an nfsstat3: BADHANDLE for a handle this
 * pool did not make (wrong size, magic or MAC), STALE for one whose export
 * or object is gone. */
uint32_t fh_resolve(struct rpc_req *r, const struct fh *fh, uint32_t len,
		    struct export **exp, struct object **obj, struct rpc_cred *cred);
struct export *export_by_dsid(uint32_t dsid);

#endif
