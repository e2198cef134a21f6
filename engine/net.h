/* net.h — TCP front-end: listeners, one event loop for every connection
 * (RPC record marking, requests that need no wait run on it, non-blocking
 * replies with a queue per connection), a fixed worker pool for the requests
 * that may wait, the limits that bound what a client can hold, and one probe
 * hit per operation. */
#ifndef ENGINE_NET_H
#define ENGINE_NET_H

#include <stdint.h>
#include <sys/socket.h>

#include "rpc_req.h"

/* Largest record accepted: a 1 MiB WRITE plus RPC and NFS headers. */
#define NET_MAX_RECORD (1024u * 1024u + 4096u)
/* Reply buffer: a 1 MiB READ plus headers and attributes. */
#define NET_REPLY_CAP (1024u * 1024u + 16384u)
/* Largest record from an address no export allows (MOUNT and NULL fit). */
#define NET_UNTRUSTED_RECORD 4096u
/* Connections at once from one address no export allows, and from all such
 * addresses: at most max_conns / NET_UNTRUSTED_SHARE. */
#define NET_UNTRUSTED_PER_ADDR 4u
#define NET_UNTRUSTED_SHARE 8u

/* What clients may hold; net_start takes them, serve sets them from flags. */
struct net_limits {
	uint32_t max_conns;          /* connections at once (lowered to fit RLIMIT_NOFILE) */
	uint32_t max_conns_per_addr; /* from one client address */
	uint64_t record_mem;         /* bytes of unfinished records, all connections */
	uint64_t reply_queue;        /* unsent reply bytes at which a connection stops being read */
	uint64_t reply_mem;          /* unsent reply bytes, all connections */
	uint64_t record_timeout_ms;  /* a record's first byte to its last */
	uint64_t idle_timeout_ms;    /* no byte moved and nothing running: closed */
};
#define NET_LIMITS_DEFAULT { .max_conns = 4096, .max_conns_per_addr = 256, \
	.record_mem = 64ull << 20, .reply_queue = 4ull << 20, .reply_mem = 128ull << 20, \
	.record_timeout_ms = 30000, .idle_timeout_ms = 600000 }

/* Binds and listens on host:port (port 0 picks one); returns the fd, and the
 * bound address as "ADDR:PORT" in `bound`.  -1 with a message in err. */
int net_listen(const char *host, uint16_t port, char *bound, size_t boundsz, char *err, size_t errsz);
/* Decodes r->rec, runs the procedure and encodes the reply (with its record
 * mark) into reply[NET_REPLY_CAP]; -1 when the record is not an RPC call and
 * the connection should be closed.  *traced: report it to the nfs_ops probe.
 * With r->acct.nowait, 1 when the request would wait (nfs3_dispatch's
 * NFS3_WOULD_BLOCK, or a MOUNT call): nothing ran; it is to run without. */
int net_process(struct rpc_req *r, uint8_t *reply, size_t *len, int *traced);
/* Starts the event loop (accepting on listen_fds) and `workers` workers. */
int net_start(const int *listen_fds, int nfds, int workers, const struct net_limits *lim);
/* Stops accepting and reading, waits for queued and running requests, ends the
 * workers (the first to leave fires the pending strata:nfs_ops batch), gives
 * queued replies a moment to leave, then closes every connection. */
void net_stop(void);

#endif
