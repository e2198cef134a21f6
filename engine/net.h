/* net.h — TCP front-end: listeners, connections with RPC record marking,
 * a worker-thread pool serving many outstanding requests per connection,
 * and reply writing (writev, one probe hit per operation). */
#ifndef ENGINE_NET_H
#define ENGINE_NET_H

#include <stdint.h>
#include <sys/socket.h>

#include "objset.h"
#include "rpc.h"
#include "xdr.h"

/* Largest record accepted: a 1 MiB WRITE plus RPC and NFS headers. */
#define NET_MAX_RECORD (1024u * 1024u + 4096u)
/* Reply buffer: a 1 MiB READ plus headers and attributes. */
#define NET_REPLY_CAP (1024u * 1024u + 16384u)

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

/* Binds and listens on host:port (port 0 picks one); returns the fd, and the
 * bound address as "ADDR:PORT" in `bound`.  -1 with a message in err. */
int net_listen(const char *host, uint16_t port, char *bound, size_t boundsz, char *err, size_t errsz);
/* Decodes r->rec, runs the procedure and encodes the reply (with its record
 * mark) into reply[NET_REPLY_CAP]; -1 when the record is not an RPC call and
 * the connection should be closed.  *traced: report it to the nfs_ops probe. */
int net_process(struct rpc_req *r, uint8_t *reply, size_t *len, int *traced);
int net_start(const int *listen_fds, int nfds, int workers);
/* Stops accepting, closes connections, waits for in-flight requests, then ends the
 * workers, each firing its pending strata:nfs_ops batch. */
void net_stop(void);

#endif
