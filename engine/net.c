/* net.c — listeners, the event loop, connections, record marking, the worker
 * pool and replies.  One loop thread (epoll) accepts and reads every connection
 * (non-blocking) and queues each complete RPC record on its connection; a fixed
 * pool of workers takes runnable connections round-robin, runs one request at a
 * time and sends the reply without blocking: what the socket does not take waits
 * in the connection's reply queue, which the loop drains as the socket drains.
 * A connection with too many unsent reply bytes or queued requests is not read
 * and not scheduled (backpressure); net_limits bound the rest (net.h). */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "mount3.h"
#include "netaddr.h"
#include "nfs3.h"
#include "strata_probes.h"
#include "util.h"

#define CONN_MAX_INFLIGHT 64            /* queued + running requests per connection */
#define CONN_MAX_REQ_BYTES (4u << 20)   /* bytes of queued request records per connection */
#define MAX_FRAGMENTS 1024
#define READ_CHUNK (256u << 10)         /* one recv into a record body */
#define READ_PER_EVENT (1u << 20)       /* bytes read from one connection before the next */
#define RECORD_FREE_BYTES (64u << 10)   /* a record this small never waits for record_mem */
#define EVICT_MIN_IDLE_NS 1000000000ull /* an idle connection evicted for a new one: idle this long */
#define SWEEP_NS 250000000ull           /* timeouts are checked this often */
#define STOP_GRACE_NS 1000000000ull     /* net_stop: time queued replies get to leave */
#define FDS_RESERVED 64                 /* descriptors kept for the pool, stats and the rest */
#define EV_WAKE 15                      /* epoll data below 16: a listener index, or the wake-up */

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
	struct conn *next, *prev; /* the loop's list */
	/* under lock */
	pthread_mutex_t lock;
	int refs, closing, queued, running, nreq;
	uint32_t mask;            /* epoll interest */
	uint64_t req_bytes, out_bytes;
	struct rpc_req *reqs, *reqs_tail;
	struct outbuf *out, *out_tail;
	struct conn *rq_next;     /* under net.lock: the run queue */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv, idle_cv;
	struct conn *rq_head, *rq_tail; /* connections with requests to run */
	int busy, stopping, quit;       /* quit: workers flush their probe batch and exit */
	int workers, exited;
	/* the loop's */
	int ep, wakefd, reserve_fd, nlisten, loop_quit;
	int *listen_fds;
	struct conn *conns;
	uint32_t nconns, nstarved, max_conns; /* max_conns: as configured, before fit_fd_limit */
	uint64_t last_sweep_ns;
	pthread_t loop;
	struct net_limits lim;
} net = { .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
	  .idle_cv = PTHREAD_COND_INITIALIZER, .ep = -1, .wakefd = -1, .reserve_fd = -1 };

#define GAUGE_ADD(field, n) __atomic_add_fetch(&g_engine.ctr.field, (n), __ATOMIC_RELAXED)
#define GAUGE_SUB(field, n) __atomic_sub_fetch(&g_engine.ctr.field, (n), __ATOMIC_RELAXED)
#define GAUGE(field) __atomic_load_n(&g_engine.ctr.field, __ATOMIC_RELAXED)

int net_listen(const char *host, uint16_t port, char *bound, size_t boundsz, char *err, size_t errsz)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_PASSIVE }, *ai;
	char portstr[8];
	snprintf(portstr, sizeof(portstr), "%u", port);
	int rc = getaddrinfo(host, portstr, &hints, &ai);
	if (rc) {
		snprintf(err, errsz, "bad listen address '%s': %s", host, gai_strerror(rc));
		return -1;
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 1024)) {
		snprintf(err, errsz, "cannot listen on %s:%u: %s", host, port, strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &sl);
	char addr[INET6_ADDRSTRLEN];
	uint16_t p;
	if (ss.ss_family == AF_INET6) {
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr, sizeof(addr));
		p = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		snprintf(bound, boundsz, "[%s]:%u", addr, p);
	} else {
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr, sizeof(addr));
		p = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		snprintf(bound, boundsz, "%s:%u", addr, p);
	}
	return fd;
}

static void wake_loop(void)
{
	uint64_t one = 1;
	if (write(net.wakefd, &one, sizeof(one)) < 0)
		return; /* the counter is full: the loop wakes anyway */
}

/* now - t, or 0 when t was stamped after now was read. */
static uint64_t since(uint64_t now, uint64_t t)
{
	return now > t ? now - t : 0;
}

static void touch(struct conn *c)
{
	__atomic_store_n(&c->last_active_ns, now_mono_ns(), __ATOMIC_RELAXED);
}

static void conn_put(struct conn *c)
{
	pthread_mutex_lock(&c->lock);
	int last = --c->refs == 0;
	pthread_mutex_unlock(&c->lock);
	if (!last)
		return;
	close(c->fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* Whether a worker may run the connection's next request (c->lock held): not
 * while its unsent replies and the largest replies of its running requests
 * could pass reply_queue (one request at a time always runs), nor add to its
 * unsent replies while all connections' reach reply_mem. */
static int runnable(const struct conn *c)
{
	uint64_t pending = c->out_bytes + (uint64_t)c->running * NET_REPLY_CAP;
	return !c->closing && c->nreq > 0 && pending < net.lim.reply_queue &&
	       (!c->out_bytes || GAUGE(queued_reply_bytes) < net.lim.reply_mem);
}

/* Appends a runnable connection to the run queue unless it is there (c->lock held). */
static void conn_schedule(struct conn *c)
{
	if (c->queued || !runnable(c))
		return;
	c->queued = 1;
	c->refs++;
	c->rq_next = NULL;
	pthread_mutex_lock(&net.lock);
	if (net.rq_tail)
		net.rq_tail->rq_next = c;
	else
		net.rq_head = c;
	net.rq_tail = c;
	pthread_cond_signal(&net.cv);
	pthread_mutex_unlock(&net.lock);
}

/* Sets the epoll interest from the state (c->lock held): writable while replies
 * wait; readable unless stopping, waiting for record_mem, or holding its most
 * requests or unsent reply bytes. */
static void conn_arm(struct conn *c)
{
	if (c->closing)
		return;
	int backlog = c->out_bytes >= net.lim.reply_queue;
	uint32_t want = c->out ? EPOLLOUT : 0;
	if (!__atomic_load_n(&net.stopping, __ATOMIC_RELAXED) && !c->starved && !backlog &&
	    c->nreq + c->running < CONN_MAX_INFLIGHT && c->req_bytes < CONN_MAX_REQ_BYTES)
		want |= EPOLLIN;
	if (want == c->mask)
		return;
	if ((c->mask & EPOLLIN) && !(want & EPOLLIN) && backlog)
		CTR_INC(net_backpressure);
	c->mask = want;
	struct epoll_event ev = { .events = want, .data.ptr = c };
	epoll_ctl(net.ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Marks the connection for closing (c->lock held); the loop sees the hang-up and closes it. */
static void conn_fail(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	shutdown(c->fd, SHUT_RDWR);
}

/* Sends queued replies until the socket would block (c->lock held); -1: the connection failed. */
static int conn_flush(struct conn *c)
{
	while (c->out) {
		struct outbuf *b = c->out;
		ssize_t w = send(c->fd, b->data + b->off, b->len - b->off, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		b->off += (size_t)w;
		c->out_bytes -= (uint64_t)w;
		GAUGE_SUB(queued_reply_bytes, (uint64_t)w);
		touch(c);
		if (b->off == b->len) {
			c->out = b->next;
			if (!c->out)
				c->out_tail = NULL;
			free(b);
		}
	}
	return 0;
}

/* Sends a reply, or what the socket does not take now joins the reply queue (c->lock held). */
static void conn_reply(struct conn *c, const uint8_t *buf, size_t len)
{
	size_t done = 0;
	while (!c->out && done < len) {
		ssize_t w = send(c->fd, buf + done, len - done, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (w <= 0) {
			conn_fail(c);
			return;
		}
		done += (size_t)w;
		touch(c);
	}
	if (done == len)
		return;
	struct outbuf *b = xmalloc(sizeof(*b) + len - done);
	b->next = NULL;
	b->len = len - done;
	b->off = 0;
	memcpy(b->data, buf + done, b->len);
	if (c->out_tail)
		c->out_tail->next = b;
	else
		c->out = b;
	c->out_tail = b;
	c->out_bytes += b->len;
	GAUGE_ADD(queued_reply_bytes, b->len);
}

/* Fires the worker's pending strata:nfs_ops batch, if a tracer still listens. */
static void probe_flush(struct strata_nfs_batch *b)
{
	if (b->count && STRATA_PROBE_ENABLED(nfs_ops))
		STRATA_PROBE(nfs_ops, b);
	b->count = 0;
}

/* Adds a completed operation to the worker's batch; fires it when full or when its
 * oldest operation is STRATA_NFS_BATCH_NS old (strata_probes.h). */
static void probe_add(struct strata_nfs_batch *b, const struct rpc_req *r)
{
	struct strata_nfs_op *op = &b->ops[b->count++];

	*op = (struct strata_nfs_op){
		.start_ns = r->start_ns, .end_ns = now_mono_ns(), .file_id = r->file_id,
		.bytes = r->bytes, .status = r->status, .prog = r->call.prog,
		.proc = (uint16_t)r->call.proc, .tiers = r->acct.tiers,
		.arc_hits = r->acct.arc_hits > 0xffff ? 0xffff : (uint16_t)r->acct.arc_hits,
		.arc_misses = r->acct.arc_misses > 0xffff ? 0xffff : (uint16_t)r->acct.arc_misses,
		.l2arc_hits = r->acct.l2arc_hits > 0xffff ? 0xffff : (uint16_t)r->acct.l2arc_hits,
	};
	if (r->client->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)r->client;
		op->family = AF_INET;
		memcpy(op->client, &a->sin_addr, 4);
		op->client_port = ntohs(a->sin_port);
	} else if (r->client->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)r->client;
		op->family = AF_INET6;
		memcpy(op->client, &a->sin6_addr, 16);
		op->client_port = ntohs(a->sin6_port);
	}
	if (b->count == STRATA_NFS_BATCH || op->end_ns - b->ops[0].end_ns >= STRATA_NFS_BATCH_NS)
		probe_flush(b);
}

int net_process(struct rpc_req *r, uint8_t *reply, size_t *len, int *traced_out)
{
	struct xdr_out o;
	xdr_out_init(&o, reply + 4, NET_REPLY_CAP - 4);
	xdr_in_init(&r->args, r->rec, r->reclen);
	enum rpc_decode d = rpc_decode_call(&r->args, &r->call);
	r->start_ns = now_mono_ns();
	int traced = 0;
	switch (d) {
	case RPC_DECODE_DROP:
		CTR_INC(bad_records);
		return -1;
	case RPC_DECODE_MISMATCH:
		rpc_put_denied_mismatch(&o, r->call.xid);
		CTR_INC(rpc_rejects);
		break;
	case RPC_DECODE_BADCRED:
	case RPC_DECODE_TOOWEAK:
		rpc_put_denied_auth(&o, r->call.xid, d == RPC_DECODE_BADCRED ? RPC_AUTH_BADCRED : RPC_AUTH_TOOWEAK);
		CTR_INC(rpc_rejects);
		break;
	case RPC_DECODE_OK: {
		uint32_t prog = r->call.prog;
		int known = prog == STRATA_PROG_NFS || prog == STRATA_PROG_MOUNT;
		traced = known && STRATA_PROBE_ENABLED(nfs_ops);
		if (!known) {
			rpc_put_accepted(&o, r->call.xid, RPC_PROG_UNAVAIL, 0, 0);
			CTR_INC(rpc_rejects);
			break;
		}
		if (r->call.vers != 3) {
			rpc_put_accepted(&o, r->call.xid, RPC_PROG_MISMATCH, 3, 3);
			CTR_INC(rpc_rejects);
			r->status = NFS3ERR_NOTSUPP;
			break;
		}
		rpc_put_accepted(&o, r->call.xid, RPC_SUCCESS, 0, 0);
		int stat = prog == STRATA_PROG_NFS ? nfs3_dispatch(r, &o) : mount3_dispatch(r, &o);
		if (stat == MOUNT3_DENIED) {
			xdr_out_init(&o, reply + 4, NET_REPLY_CAP - 4);
			rpc_put_denied_auth(&o, r->call.xid, RPC_AUTH_TOOWEAK);
			CTR_INC(rpc_rejects);
		} else if (stat != RPC_SUCCESS || o.err) {
			/* Re-write the reply as an RPC-level error. */
			xdr_out_init(&o, reply + 4, NET_REPLY_CAP - 4);
			rpc_put_accepted(&o, r->call.xid, o.err ? RPC_SYSTEM_ERR : (uint32_t)stat, 0, 0);
			CTR_INC(rpc_rejects);
			r->status = NFS3ERR_SERVERFAULT;
		} else if (r->status) {
			CTR_INC(nfs_errors);
		}
		if (prog == STRATA_PROG_NFS && r->call.proc < NFS3_NPROCS)
			CTR_INC(nfs_ops[r->call.proc]);
		else if (prog == STRATA_PROG_MOUNT && r->call.proc < MOUNT3_NPROCS)
			CTR_INC(mount_ops[r->call.proc]);
		break;
	}
	}
	uint32_t mark = (uint32_t)o.pos | 0x80000000u;
	reply[0] = mark >> 24;
	reply[1] = mark >> 16;
	reply[2] = mark >> 8;
	reply[3] = mark;
	*len = o.pos + 4;
	*traced_out = traced;
	return 0;
}

/* Waits for work with net.lock held. A pending probe batch is fired when it comes due
 * (STRATA_NFS_BATCH_NS after its first operation) unless work arrives first, so a
 * busy engine fills its batches and an idle one reports within that bound. */
static void wait_for_work(struct strata_nfs_batch *b)
{
	if (!b->count) {
		pthread_cond_wait(&net.cv, &net.lock);
		return;
	}
	uint64_t due = b->ops[0].end_ns + STRATA_NFS_BATCH_NS;
	if (now_mono_ns() < due) {
		struct timespec ts = { .tv_sec = (time_t)(due / 1000000000u), .tv_nsec = (long)(due % 1000000000u) };
		if (pthread_cond_timedwait(&net.cv, &net.lock, &ts) != ETIMEDOUT)
			return;
	}
	pthread_mutex_unlock(&net.lock);
	probe_flush(b);
	pthread_mutex_lock(&net.lock);
}

/* Runs the next request of a connection taken from the run queue and replies. */
static void run_one(struct conn *c, uint8_t *reply, struct strata_nfs_batch *batch)
{
	pthread_mutex_lock(&c->lock);
	c->queued = 0;
	struct rpc_req *r = c->closing ? NULL : c->reqs;
	if (r) {
		c->reqs = r->next;
		if (!c->reqs)
			c->reqs_tail = NULL;
		c->nreq--;
		c->req_bytes -= r->reclen;
		c->running++;
		conn_schedule(c); /* its next request goes to another worker */
	}
	pthread_mutex_unlock(&c->lock);
	if (!r)
		return;
	size_t len;
	int traced;
	int bad = net_process(r, reply, &len, &traced);
	pthread_mutex_lock(&c->lock);
	c->running--;
	if (bad)
		conn_fail(c);
	else if (!c->closing)
		conn_reply(c, reply, len);
	conn_schedule(c);
	conn_arm(c);
	pthread_mutex_unlock(&c->lock);
	if (!bad && traced)
		probe_add(batch, r);
	free(r->rec);
	free(r);
}

static void *worker(void *arg)
{
	uint8_t *reply = xmalloc(NET_REPLY_CAP);
	struct strata_nfs_batch *batch = xcalloc(1, sizeof(*batch));
	for (;;) {
		pthread_mutex_lock(&net.lock);
		while (!net.rq_head && !net.quit)
			wait_for_work(batch);
		if (!net.rq_head)
			break;
		struct conn *c = net.rq_head;
		net.rq_head = c->rq_next;
		if (!net.rq_head)
			net.rq_tail = NULL;
		net.busy++;
		pthread_mutex_unlock(&net.lock);

		run_one(c, reply, batch);
		conn_put(c); /* the run queue's reference */

		pthread_mutex_lock(&net.lock);
		net.busy--;
		if (!net.busy && !net.rq_head)
			pthread_cond_broadcast(&net.idle_cv);
		pthread_mutex_unlock(&net.lock);
	}
	/* net_stop: the queue is drained; report what this worker still holds. */
	pthread_mutex_unlock(&net.lock);
	probe_flush(batch);
	free(batch);
	free(reply);
	pthread_mutex_lock(&net.lock);
	net.exited++;
	pthread_cond_broadcast(&net.idle_cv);
	pthread_mutex_unlock(&net.lock);
	return arg;
}

/* --- the event loop: everything below runs on its thread only --- */

static struct conn *graveyard; /* closed this round; their loop reference is dropped after it */

static void drop_record(struct conn *c)
{
	if (c->reccap)
		GAUGE_SUB(unfinished_record_bytes, c->reccap);
	free(c->rec);
	c->rec = NULL;
	c->reclen = c->reccap = c->nfrags = c->hdrlen = c->frag_left = 0;
	c->in_body = c->last_frag = 0;
	c->rec_start_ns = 0;
}

static void conn_close(struct conn *c)
{
	if (c->closed)
		return;
	c->closed = 1;
	epoll_ctl(net.ep, EPOLL_CTL_DEL, c->fd, NULL);
	shutdown(c->fd, SHUT_RDWR);
	pthread_mutex_lock(&c->lock);
	c->closing = 1;
	for (struct rpc_req *r = c->reqs, *n; r; r = n) {
		n = r->next;
		free(r->rec);
		free(r);
	}
	c->reqs = c->reqs_tail = NULL;
	c->nreq = 0;
	c->req_bytes = 0;
	for (struct outbuf *b = c->out, *n; b; b = n) {
		n = b->next;
		free(b);
	}
	c->out = c->out_tail = NULL;
	GAUGE_SUB(queued_reply_bytes, c->out_bytes);
	c->out_bytes = 0;
	pthread_mutex_unlock(&c->lock);
	drop_record(c);
	if (c->starved)
		net.nstarved--;
	if (c->prev)
		c->prev->next = c->next;
	else
		net.conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	net.nconns--;
	netaddr_put(c->addr);
	__atomic_sub_fetch(&g_engine.ctr.connections_open, 1, __ATOMIC_RELAXED);
	c->next = graveyard;
	graveyard = c;
}

/* Drops the loop's references of the connections closed this round (their
 * events in the round were skipped; the descriptor closes with the last reference). */
static void bury(void)
{
	while (graveyard) {
		struct conn *c = graveyard;
		graveyard = c->next;
		conn_put(c);
	}
}

/* A finished record joins the connection's requests. */
static void record_done(struct conn *c)
{
	struct rpc_req *r = xcalloc(1, sizeof(*r));
	r->conn = c;
	r->client = &c->peer;
	r->rec = c->rec;
	r->reclen = c->reclen;
	c->rec = NULL;
	drop_record(c);
	pthread_mutex_lock(&c->lock);
	if (c->reqs_tail)
		c->reqs_tail->next = r;
	else
		c->reqs = r;
	c->reqs_tail = r;
	c->nreq++;
	c->req_bytes += r->reclen;
	conn_schedule(c);
	conn_arm(c);
	pthread_mutex_unlock(&c->lock);
}

/* Room for `want` more bytes of the record; -1 when the connection must wait
 * for record_mem (records up to RECORD_FREE_BYTES never wait). */
static int record_reserve(struct conn *c, uint32_t want)
{
	uint32_t need = c->reclen + want;
	if (need <= c->reccap)
		return 0;
	uint32_t cap = c->reccap ? c->reccap * 2 : 4096;
	if (cap < need)
		cap = need;
	if (cap > c->reclen + c->frag_left)
		cap = c->reclen + c->frag_left;
	if (cap > RECORD_FREE_BYTES && GAUGE(unfinished_record_bytes) + (cap - c->reccap) > net.lim.record_mem) {
		pthread_mutex_lock(&c->lock);
		c->starved = 1;
		conn_arm(c);
		pthread_mutex_unlock(&c->lock);
		net.nstarved++;
		CTR_INC(net_record_waits);
		return -1;
	}
	c->rec = xrealloc(c->rec, cap);
	GAUGE_ADD(unfinished_record_bytes, cap - c->reccap);
	c->reccap = cap;
	return 0;
}

/* Reads what the connection has (up to READ_PER_EVENT bytes) and queues each
 * complete record; -1 when it must close (end of stream, error, bad record). */
static int conn_read(struct conn *c)
{
	uint32_t limit = c->trusted ? NET_MAX_RECORD : NET_UNTRUSTED_RECORD;
	uint32_t budget = READ_PER_EVENT;
	for (;;) {
		if (c->in_body && !c->frag_left) {
			c->in_body = 0;
			if (c->last_frag) {
				record_done(c);
				if (!(c->mask & EPOLLIN))
					return 0;
			}
			continue;
		}
		if (!budget)
			return 0; /* level-triggered: the rest on the next round */
		ssize_t n;
		if (c->in_body) {
			uint32_t want = c->frag_left < READ_CHUNK ? c->frag_left : READ_CHUNK;
			if (record_reserve(c, want))
				return 0;
			n = recv(c->fd, c->rec + c->reclen, want, 0);
		} else {
			n = recv(c->fd, c->hdr + c->hdrlen, 4 - c->hdrlen, 0);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		if (n == 0) {
			if (c->in_body || c->reclen)
				CTR_INC(bad_records); /* truncated */
			return -1;
		}
		touch(c);
		if (!c->rec_start_ns)
			c->rec_start_ns = now_mono_ns();
		if (c->in_body) {
			c->reclen += (uint32_t)n;
			c->frag_left -= (uint32_t)n;
		} else if ((c->hdrlen += (uint32_t)n) == 4) {
			uint32_t h = (uint32_t)c->hdr[0] << 24 | c->hdr[1] << 16 | c->hdr[2] << 8 | c->hdr[3];
			uint32_t flen = h & 0x7fffffffu;
			c->hdrlen = 0;
			if (flen > limit - c->reclen || ++c->nfrags > MAX_FRAGMENTS) {
				CTR_INC(bad_records);
				return -1;
			}
			c->frag_left = flen;
			c->last_frag = !!(h & 0x80000000u);
			c->in_body = 1;
		}
		budget -= (uint32_t)n < budget ? (uint32_t)n : budget;
	}
}

/* Nothing running, queued, unsent or half-read (c->lock taken). */
static int conn_quiet(struct conn *c)
{
	pthread_mutex_lock(&c->lock);
	int quiet = !c->running && !c->nreq && !c->out;
	pthread_mutex_unlock(&c->lock);
	return quiet && !c->rec_start_ns;
}

/* Closes the connection idle the longest (at least EVICT_MIN_IDLE_NS) to make room; 0: none. */
static int evict_idle(void)
{
	uint64_t now = now_mono_ns();
	struct conn *oldest = NULL;
	uint64_t oldest_t = 0;
	for (struct conn *c = net.conns; c; c = c->next) {
		uint64_t t = __atomic_load_n(&c->last_active_ns, __ATOMIC_RELAXED);
		if (since(now, t) >= EVICT_MIN_IDLE_NS && (!oldest || t < oldest_t) && conn_quiet(c)) {
			oldest = c;
			oldest_t = t;
		}
	}
	if (!oldest)
		return 0;
	CTR_INC(net_evicted);
	conn_close(oldest);
	return 1;
}

static void admit(int fd, const struct sockaddr_storage *ss)
{
	int trusted = mount3_client_allowed(ss);
	struct netaddr *a = netaddr_get(ss);
	a->count++;
	uint32_t per_addr = net.lim.max_conns_per_addr;
	if (!trusted && per_addr > NET_UNTRUSTED_PER_ADDR)
		per_addr = NET_UNTRUSTED_PER_ADDR;
	if (a->count > per_addr || (net.nconns >= net.lim.max_conns && !(trusted && evict_idle()))) {
		if (a->count > per_addr)
			CTR_INC(net_refused_per_addr);
		else
			CTR_INC(net_refused);
		netaddr_put(a);
		close(fd);
		return;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	struct conn *c = xcalloc(1, sizeof(*c));
	c->fd = fd;
	c->peer = *ss;
	c->trusted = trusted;
	c->addr = a;
	c->refs = 1; /* the loop's, dropped by bury() */
	c->mask = EPOLLIN;
	c->last_active_ns = now_mono_ns();
	pthread_mutex_init(&c->lock, NULL);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	if (epoll_ctl(net.ep, EPOLL_CTL_ADD, fd, &ev)) {
		netaddr_put(a);
		pthread_mutex_destroy(&c->lock);
		free(c);
		close(fd);
		CTR_INC(net_refused);
		return;
	}
	c->next = net.conns;
	if (net.conns)
		net.conns->prev = c;
	net.conns = c;
	net.nconns++;
	CTR_INC(connections);
	CTR_INC(connections_open);
}

/* No descriptor left for a new connection: an idle one makes room, or else the
 * reserved descriptor takes the newcomer only to close it, so that it is told at
 * once instead of waiting in the backlog of a listener that stays readable. */
static void out_of_fds(int lfd)
{
	if (evict_idle())
		return; /* its descriptor closes after this round; the listener stays readable */
	if (net.reserve_fd >= 0)
		close(net.reserve_fd);
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		CTR_INC(net_refused);
	}
	net.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

static void accept_ready(int lfd)
{
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
			continue;
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				out_of_fds(lfd);
			return;
		}
		admit(fd, &ss);
	}
}

/* Fits max_conns under the descriptor limit (which prlimit may change at any
 * time), FDS_RESERVED below it; `raise`: first lift the limit to its maximum. */
static void fit_fd_limit(int raise)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (raise && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
		getrlimit(RLIMIT_NOFILE, &rl);
	}
	rlim_t room = rl.rlim_cur > 2 * FDS_RESERVED ? rl.rlim_cur - FDS_RESERVED : rl.rlim_cur / 2;
	net.lim.max_conns = net.max_conns;
	if (rl.rlim_cur != RLIM_INFINITY && net.lim.max_conns > room)
		net.lim.max_conns = (uint32_t)room;
}

/* Record and idle timeouts; connections a worker marked for closing. */
static void sweep(uint64_t now)
{
	uint64_t record_ns = net.lim.record_timeout_ms * 1000000ull;
	uint64_t idle_ns = net.lim.idle_timeout_ms * 1000000ull;
	for (struct conn *c = net.conns, *next; c; c = next) {
		next = c->next;
		uint64_t last = __atomic_load_n(&c->last_active_ns, __ATOMIC_RELAXED);
		pthread_mutex_lock(&c->lock);
		int closing = c->closing, running = c->running;
		pthread_mutex_unlock(&c->lock);
		if (closing) {
			conn_close(c);
		} else if (c->rec_start_ns && since(now, c->rec_start_ns) > record_ns) {
			CTR_INC(net_record_timeouts);
			conn_close(c);
		} else if (since(now, last) > idle_ns && !running) {
			CTR_INC(net_idle_closed);
			conn_close(c);
		}
	}
}

/* Connections that waited for record_mem read again. */
static void resume_starved(void)
{
	for (struct conn *c = net.conns; c && net.nstarved; c = c->next) {
		if (!c->starved)
			continue;
		pthread_mutex_lock(&c->lock);
		c->starved = 0;
		conn_arm(c);
		pthread_mutex_unlock(&c->lock);
		net.nstarved--;
	}
}

/* net_stop began: no more accepting or reading. */
static void stop_reading(void)
{
	for (int i = 0; i < net.nlisten; i++) {
		epoll_ctl(net.ep, EPOLL_CTL_DEL, net.listen_fds[i], NULL);
		shutdown(net.listen_fds[i], SHUT_RDWR);
	}
	for (struct conn *c = net.conns; c; c = c->next) {
		pthread_mutex_lock(&c->lock);
		conn_arm(c);
		pthread_mutex_unlock(&c->lock);
	}
}

static void *event_loop(void *arg)
{
	struct epoll_event evs[256];
	int stopped = 0;
	uint64_t quit_by = 0;
	for (;;) {
		int n = epoll_wait(net.ep, evs, 256, 100);
		uint64_t now = now_mono_ns();
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;
			if (tag == EV_WAKE) {
				uint64_t v;
				ssize_t rd = read(net.wakefd, &v, sizeof(v));
				(void)rd; /* only wakes the loop */
				continue;
			}
			if (tag < EV_WAKE) {
				if (!stopped)
					accept_ready(net.listen_fds[tag]);
				continue;
			}
			struct conn *c = evs[i].data.ptr;
			if (c->closed)
				continue;
			if (evs[i].events & (EPOLLERR | EPOLLHUP)) {
				conn_close(c);
				continue;
			}
			if (evs[i].events & EPOLLOUT) {
				pthread_mutex_lock(&c->lock);
				if (conn_flush(c))
					conn_fail(c);
				conn_schedule(c);
				conn_arm(c);
				pthread_mutex_unlock(&c->lock);
			}
			if ((evs[i].events & EPOLLIN) && conn_read(c))
				conn_close(c);
		}
		if (!stopped && __atomic_load_n(&net.stopping, __ATOMIC_RELAXED)) {
			stopped = 1;
			stop_reading();
		}
		if (since(now, net.last_sweep_ns) >= SWEEP_NS) {
			fit_fd_limit(0);
			sweep(now);
			net.last_sweep_ns = now;
		}
		bury();
		if (net.nstarved && GAUGE(unfinished_record_bytes) + RECORD_FREE_BYTES <= net.lim.record_mem)
			resume_starved();
		if (__atomic_load_n(&net.loop_quit, __ATOMIC_RELAXED)) {
			if (!quit_by)
				quit_by = now + STOP_GRACE_NS;
			if (!GAUGE(queued_reply_bytes) || now >= quit_by)
				break;
		}
	}
	while (net.conns)
		conn_close(net.conns);
	bury();
	/* Connections queued after the workers left: only their references remain. */
	while (net.rq_head) {
		struct conn *c = net.rq_head;
		net.rq_head = c->rq_next;
		conn_put(c);
	}
	net.rq_tail = NULL;
	return arg;
}

int net_start(const int *listen_fds, int nfds, int workers, const struct net_limits *lim)
{
	if (nfds >= EV_WAKE)
		return -1;
	net.lim = *lim;
	net.max_conns = lim->max_conns;
	fit_fd_limit(1);
	net.listen_fds = xcalloc((size_t)nfds, sizeof(int));
	memcpy(net.listen_fds, listen_fds, (size_t)nfds * sizeof(int));
	net.nlisten = nfds;
	net.ep = epoll_create1(EPOLL_CLOEXEC);
	net.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	net.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (net.ep < 0 || net.wakefd < 0)
		return -1;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV_WAKE };
	if (epoll_ctl(net.ep, EPOLL_CTL_ADD, net.wakefd, &ev))
		return -1;
	for (int i = 0; i < nfds; i++) {
		fcntl(listen_fds[i], F_SETFL, fcntl(listen_fds[i], F_GETFL) | O_NONBLOCK);
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = (uint64_t)i };
		if (epoll_ctl(net.ep, EPOLL_CTL_ADD, listen_fds[i], &ev))
			return -1;
	}
	pthread_condattr_t ca; /* work waits are timed on the probes' clock (wait_for_work) */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&net.cv, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (int i = 0; i < workers; i++) {
		pthread_t t;
		if (pthread_create(&t, &attr, worker, NULL))
			return -1;
		net.workers++;
	}
	pthread_attr_destroy(&attr);
	return pthread_create(&net.loop, NULL, event_loop, NULL) ? -1 : 0;
}

void net_stop(void)
{
	pthread_mutex_lock(&net.lock);
	__atomic_store_n(&net.stopping, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&net.lock);
	wake_loop();
	pthread_mutex_lock(&net.lock);
	while (net.busy || net.rq_head)
		pthread_cond_wait(&net.idle_cv, &net.lock);
	net.quit = 1;
	pthread_cond_broadcast(&net.cv);
	while (net.exited < net.workers)
		pthread_cond_wait(&net.idle_cv, &net.lock);
	pthread_mutex_unlock(&net.lock);
	__atomic_store_n(&net.loop_quit, 1, __ATOMIC_RELAXED);
	wake_loop();
	pthread_join(net.loop, NULL);
}
