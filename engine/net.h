/* net.h — TCP front-end: listeners, one event loop for every connection
 * (RPC record marking, requests that need no wait run on it, non-blocking
 * replies with a queue per connection), a fixed worker pool for the requests
 * that may wait, the limits that bound what a client can hold, and one probe
 * hit per operation. */
#ifndef ENGINE_NET_H
#define ENGINE_NET_H

#include <stdint.h>
#include <sys/socket.h>

#include "netlimits.h"
#include "rpc_req.h"

/* Binds and listens on host:port (port 0 picks one); returns the fd, and the
 * bound address as "ADDR:PORT" in `bound`.  -1 with a message in err. */
int net_listen(const char *host, uint16_t port, char *bound, size_t boundsz, char *err, size_t errsz);
/* Decodes r->rec, runs the procedure and encodes the reply (with its record
 * mark) into reply[NET_REPLY_CAP]; -1 when the record is not an RPC call and
 * the connection should be closed.  *traced: report it to the nfs_ops probe.
 * With r->acct.nowait, 1 when the request would wait (nfs3_dispatch's
 * NFS3_WOULD_BLOCK, or a MOUNT call): nothing ran; it is to run without. */
int net_process(struct rpc_req *r, uint8_t *reply, size_t *len, int *traced);
/* Starts the event loop (accepting on listen_fds) and `workers` workers (netloop.c). */
int net_start(const int *listen_fds, int nfds, int workers, const struct net_limits *lim);
/* Stops accepting and reading, waits for queued and running requests, ends the
 * workers (the first to leave fires the pending strata:nfs_ops batch), gives
 * queued replies a moment to leave, then closes every connection. */
void net_stop(void);

/* The workers (net.c), as the event loop (netloop.c) drives them. */
struct conn;
/* Appends a runnable connection to the run queue unless it is there (c->lock held). */
void conn_schedule(struct conn *c);
/* Runs r (of c, c->lock not held) now if it needs no wait and c may take its reply:
 * 0, r is done and freed, its reply gathered for net_inline_flush; -1: r is the
 * caller's, for the workers.  Called on the loop's thread alone, as are the two below. */
int net_inline_run(struct conn *c, struct rpc_req *r);
/* Sends the gathered replies (c->lock not held). */
void net_inline_flush(void);
/* Fires the loop's probe batch if due (or `force`), and the workers' if due and no worker
 * fired it; returns the ms until the loop should look again, -1: no need. */
int net_inline_tick(uint64_t now, int force);
/* Starts `workers` workers; -1 if a thread could not be made. */
int net_workers_start(int workers);
/* Waits for queued and running requests, then ends the workers (the first to
 * leave fires the pending strata:nfs_ops batch). */
void net_workers_stop(void);
/* Drops the connections queued after the workers left (only their references remain). */
void net_workers_release(void);

#endif
