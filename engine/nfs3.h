/* nfs3.h — NFSv3 (RFC 1813): the 22-procedure dispatcher (its status codes: nfsstat.h). */
#ifndef ENGINE_NFS3_H
#define ENGINE_NFS3_H

#include "nfsstat.h"
#include "rpc_req.h"

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
uint64_t nfs3_reply_delay(void);

#endif
