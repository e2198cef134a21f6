/* mount3.h — MOUNT v3 (RFC 1813 appendix I): NULL, MNT, DUMP, UMNT, UMNTALL, EXPORT. */
#ifndef ENGINE_MOUNT3_H
#define ENGINE_MOUNT3_H

#include "net.h"

int mount3_dispatch(struct rpc_req *r, struct xdr_out *o);

#endif
