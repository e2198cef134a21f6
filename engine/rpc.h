/* rpc.h — ONC RPC v2 (RFC 5531) call-header decoding, AUTH_SYS credentials and
 * reply-header encoding. */
#ifndef ENGINE_RPC_H
#define ENGINE_RPC_H

#include <stdint.h>
#include "xdr.h"

#define RPC_AUTH_NONE 0
#define RPC_AUTH_SYS  1

enum rpc_accept_stat {
	RPC_SUCCESS = 0, RPC_PROG_UNAVAIL = 1, RPC_PROG_MISMATCH = 2,
	RPC_PROC_UNAVAIL = 3, RPC_GARBAGE_ARGS = 4, RPC_SYSTEM_ERR = 5,
};
enum rpc_auth_stat { RPC_AUTH_BADCRED = 1, RPC_AUTH_TOOWEAK = 5 };

struct rpc_cred {
	uint32_t flavor;
	uint32_t uid, gid; /* AUTH_SYS; 65534 for AUTH_NONE */
	uint32_t ngids;
	uint32_t gids[16];
};

struct rpc_call {
	uint32_t xid, rpcvers, prog, vers, proc;
	struct rpc_cred cred;
};

enum rpc_decode {
	RPC_DECODE_OK,        /* header fine; args follow in the decoder */
	RPC_DECODE_DROP,      /* not even an xid / not a CALL: drop the record */
	RPC_DECODE_MISMATCH,  /* rpcvers != 2: reply MSG_DENIED RPC_MISMATCH */
	RPC_DECODE_BADCRED,   /* unreadable credential: reply AUTH_ERROR */
	RPC_DECODE_TOOWEAK,   /* flavor we do not accept: reply AUTH_ERROR */
};

enum rpc_decode rpc_decode_call(struct xdr_in *x, struct rpc_call *c);
/* Accepted reply header; for PROG_MISMATCH also give low/high versions. */
void rpc_put_accepted(struct xdr_out *o, uint32_t xid, uint32_t stat, uint32_t low, uint32_t high);
void rpc_put_denied_mismatch(struct xdr_out *o, uint32_t xid);
void rpc_put_denied_auth(struct xdr_out *o, uint32_t xid, uint32_t auth_stat);

#endif
