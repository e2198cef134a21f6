/* net.c — listeners, the worker pool and replies.  A request whose reply is
 * ready from memory (NULL, GETATTR, ACCESS, a READ of at most 64 KiB from the
 * ARC or dirty records) runs to completion on the event loop's thread that read
 * it (net_inline_run), and the replies of one connection's round leave in one
 * send.  Why: handing every request from the loop to a worker cost two context
 * switches and a wake-up per operation (measured under bench/engine_vs_ganesha.sh
 * at 4 clients x 8 threads: 2.0 switches and 19-29 us of engine CPU per op, about
 * 60 % of it in the scheduler's switch and wake-up paths; run to completion: 0.05
 * switches and 5.6 us per op).  Everything that can wait (writes, COMMIT, misses
 * that read a device, a busy object lock, MOUNT, injected delays, bigger READs)
 * says so before it changes anything (nfs3_dispatch's NFS3_WOULD_BLOCK) and goes
 * to the workers, so one slow request holds no other connection.
 * A fixed pool of workers takes runnable connections (netconn.h) round-robin off
 * one run queue, runs one request of each (decode, procedure, encode) and sends
 * the reply without blocking: what the socket does not take now waits in the
 * connection's reply queue, which the event loop (netloop.c) drains.  A
 * connection whose unsent replies could pass reply_queue is not scheduled, nor
 * run on the loop.  Completed operations join one batch shared by the workers
 * (under the run queue's lock, which they take after each request anyway), or
 * the loop's own; the thread that fills it, or finds it due, fires the
 * strata:nfs_ops probe outside the lock. */
#include "net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "mount3.h"
#include "netconn.h"
#include "nfs3.h"
#include "strata_probes.h"
#include "util.h"

static struct {
	pthread_mutex_t lock;
	pthread_cond_t cv, idle_cv;
	pthread_cond_t timer_cv;        /* the worker that keeps the batch timer waits here */
	struct conn *rq_head, *rq_tail; /* connections with requests to run */
	int waiting;                    /* workers waiting on cv */
	int busy, quit;                 /* quit: workers fire the pending probe batch and exit */
	int workers, exited;
	struct strata_nfs_batch *batch; /* operations of all workers not yet reported */
	int batch_timer;                /* a worker waits on timer_cv to fire the batch when due */
	uint64_t batch_due;             /* when the batch comes due, 0 while it is empty (atomic: the
	                                 * event loop fires it when no worker is free to) */
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

/* Whether a worker may run the connection's next request (c->lock held): not
 * while its unsent replies and the largest replies of its running requests
 * could pass reply_queue (one request at a time always runs), nor add to its
 * unsent replies while all connections' reach reply_mem. */
static int runnable(const struct conn *c)
{
	uint64_t pending = c->out_bytes + (uint64_t)c->running * NET_REPLY_CAP;
	return !c->closing && c->nreq > 0 && pending < net_lim.reply_queue &&
	       (!c->out_bytes || GAUGE(queued_reply_bytes) < net_lim.reply_mem);
}

void conn_schedule(struct conn *c)
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
	if (net.waiting || !net.batch_timer)
		pthread_cond_signal(&net.cv);
	else
		pthread_cond_signal(&net.timer_cv); /* the only idle worker keeps the timer */
	pthread_mutex_unlock(&net.lock);
}

/* Sends a reply, or what the socket does not take now joins the reply queue (c->lock
 * held). Returns whether the whole reply went out now. */
static int conn_reply(struct conn *c, const uint8_t *buf, size_t len)
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
			return 0;
		}
		done += (size_t)w;
		conn_touch(c);
	}
	if (done == len)
		return 1;
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
	return 0;
}

/* Describes a completed operation for the strata:nfs_ops probe. end_ns: the clock just
 * before its reply was sent (so the client cannot have seen the reply earlier), or 0
 * (queued, not sent yet: now). */
static void probe_op(struct strata_nfs_op *op, const struct rpc_req *r, uint64_t end_ns)
{
	*op = (struct strata_nfs_op){
		.start_ns = r->start_ns, .end_ns = end_ns >= r->start_ns ? end_ns : clock_mono_ns(),
		.file_id = r->file_id,
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
}

/* An empty batch, page-aligned so that each of its operations is on a line of its own. */
static struct strata_nfs_batch *batch_new(void)
{
	struct strata_nfs_batch *b = xaligned(sizeof(*b));
	strata_nfs_batch_empty(b);
	return b;
}

/* Takes the shared batch for firing (net.lock held): the worker's empty spare
 * becomes the shared batch, and the taken one is returned through *spare. */
static void batch_take(struct strata_nfs_batch **spare)
{
	struct strata_nfs_batch *full = net.batch;

	net.batch = *spare;
	*spare = full;
	__atomic_store_n(&net.batch_due, 0, __ATOMIC_RELAXED);
}

/* Fires a taken batch (net.lock not held), if a tracer still listens; empties it. The
 * clock across the hit, counted, tells what the tracer's hits take of the engine's threads. */
static void batch_fire(struct strata_nfs_batch *b)
{
	if (b->count && STRATA_NFS_TRACED()) {
		uint64_t t0 = clock_mono_ns();
		STRATA_NFS_FIRE(b);
		CTR_ADD(nfs_probe_ns, clock_mono_ns() - t0);
		CTR_INC(nfs_probe_hits);
	}
	strata_nfs_batch_empty(b);
}

/* When a batch whose first operation ended at end (CLOCK_MONOTONIC) comes due:
 * STRATA_NFS_EDGE_NS before the end of the wall-clock second that holds
 * end + STRATA_NFS_EDGE_NS (strata_probes.h). */
static uint64_t batch_due_at(uint64_t end)
{
	uint64_t wall = end + STRATA_NFS_EDGE_NS + (clock_ns(CLOCK_REALTIME) - clock_mono_ns());
	return end + (1000000000u - wall % 1000000000u);
}

/* Adds a completed operation to the shared batch (net.lock held). Returns whether the
 * batch is now full or due: then the caller takes and fires it (strata_probes.h).
 * Workers add in about the order their replies went out, not exactly: an operation
 * may have ended a little before the first one. */
static int batch_add(const struct strata_nfs_op *op)
{
	struct strata_nfs_batch *b = net.batch;

	strata_nfs_batch_put(b, op, STRATA_NFS_WHOLE());
	if (b->count == 1)
		__atomic_store_n(&net.batch_due, batch_due_at(op->end_ns), __ATOMIC_RELAXED);
	return b->count == STRATA_NFS_BATCH ||
	       (int64_t)(op->end_ns - __atomic_load_n(&net.batch_due, __ATOMIC_RELAXED)) >= 0;
}

int net_process(struct rpc_req *r, uint8_t *reply, size_t *len, int *traced_out)
{
	struct xdr_out o;
	xdr_out_init(&o, reply + 4, NET_REPLY_CAP - 4);
	xdr_in_init(&r->args, r->rec, r->reclen);
	enum rpc_decode d = rpc_decode_call(&r->args, &r->call);
	r->start_ns = clock_mono_ns();
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
		traced = known && STRATA_NFS_TRACED();
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
		if (r->acct.nowait && prog != STRATA_PROG_NFS)
			return 1;
		rpc_put_accepted(&o, r->call.xid, RPC_SUCCESS, 0, 0);
		int stat = prog == STRATA_PROG_NFS ? nfs3_dispatch(r, &o) : mount3_dispatch(r, &o);
		if (stat == NFS3_WOULD_BLOCK) {
			r->status = r->bytes = 0;
			r->file_id = 0;
			r->acct = (struct io_acct){ 0 };
			return 1;
		}
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

/* Requests run on the event loop's thread (netloop.c calls these from it only):
 * replies gathered for one send per connection and round, and the loop's own
 * strata:nfs_ops batch, fired when full or due like the workers' shared one. The loop
 * also fires the workers' batch when it comes due: a waiting worker keeps its timer, but
 * when every worker runs a request (a slow disk, an injected delay) none does. */
#define LOOP_OUT_CAP (NET_REPLY_CAP + (256u << 10)) /* gathered replies: flushed past 256 KiB */
static struct {
	uint8_t *buf;
	size_t len;
	struct conn *c;                 /* whose replies buf holds */
	struct strata_nfs_batch *batch;
	uint32_t unsent;                /* batch->ops[unsent..count) end when buf goes out */
	uint64_t due;                   /* when batch comes due, set as its first operation ends */
	struct strata_nfs_batch *spare; /* takes the workers' batch when the loop fires it */
} lo;

void net_inline_flush(void)
{
	struct conn *c = lo.c;
	if (!c)
		return;
	uint64_t sent_ns = 0;
	pthread_mutex_lock(&c->lock);
	if (!c->closing) { /* the clock as the replies go out: before the client can see them */
		sent_ns = clock_mono_ns();
		if (!conn_reply(c, lo.buf, lo.len))
			sent_ns = 0;
	}
	conn_arm(c);
	pthread_mutex_unlock(&c->lock);
	if (!sent_ns)
		sent_ns = clock_mono_ns();
	if (!lo.unsent && lo.batch->count)
		lo.due = batch_due_at(sent_ns);
	for (uint32_t i = lo.unsent > lo.batch->ops_from ? lo.unsent : lo.batch->ops_from; i < lo.batch->count; i++)
		lo.batch->ops[i].end_ns = sent_ns;
	lo.unsent = lo.batch->count;
	lo.len = 0;
	lo.c = NULL;
	if (lo.batch->count == STRATA_NFS_BATCH) {
		batch_fire(lo.batch);
		lo.unsent = 0;
	}
}

int net_inline_run(struct conn *c, struct rpc_req *r)
{
	if (!lo.buf) {
		lo.buf = xmalloc(LOOP_OUT_CAP);
		lo.batch = batch_new();
	}
	if ((lo.c && lo.c != c) || lo.len + NET_REPLY_CAP > LOOP_OUT_CAP || lo.batch->count == STRATA_NFS_BATCH)
		net_inline_flush();
	pthread_mutex_lock(&c->lock);
	uint64_t pending = c->out_bytes + lo.len + (uint64_t)c->running * NET_REPLY_CAP;
	int ok = !c->closing && !c->nreq && pending < net_lim.reply_queue &&
		 (!c->out_bytes || GAUGE(queued_reply_bytes) < net_lim.reply_mem);
	pthread_mutex_unlock(&c->lock);
	if (!ok)
		return -1;
	size_t len;
	int traced;
	r->acct.nowait = 1;
	int rc = net_process(r, lo.buf + lo.len, &len, &traced);
	r->acct.nowait = 0;
	if (rc > 0)
		return -1;
	if (rc < 0) {
		pthread_mutex_lock(&c->lock);
		conn_fail(c);
		pthread_mutex_unlock(&c->lock);
	} else {
		lo.len += len;
		lo.c = c;
		if (traced) {
			struct strata_nfs_op op;
			probe_op(&op, r, r->start_ns); /* ends at the flush */
			strata_nfs_batch_put(lo.batch, &op, STRATA_NFS_WHOLE());
		}
	}
	free(r->rec);
	free(r);
	return 0;
}

/* Fires the workers' batch if it is due at now: none of them was free to. Returns the
 * ms until the loop should look again: until the batch comes due, or, while workers run
 * requests, STRATA_NFS_EDGE_NS (a batch they start meanwhile wakes nobody); -1: no need. */
static int shared_tick(uint64_t now)
{
	uint64_t due = __atomic_load_n(&net.batch_due, __ATOMIC_RELAXED);
	if (!due)
		return __atomic_load_n(&net.busy, __ATOMIC_RELAXED) ? (int)(STRATA_NFS_EDGE_NS / 1000000) : -1;
	if ((int64_t)(due - now) > 0)
		return (int)((due - now + 999999) / 1000000);
	if (!lo.spare)
		lo.spare = batch_new();
	pthread_mutex_lock(&net.lock);
	int taken = net.batch->count && (int64_t)(now - net.batch_due) >= 0;
	if (taken)
		batch_take(&lo.spare);
	pthread_mutex_unlock(&net.lock);
	if (taken)
		batch_fire(lo.spare);
	return -1;
}

int net_inline_tick(uint64_t now, int force)
{
	int shared_ms = force ? -1 : shared_tick(now);
	if (!lo.batch || !lo.batch->count)
		return shared_ms;
	if (!force && (int64_t)(lo.due - now) > 0) {
		int ms = (int)((lo.due - now + 999999) / 1000000);
		return shared_ms >= 0 && shared_ms < ms ? shared_ms : ms;
	}
	batch_fire(lo.batch);
	lo.unsent = 0;
	return shared_ms;
}

/* Waits for work with net.lock held. While operations wait in the shared batch, one
 * waiting worker keeps its timer: it fires the batch when it comes due
 * (STRATA_NFS_EDGE_NS before its second's end), and is woken for work only when no
 * other worker waits. Only that one wait is timed: arming a timer costs a few us on a
 * VM, too much to pay on every wait of a busy worker. So a busy engine fills its
 * batches and an idle one reports within that bound. */
static void wait_for_work(struct strata_nfs_batch **spare)
{
	if (!net.batch->count || net.batch_timer) {
		net.waiting++;
		pthread_cond_wait(&net.cv, &net.lock);
		net.waiting--;
		return;
	}
	net.batch_timer = 1;
	while (!net.rq_head && !net.quit && net.batch->count) { /* else fired by a worker that filled it */
		uint64_t due = net.batch_due;
		if (clock_mono_ns() < due) {
			struct timespec ts = { .tv_sec = (time_t)(due / 1000000000u),
					       .tv_nsec = (long)(due % 1000000000u) };
			pthread_cond_timedwait(&net.timer_cv, &net.lock, &ts);
			continue;
		}
		batch_take(spare);
		pthread_mutex_unlock(&net.lock);
		batch_fire(*spare);
		pthread_mutex_lock(&net.lock);
	}
	net.batch_timer = 0;
}

/* Runs the next request of a connection taken from the run queue and replies.
 * Returns whether it describes the operation in *op for the nfs_ops probe. */
static int run_one(struct conn *c, uint8_t *reply, struct strata_nfs_op *op)
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
		return 0;
	size_t len;
	int traced;
	int bad = net_process(r, reply, &len, &traced);
	uint64_t sent_ns = 0; /* the clock as the reply goes out: before the client can see it */
	pthread_mutex_lock(&c->lock);
	c->running--;
	if (bad) {
		conn_fail(c);
	} else if (!c->closing) {
		sent_ns = clock_mono_ns();
		if (!conn_reply(c, reply, len))
			sent_ns = 0;
	}
	conn_schedule(c);
	conn_arm(c);
	pthread_mutex_unlock(&c->lock);
	traced = !bad && traced;
	if (traced)
		probe_op(op, r, sent_ns);
	free(r->rec);
	free(r);
	return traced;
}

static void *worker(void *arg)
{
	uint8_t *reply = xmalloc(NET_REPLY_CAP);
	struct strata_nfs_batch *spare = batch_new();
	struct strata_nfs_op op;
	for (;;) {
		pthread_mutex_lock(&net.lock);
		while (!net.rq_head && !net.quit)
			wait_for_work(&spare);
		if (!net.rq_head)
			break;
		struct conn *c = net.rq_head;
		net.rq_head = c->rq_next;
		if (!net.rq_head)
			net.rq_tail = NULL;
		net.busy++;
		pthread_mutex_unlock(&net.lock);

		int traced = run_one(c, reply, &op);
		conn_put(c); /* the run queue's reference */

		pthread_mutex_lock(&net.lock);
		int due = traced && batch_add(&op);
		if (due)
			batch_take(&spare);
		else if (traced && net.batch->count == 1 && !net.batch_timer && net.waiting)
			pthread_cond_signal(&net.cv); /* a waiting worker takes the new batch's timer */
		net.busy--;
		if (!net.busy && !net.rq_head)
			pthread_cond_broadcast(&net.idle_cv);
		pthread_mutex_unlock(&net.lock);
		if (due)
			batch_fire(spare);
	}
	/* net_stop: the queue is drained; the first worker to leave reports what is pending. */
	batch_take(&spare);
	pthread_mutex_unlock(&net.lock);
	batch_fire(spare);
	free(spare);
	free(reply);
	pthread_mutex_lock(&net.lock);
	net.exited++;
	pthread_cond_broadcast(&net.idle_cv);
	pthread_mutex_unlock(&net.lock);
	return arg;
}

int net_workers_start(int workers)
{
	pthread_condattr_t ca; /* work waits are timed on the probes' clock (wait_for_work) */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&net.cv, &ca);
	pthread_cond_init(&net.timer_cv, &ca);
	pthread_condattr_destroy(&ca);
	if (!net.batch)
		net.batch = batch_new();
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
	return 0;
}

void net_workers_stop(void)
{
	pthread_mutex_lock(&net.lock);
	while (net.busy || net.rq_head)
		pthread_cond_wait(&net.idle_cv, &net.lock);
	net.quit = 1;
	pthread_cond_broadcast(&net.cv);
	pthread_cond_broadcast(&net.timer_cv);
	while (net.exited < net.workers)
		pthread_cond_wait(&net.idle_cv, &net.lock);
	pthread_mutex_unlock(&net.lock);
}

void net_workers_release(void)
{
	while (net.rq_head) {
		struct conn *c = net.rq_head;
		net.rq_head = c->rq_next;
		conn_put(c);
	}
	net.rq_tail = NULL;
}
