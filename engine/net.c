/* net.c — listeners, connections, record marking, worker pool, replies.
 * One reader thread per connection splits the byte stream into RPC records
 * and queues them; worker threads decode, run the procedure and write the
 * reply (record mark and body in one send) under the connection's write lock. */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "mount3.h"
#include "nfs3.h"
#include "strata_probes.h"
#include "util.h"

#define CONN_MAX_INFLIGHT 64
#define MAX_FRAGMENTS 1024

struct conn {
	int fd;
	struct sockaddr_storage peer;
	pthread_mutex_t wlock;     /* serialises replies */
	pthread_mutex_t lock;      /* refs, inflight */
	pthread_cond_t cv;
	int refs, inflight, dead;
	struct conn *next, *prev;  /* all connections, for shutdown */
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv, idle_cv;
	struct rpc_req *head, *tail;
	int busy, stopping;
	int workers, exited, quit; /* quit: workers flush their probe batch and exit */
	struct conn *conns;
	int *listen_fds, nlisten;
} net = { .lock = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER,
	  .idle_cv = PTHREAD_COND_INITIALIZER };

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
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
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

static void conn_put(struct conn *c)
{
	pthread_mutex_lock(&c->lock);
	int last = --c->refs == 0;
	pthread_mutex_unlock(&c->lock);
	if (!last)
		return;
	pthread_mutex_lock(&net.lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		net.conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&net.lock);
	close(c->fd);
	pthread_mutex_destroy(&c->wlock);
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cv);
	__atomic_sub_fetch(&g_engine.ctr.connections_open, 1, __ATOMIC_RELAXED);
	free(c);
}

static void conn_kill(struct conn *c)
{
	c->dead = 1;
	shutdown(c->fd, SHUT_RDWR);
}

static void conn_send(struct conn *c, const uint8_t *buf, size_t len)
{
	pthread_mutex_lock(&c->wlock);
	size_t done = 0;
	while (!c->dead && done < len) {
		ssize_t w = send(c->fd, buf + done, len - done, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			conn_kill(c);
			break;
		}
		done += (size_t)w;
	}
	pthread_mutex_unlock(&c->wlock);
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
		if (stat != RPC_SUCCESS || o.err) {
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

/* Runs one request and sends its reply; -1 when the connection must close. */
static int serve(struct rpc_req *r, uint8_t *reply, struct strata_nfs_batch *batch)
{
	size_t len;
	int traced;
	if (net_process(r, reply, &len, &traced))
		return -1;
	conn_send(r->conn, reply, len);
	if (traced)
		probe_add(batch, r);
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

static void *worker(void *arg)
{
	uint8_t *reply = xmalloc(NET_REPLY_CAP);
	struct strata_nfs_batch *batch = xcalloc(1, sizeof(*batch));
	for (;;) {
		pthread_mutex_lock(&net.lock);
		while (!net.head && !net.quit)
			wait_for_work(batch);
		if (!net.head)
			break;
		struct rpc_req *r = net.head;
		net.head = r->next;
		if (!net.head)
			net.tail = NULL;
		net.busy++;
		pthread_mutex_unlock(&net.lock);

		struct conn *c = r->conn;
		if (serve(r, reply, batch))
			conn_kill(c);
		free(r->rec);
		free(r);

		pthread_mutex_lock(&c->lock);
		c->inflight--;
		pthread_cond_signal(&c->cv);
		pthread_mutex_unlock(&c->lock);
		conn_put(c);

		pthread_mutex_lock(&net.lock);
		net.busy--;
		if (!net.busy && !net.head)
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

static int read_full(int fd, void *buf, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = recv(fd, (uint8_t *)buf + done, n - done, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

/* Reads one RPC record (all fragments); NULL on EOF, error or oversize. */
static uint8_t *read_record(struct conn *c, uint32_t *len)
{
	uint8_t *rec = NULL;
	uint32_t total = 0;
	for (int frag = 0; frag < MAX_FRAGMENTS; frag++) {
		uint8_t hdr[4];
		if (read_full(c->fd, hdr, 4))
			break;
		uint32_t h = (uint32_t)hdr[0] << 24 | hdr[1] << 16 | hdr[2] << 8 | hdr[3];
		uint32_t flen = h & 0x7fffffffu;
		if (flen > NET_MAX_RECORD - total) {
			CTR_INC(bad_records);
			break;
		}
		rec = xrealloc(rec, total + flen);
		if (read_full(c->fd, rec + total, flen)) {
			if (total + flen)
				CTR_INC(bad_records);
			break;
		}
		total += flen;
		if (h & 0x80000000u) {
			*len = total;
			return rec;
		}
	}
	free(rec);
	return NULL;
}

static void *reader(void *arg)
{
	struct conn *c = arg;
	for (;;) {
		pthread_mutex_lock(&c->lock);
		while (c->inflight >= CONN_MAX_INFLIGHT && !c->dead)
			pthread_cond_wait(&c->cv, &c->lock);
		pthread_mutex_unlock(&c->lock);
		if (c->dead)
			break;
		uint32_t len;
		uint8_t *rec = read_record(c, &len);
		if (!rec)
			break;
		struct rpc_req *r = xcalloc(1, sizeof(*r));
		r->conn = c;
		r->client = &c->peer;
		r->rec = rec;
		r->reclen = len;
		pthread_mutex_lock(&c->lock);
		c->refs++;
		c->inflight++;
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_lock(&net.lock);
		if (net.stopping) { /* net_stop began: the workers may be gone; this one is not served */
			pthread_mutex_unlock(&net.lock);
			pthread_mutex_lock(&c->lock);
			c->refs--; /* never the last: this reader holds its own */
			c->inflight--;
			pthread_mutex_unlock(&c->lock);
			free(rec);
			free(r);
			break;
		}
		if (net.tail)
			net.tail->next = r;
		else
			net.head = r;
		net.tail = r;
		pthread_cond_signal(&net.cv);
		pthread_mutex_unlock(&net.lock);
	}
	conn_kill(c);
	conn_put(c);
	return NULL;
}

static void *acceptor(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE || errno == ENFILE) {
				if (errno == EMFILE || errno == ENFILE)
					usleep(10000);
				continue;
			}
			break; /* listener shut down */
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct conn *c = xcalloc(1, sizeof(*c));
		c->fd = fd;
		c->peer = ss;
		c->refs = 1;
		pthread_mutex_init(&c->wlock, NULL);
		pthread_mutex_init(&c->lock, NULL);
		pthread_cond_init(&c->cv, NULL);
		pthread_mutex_lock(&net.lock);
		if (net.stopping) {
			pthread_mutex_unlock(&net.lock);
			close(fd);
			free(c);
			continue;
		}
		c->next = net.conns;
		if (net.conns)
			net.conns->prev = c;
		net.conns = c;
		pthread_mutex_unlock(&net.lock);
		CTR_INC(connections);
		CTR_INC(connections_open);
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		if (pthread_create(&t, &attr, reader, c)) {
			conn_kill(c);
			conn_put(c);
		}
		pthread_attr_destroy(&attr);
	}
	return NULL;
}

int net_start(const int *listen_fds, int nfds, int workers)
{
	net.listen_fds = xcalloc((size_t)nfds, sizeof(int));
	memcpy(net.listen_fds, listen_fds, (size_t)nfds * sizeof(int));
	net.nlisten = nfds;
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
	for (int i = 0; i < nfds; i++) {
		pthread_t t;
		if (pthread_create(&t, &attr, acceptor, (void *)(intptr_t)listen_fds[i]))
			return -1;
	}
	pthread_attr_destroy(&attr);
	return 0;
}

void net_stop(void)
{
	pthread_mutex_lock(&net.lock);
	net.stopping = 1;
	for (int i = 0; i < net.nlisten; i++)
		shutdown(net.listen_fds[i], SHUT_RDWR);
	for (struct conn *c = net.conns; c; c = c->next)
		shutdown(c->fd, SHUT_RD);
	while (net.busy || net.head)
		pthread_cond_wait(&net.idle_cv, &net.lock);
	net.quit = 1;
	pthread_cond_broadcast(&net.cv);
	while (net.exited < net.workers)
		pthread_cond_wait(&net.idle_cv, &net.lock);
	pthread_mutex_unlock(&net.lock);
}
