/* mount3.h — MOUNT v3 (RFC 1813 appendix I): NULL, MNT, DUMP, UMNT, UMNTALL, EXPORT. */
#ifndef ENGINE_MOUNT3_H
#define ENGINE_MOUNT3_H

#include "rpc_req.h"

/* Returns an accept_stat, or MOUNT3_DENIED: reply MSG_DENIED (AUTH_TOOWEAK). */
int mount3_dispatch(struct rpc_req *r, struct xdr_out *o);
#define MOUNT3_DENIED (-1)
/* Whether some export allows the address: DUMP and EXPORT answer only these,
 * and the front-end gives the others small limits (net.h). */
int mount3_client_allowed(const struct sockaddr_storage *client);

#endif
