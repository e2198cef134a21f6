/* netconn.h — a connection of the front-end as the workers (net.c) and the
 * event loop (netloop.c) share it: the record being read, queued requests,
 * unsent replies, references; and the calls between the two.  Private to them. */
#ifndef ENGINE_NETCONN_H
#define ENGINE_NETCONN_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include "engine.h"
#include "net.h"
#include "netaddr.h"
#include "util.h"

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

static inline void conn_touch(struct conn *c)
{
	__atomic_store_n(&c->last_active_ns, clock_mono_ns(), __ATOMIC_RELAXED);
}

/* net.c: references, the run queue and replies (c->lock held where said). */
void conn_put(struct conn *c);
/* Appends a runnable connection to the run queue unless it is there (c->lock held). */
void conn_schedule(struct conn *c);
/* Marks the connection for closing (c->lock held); the loop sees the hang-up and closes it. */
void conn_fail(struct conn *c);
/* Sends queued replies until the socket would block (c->lock held); -1: the connection failed. */
int conn_flush(struct conn *c);

/* net.c: requests run on the loop's thread, which alone calls these. */
/* Runs r (of c, c->lock not held) now if it needs no wait and c may take its reply:
 * 0, r is done and freed, its reply gathered for net_inline_flush; -1: r is the
 * caller's, for the workers. */
int net_inline_run(struct conn *c, struct rpc_req *r);
/* Sends the gathered replies (c->lock not held). */
void net_inline_flush(void);
/* Fires the loop's probe batch if due (or `force`); returns the ms until it is due, -1: none. */
int net_inline_tick(uint64_t now, int force);

/* netloop.c: the epoll interest (c->lock held) and the loop's life. */
void conn_arm(struct conn *c);
/* Starts the loop thread: accepting on listen_fds, reading every connection. */
int netloop_start(const int *listen_fds, int nfds);
/* No more accepting or reading. */
void netloop_stop_reading(void);
/* Gives unsent replies a moment, closes every connection, ends the loop thread. */
void netloop_quit(void);

#endif
