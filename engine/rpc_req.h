/* rpc_req.h — one RPC request as the front-end (net.c, netloop.c) hands it to the
 * procedures (nfs3.c, mount3.c, fh.c): the connection it came on, its client, the
 * decoded call header and argument decoder, and what the procedure reports back for
 * the nfs_ops probe and the counters.  Its own header so that the procedures need
 * nothing of the front-end. */
#ifndef ENGINE_RPC_REQ_H
#define ENGINE_RPC_REQ_H

#include <stdint.h>
#include <sys/socket.h>

#include "objset.h"
#include "rpc.h"
#include "xdr.h"

struct conn;

struct rpc_req {
	struct conn *conn;
	const struct sockaddr_storage *client;
	struct rpc_call call;
	struct xdr_in args;
	uint8_t *rec;
	uint32_t reclen;
	uint64_t start_ns;
	/* filled by the procedure for the nfs_ops probe and the counters */
	uint32_t status, bytes;
	uint64_t file_id;
	struct io_acct acct;
	struct rpc_req *next;
};

#endif
