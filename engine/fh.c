/* fh.c — file handle encoding, authentication and resolution (see fh.h).
 * Layout: magic, dsid (big-endian u32), object id, generation (big-endian
 * u64), then the MAC of the 24 bytes before it (little-endian u64). */
#include "fh.h"

#include <string.h>

#include "engine.h"
#include "nfsstat.h"
#include "siphash.h"

#define FH_MAGIC 0x53544648u /* "STFH" */
#define FH_MAC_OFF 24

static void be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24, p[1] = v >> 16, p[2] = v >> 8, p[3] = v;
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void fh_make(struct fh *fh, uint32_t dsid, uint64_t objid, uint64_t gen)
{
	be32(fh->b, FH_MAGIC);
	be32(fh->b + 4, dsid);
	be32(fh->b + 8, (uint32_t)(objid >> 32));
	be32(fh->b + 12, (uint32_t)objid);
	be32(fh->b + 16, (uint32_t)(gen >> 32));
	be32(fh->b + 20, (uint32_t)gen);
	uint64_t mac = siphash24(g_engine.pool->secret, fh->b, FH_MAC_OFF);
	for (int i = 0; i < 8; i++)
		fh->b[FH_MAC_OFF + i] = (uint8_t)(mac >> (8 * i));
}

/* The MAC matches, compared in constant time. */
static int mac_ok(const struct fh *fh)
{
	uint64_t mac = siphash24(g_engine.pool->secret, fh->b, FH_MAC_OFF);
	uint8_t diff = 0;
	for (int i = 0; i < 8; i++)
		diff |= fh->b[FH_MAC_OFF + i] ^ (uint8_t)(mac >> (8 * i));
	return diff == 0;
}

int fh_get(struct xdr_in *x, struct fh *fh, uint32_t *len)
{
	const uint8_t *p = xdr_get_opaque(x, FH_MAX, len);
	memset(fh, 0, sizeof(*fh));
	if (!p)
		return -1;
	memcpy(fh->b, p, *len < FH_SIZE ? *len : FH_SIZE);
	return 0;
}

void fh_put(struct xdr_out *o, const struct fh *fh)
{
	xdr_put_opaque(o, fh->b, FH_SIZE);
}

struct export *export_by_dsid(uint32_t dsid)
{
	for (int i = 0; i < g_engine.nexports; i++)
		if (g_engine.exports[i].ds->id == dsid)
			return &g_engine.exports[i];
	return NULL;
}

uint32_t fh_resolve(struct rpc_req *r, const struct fh *fh, uint32_t len,
		    struct export **exp, struct object **obj, struct rpc_cred *cred)
{
	*obj = NULL;
	if (len != FH_SIZE || rd32(fh->b) != FH_MAGIC || !mac_ok(fh))
		return NFS3ERR_BADHANDLE;
	uint32_t dsid = rd32(fh->b + 4);
	uint64_t id = (uint64_t)rd32(fh->b + 8) << 32 | rd32(fh->b + 12);
	uint64_t gen = (uint64_t)rd32(fh->b + 16) << 32 | rd32(fh->b + 20);
	struct export *e = export_by_dsid(dsid);
	if (!e)
		return NFS3ERR_STALE;
	if (!export_allows(e, r->client))
		return NFS3ERR_ACCES;
	struct object *o = obj_get(g_engine.os, id);
	if (!o)
		return NFS3ERR_STALE;
	if (o->gen != gen || o->dsid != dsid) {
		obj_put(o);
		return NFS3ERR_STALE;
	}
	r->file_id = id;
	*exp = e;
	*obj = o;
	export_cred(e, &r->call.cred, cred);
	return NFS3_OK;
}
