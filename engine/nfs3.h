/* nfs3.h — NFSv3 (RFC 1813): status codes and the 22-procedure dispatcher. */
#ifndef ENGINE_NFS3_H
#define ENGINE_NFS3_H

#include "net.h"

enum nfsstat3 {
	NFS3_OK = 0, NFS3ERR_PERM = 1, NFS3ERR_NOENT = 2, NFS3ERR_IO = 5, NFS3ERR_NXIO = 6,
	NFS3ERR_ACCES = 13, NFS3ERR_EXIST = 17, NFS3ERR_XDEV = 18, NFS3ERR_NODEV = 19,
	NFS3ERR_NOTDIR = 20, NFS3ERR_ISDIR = 21, NFS3ERR_INVAL = 22, NFS3ERR_FBIG = 27,
	NFS3ERR_NOSPC = 28, NFS3ERR_ROFS = 30, NFS3ERR_MLINK = 31, NFS3ERR_NAMETOOLONG = 63,
	NFS3ERR_NOTEMPTY = 66, NFS3ERR_DQUOT = 69, NFS3ERR_STALE = 70, NFS3ERR_REMOTE = 71,
	NFS3ERR_BADHANDLE = 10001, NFS3ERR_NOT_SYNC = 10002, NFS3ERR_BAD_COOKIE = 10003,
	NFS3ERR_NOTSUPP = 10004, NFS3ERR_TOOSMALL = 10005, NFS3ERR_SERVERFAULT = 10006,
	NFS3ERR_BADTYPE = 10007, NFS3ERR_JUKEBOX = 10008,
};

/* Decodes the arguments of r->call.proc, runs it and appends the result to o.
 * Returns an RPC accept_stat (RPC_SUCCESS, RPC_PROC_UNAVAIL, RPC_GARBAGE_ARGS),
 * or, for a request that may not wait (r->acct.nowait), NFS3_WOULD_BLOCK when it
 * would: a procedure that changes state, waits for a device or a busy object
 * lock, a READ over NFS3_NOWAIT_READ_MAX, or any while replies are delayed.
 * Nothing has changed then; o and r's results are to be discarded. */
int nfs3_dispatch(struct rpc_req *r, struct xdr_out *o);
#define NFS3_WOULD_BLOCK (-2)
/* Largest READ run without waiting: bigger copies go to a worker. */
#define NFS3_NOWAIT_READ_MAX (64u << 10)

/* Fault injection: ns added to every NFS reply before it is sent (0: none),
 * set by `strata-engine ctl inject-delay nfs DURATION`. */
void nfs3_set_reply_delay(uint64_t ns);

#endif
