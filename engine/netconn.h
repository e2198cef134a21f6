/* netconn.h — a connection of the front-end as the workers (net.c) and the
 * event loop (netloop.c) share it: the record being read, queued requests,
 * unsent replies, references; and what both do to it (netconn.c).  Private to them. */
#ifndef ENGINE_NETCONN_H
#define ENGINE_NETCONN_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include "engine.h"
#include "netaddr.h"
#include "netlimits.h"
#include "rpc_req.h"
#include "util.h"

#define CONN_MAX_INFLIGHT 64            /* queued + running requests per connection */
#define CONN_MAX_REQ_BYTES (4u << 20)   /* bytes of queued request records per connection */

struct outbuf {
	struct outbuf *next;
	size_t len, off;
	uint8_t data[];
};

struct conn {
	int fd, trusted; /* trusted: some export allows the peer */
	struct sockaddr_storage peer;
	struct netaddr *addr;
	/* the loop's: the record being read */
	uint8_t hdr[4];
	uint32_t hdrlen, frag_left, nfrags;
	int in_body, last_frag;
	uint8_t *rec;
	uint32_t reclen, reccap;
	uint64_t rec_start_ns;    /* first byte of the unfinished record; 0: none */
	uint64_t last_active_ns;  /* a byte read or sent (atomic) */
	int closed, starved;      /* closed: left the loop; starved: waits for record_mem */
	int inline_left;          /* requests it may still run on the loop's thread this read */
	struct conn *next, *prev; /* the loop's list */
	/* under lock */
	pthread_mutex_t lock;
	int refs, closing, queued, running, nreq;
	uint32_t mask;            /* epoll interest */
	uint64_t req_bytes, out_bytes;
	struct rpc_req *reqs, *reqs_tail;
	struct outbuf *out, *out_tail;
	struct conn *rq_next;     /* under the workers' lock: the run queue (net.c) */
};

#define GAUGE_ADD(field, n) __atomic_add_fetch(&g_engine.ctr.field, (n), __ATOMIC_RELAXED)
#define GAUGE_SUB(field, n) __atomic_sub_fetch(&g_engine.ctr.field, (n), __ATOMIC_RELAXED)
#define GAUGE(field) __atomic_load_n(&g_engine.ctr.field, __ATOMIC_RELAXED)

extern struct net_limits net_lim; /* net_start's, max_conns fitted to the descriptor limit */
/* The loop's epoll instance, and whether it still reads (set by netloop.c). */
extern struct conn_poll {
	int ep, stopping;
} conn_poll;

static inline void conn_touch(struct conn *c)
{
	__atomic_store_n(&c->last_active_ns, clock_mono_ns(), __ATOMIC_RELAXED);
}

/* References, failure, replies and the epoll interest (c->lock held where said). */
void conn_put(struct conn *c);
/* Marks the connection for closing (c->lock held); the loop sees the hang-up and closes it. */
void conn_fail(struct conn *c);
/* Sends queued replies until the socket would block (c->lock held); -1: the connection failed. */
int conn_flush(struct conn *c);
/* Sets the epoll interest from the connection's state (c->lock held). */
void conn_arm(struct conn *c);

#endif
