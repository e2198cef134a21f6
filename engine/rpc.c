/* rpc.c — ONC RPC v2 call decoding (AUTH_NONE, AUTH_SYS) and reply headers. */
#include "rpc.h"

#include <string.h>

#define RPC_CALL 0
#define RPC_REPLY 1
#define MSG_ACCEPTED 0
#define MSG_DENIED 1
#define MAX_AUTH_BYTES 400

static int decode_auth_sys(const uint8_t *body, uint32_t n, struct rpc_cred *c)
{
	struct xdr_in x;
	uint32_t namelen;
	xdr_in_init(&x, body, n);
	xdr_get_u32(&x); /* stamp */
	xdr_get_opaque(&x, 255, &namelen);
	c->uid = xdr_get_u32(&x);
	c->gid = xdr_get_u32(&x);
	c->ngids = xdr_get_u32(&x);
	if (x.err || c->ngids > 16)
		return -1;
	for (uint32_t i = 0; i < c->ngids; i++)
		c->gids[i] = xdr_get_u32(&x);
	return x.err || xdr_remaining(&x) ? -1 : 0;
}

enum rpc_decode rpc_decode_call(struct xdr_in *x, struct rpc_call *c)
{
	memset(c, 0, sizeof(*c));
	c->xid = xdr_get_u32(x);
	uint32_t type = xdr_get_u32(x);
	if (x->err || type != RPC_CALL)
		return RPC_DECODE_DROP;
	c->rpcvers = xdr_get_u32(x);
	if (x->err)
		return RPC_DECODE_BADCRED;
	if (c->rpcvers != 2)
		return RPC_DECODE_MISMATCH;
	c->prog = xdr_get_u32(x);
	c->vers = xdr_get_u32(x);
	c->proc = xdr_get_u32(x);
	c->cred.flavor = xdr_get_u32(x);
	uint32_t clen, vlen;
	const uint8_t *cbody = xdr_get_opaque(x, MAX_AUTH_BYTES, &clen);
	xdr_get_u32(x); /* verifier flavor */
	xdr_get_opaque(x, MAX_AUTH_BYTES, &vlen);
	if (x->err)
		return RPC_DECODE_BADCRED;
	c->cred.uid = c->cred.gid = 65534;
	if (c->cred.flavor == RPC_AUTH_SYS)
		return decode_auth_sys(cbody, clen, &c->cred) ? RPC_DECODE_BADCRED : RPC_DECODE_OK;
	if (c->cred.flavor == RPC_AUTH_NONE)
		return RPC_DECODE_OK;
	return RPC_DECODE_TOOWEAK;
}

void rpc_put_accepted(struct xdr_out *o, uint32_t xid, uint32_t stat, uint32_t low, uint32_t high)
{
	xdr_put_u32(o, xid);
	xdr_put_u32(o, RPC_REPLY);
	xdr_put_u32(o, MSG_ACCEPTED);
	xdr_put_u32(o, RPC_AUTH_NONE);
	xdr_put_u32(o, 0);
	xdr_put_u32(o, stat);
	if (stat == RPC_PROG_MISMATCH) {
		xdr_put_u32(o, low);
		xdr_put_u32(o, high);
	}
}

void rpc_put_denied_mismatch(struct xdr_out *o, uint32_t xid)
{
	xdr_put_u32(o, xid);
	xdr_put_u32(o, RPC_REPLY);
	xdr_put_u32(o, MSG_DENIED);
	xdr_put_u32(o, 0); /* RPC_MISMATCH */
	xdr_put_u32(o, 2);
	xdr_put_u32(o, 2);
}

void rpc_put_denied_auth(struct xdr_out *o, uint32_t xid, uint32_t auth_stat)
{
	xdr_put_u32(o, xid);
	xdr_put_u32(o, RPC_REPLY);
	xdr_put_u32(o, MSG_DENIED);
	xdr_put_u32(o, 1); /* AUTH_ERROR */
	xdr_put_u32(o, auth_stat);
}
