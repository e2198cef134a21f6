/* netloop.c — the event loop: one thread (epoll) accepts every connection,
 * reads each without blocking (record marks and small records 16 KiB a recv, a
 * long fragment straight into its record), splits its byte stream into RPC
 * records and runs those that need no wait at once (net.c's net_inline_run: at
 * most INLINE_PER_EVENT a connection and round, so one busy client does not
 * starve the others), queueing the rest on the connection for the workers; it
 * sends the replies the sockets could not take at once, stops reading a
 * connection that holds too many requests or unsent replies, and enforces
 * net_limits: connections in total and per address (an idle one makes room),
 * bytes of unfinished records, record and idle timeouts.  Everything here runs
 * on the loop's thread except net_start and net_stop, which start and end it
 * and the workers (net.c). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "engine.h"
#include "mount3.h"
#include "netaddr.h"
#include "net.h"
#include "netconn.h"
#include "util.h"

#define MAX_FRAGMENTS 1024
#define READ_CHUNK (256u << 10)         /* one recv into a record body */
#define READ_PER_EVENT (1u << 20)       /* bytes read from one connection before the next */
#define IN_BUF (16u << 10)              /* one recv of record marks and small records */
#define INLINE_PER_EVENT 16             /* requests of one connection run on this thread a round */
#define RECORD_FREE_BYTES (64u << 10)   /* a record this small never waits for record_mem */
#define EVICT_MIN_IDLE_NS 1000000000ull /* an idle connection evicted for a new one: idle this long */
#define SWEEP_NS 250000000ull           /* timeouts are checked this often */
#define STOP_GRACE_NS 1000000000ull     /* net_stop: time queued replies get to leave */
#define FDS_RESERVED 64                 /* descriptors kept for the pool, stats and the rest */
#define EV_WAKE 15                      /* epoll data below 16: a listener index, or the wake-up */

static struct {
	int wakefd, reserve_fd, nlisten;
	int *listen_fds;
	int quit;                             /* set by net_stop's thread */
	struct conn *conns;
	uint32_t nconns, nuntrusted, nstarved, max_conns; /* max_conns: as configured, before fit_fd_limit */
	uint64_t last_sweep_ns;
	pthread_t thread;
} loop = { .wakefd = -1, .reserve_fd = -1 };

static void wake_loop(void)
{
	uint64_t one = 1;
	if (write(loop.wakefd, &one, sizeof(one)) < 0)
		return; /* the counter is full: the loop wakes anyway */
}

/* now - t, or 0 when t was stamped after now was read. */
static uint64_t since(uint64_t now, uint64_t t)
{
	return now > t ? now - t : 0;
}

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
	epoll_ctl(conn_poll.ep, EPOLL_CTL_DEL, c->fd, NULL);
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
		loop.nstarved--;
	if (c->prev)
		c->prev->next = c->next;
	else
		loop.conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	loop.nconns--;
	loop.nuntrusted -= !c->trusted;
	netaddr_put(c->addr);
	__atomic_sub_fetch(&g_engine.ctr.connections_open, 1, __ATOMIC_RELAXED);
	shutdown(c->fd, SHUT_RDWR); /* the peer sees the close once the gauges have let go of it */
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

/* A finished record runs now on this thread when it needs no wait (net_inline_run),
 * else joins the connection's requests for the workers. */
static void record_done(struct conn *c)
{
	struct rpc_req *r = xcalloc(1, sizeof(*r));
	r->conn = c;
	r->client = &c->peer;
	r->rec = c->rec;
	r->reclen = c->reclen;
	c->rec = NULL;
	drop_record(c);
	if (c->inline_left && !net_inline_run(c, r)) {
		c->inline_left--;
		return;
	}
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

/* Stops reading the connection until record_mem has room again (resume_starved). */
static void starve(struct conn *c)
{
	if (c->starved)
		return;
	pthread_mutex_lock(&c->lock);
	c->starved = 1;
	conn_arm(c);
	pthread_mutex_unlock(&c->lock);
	loop.nstarved++;
	CTR_INC(net_record_waits);
}

/* Room for `want` more bytes of the record; -1 when the connection must wait
 * for record_mem (records up to RECORD_FREE_BYTES never wait).  `taken`: the
 * bytes are already read (at most IN_BUF of them): they get their room, and
 * the connection waits for the next ones instead. */
static int record_reserve(struct conn *c, uint32_t want, int taken)
{
	uint32_t need = c->reclen + want;
	if (need <= c->reccap)
		return 0;
	uint32_t cap = c->reccap ? c->reccap * 2 : 4096;
	if (cap < need)
		cap = need;
	if (cap > c->reclen + c->frag_left)
		cap = c->reclen + c->frag_left;
	if (cap > RECORD_FREE_BYTES && GAUGE(unfinished_record_bytes) + (cap - c->reccap) > net_lim.record_mem) {
		starve(c);
		if (!taken)
			return -1;
		cap = need;
	}
	c->rec = xrealloc(c->rec, cap);
	GAUGE_ADD(unfinished_record_bytes, cap - c->reccap);
	c->reccap = cap;
	return 0;
}

/* The 4 bytes of a record mark are in c->hdr: its fragment begins; -1 when the
 * record would pass `limit` bytes or MAX_FRAGMENTS. */
static int fragment_begin(struct conn *c, uint32_t limit)
{
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
	return 0;
}

/* A fragment's body is complete: the record is done with its last one. */
static void fragment_end(struct conn *c)
{
	c->in_body = 0;
	if (c->last_frag)
		record_done(c);
}

/* Takes n bytes read into in[]: record marks, fragment bodies and finished
 * records; -1 for a bad record. */
static int consume(struct conn *c, const uint8_t *in, uint32_t n, uint32_t limit, uint64_t now)
{
	while (n) {
		if (!c->rec_start_ns)
			c->rec_start_ns = now;
		uint32_t k;
		if (!c->in_body) {
			k = 4 - c->hdrlen < n ? 4 - c->hdrlen : n;
			memcpy(c->hdr + c->hdrlen, in, k);
			if ((c->hdrlen += k) == 4 && fragment_begin(c, limit))
				return -1;
		} else {
			k = c->frag_left < n ? c->frag_left : n;
			record_reserve(c, k, 1);
			memcpy(c->rec + c->reclen, in, k);
			c->reclen += k;
			c->frag_left -= k;
		}
		in += k;
		n -= k;
		if (c->in_body && !c->frag_left)
			fragment_end(c);
	}
	return 0;
}

/* Reads what the connection has (up to READ_PER_EVENT bytes) and handles each
 * complete record (record_done); -1 when it must close (end of stream, error,
 * bad record).  Marks and small records come IN_BUF bytes a recv; a long
 * fragment body is read into its record directly. */
static int read_records(struct conn *c)
{
	static uint8_t in[IN_BUF];
	uint32_t limit = c->trusted ? NET_MAX_RECORD : NET_UNTRUSTED_RECORD;
	uint32_t budget = READ_PER_EVENT;
	while (budget && (c->mask & EPOLLIN) && c->inline_left) {
		ssize_t n;
		int direct = c->in_body && c->frag_left >= IN_BUF;
		if (direct) {
			uint32_t want = c->frag_left < READ_CHUNK ? c->frag_left : READ_CHUNK;
			if (record_reserve(c, want, 0))
				return 0;
			n = recv(c->fd, c->rec + c->reclen, want, 0);
		} else {
			n = recv(c->fd, in, IN_BUF, 0);
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
		conn_touch(c);
		uint64_t now = __atomic_load_n(&c->last_active_ns, __ATOMIC_RELAXED);
		if (direct) {
			if (!c->rec_start_ns)
				c->rec_start_ns = now;
			c->reclen += (uint32_t)n;
			c->frag_left -= (uint32_t)n;
			if (!c->frag_left)
				fragment_end(c);
		} else if (consume(c, in, (uint32_t)n, limit, now)) {
			return -1;
		} else if ((size_t)n < IN_BUF) {
			return 0; /* drained; level-triggered: more is reported in a later round */
		}
		budget -= (uint32_t)n < budget ? (uint32_t)n : budget;
	}
	return 0;
}

/* One read event: the records read run or queue; the replies of those that ran go out. */
static int conn_read(struct conn *c)
{
	c->inline_left = INLINE_PER_EVENT;
	int rc = read_records(c);
	net_inline_flush();
	return rc;
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
	uint64_t now = clock_mono_ns();
	struct conn *oldest = NULL;
	uint64_t oldest_t = 0;
	for (struct conn *c = loop.conns; c; c = c->next) {
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
	uint32_t per_addr = net_lim.max_conns_per_addr;
	if (!trusted && per_addr > NET_UNTRUSTED_PER_ADDR)
		per_addr = NET_UNTRUSTED_PER_ADDR;
	int over_addr = a->count > per_addr;
	int full = !over_addr && (trusted ? loop.nconns >= net_lim.max_conns && !evict_idle()
				  : loop.nconns >= net_lim.max_conns ||
				    loop.nuntrusted >= net_lim.max_conns / NET_UNTRUSTED_SHARE);
	if (over_addr || full) {
		if (over_addr)
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
	c->last_active_ns = clock_mono_ns();
	pthread_mutex_init(&c->lock, NULL);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	if (epoll_ctl(conn_poll.ep, EPOLL_CTL_ADD, fd, &ev)) {
		netaddr_put(a);
		pthread_mutex_destroy(&c->lock);
		free(c);
		close(fd);
		CTR_INC(net_refused);
		return;
	}
	c->next = loop.conns;
	if (loop.conns)
		loop.conns->prev = c;
	loop.conns = c;
	loop.nconns++;
	loop.nuntrusted += !trusted;
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
	if (loop.reserve_fd >= 0)
		close(loop.reserve_fd);
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		CTR_INC(net_refused);
	}
	loop.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
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
	net_lim.max_conns = loop.max_conns;
	if (rl.rlim_cur != RLIM_INFINITY && net_lim.max_conns > room)
		net_lim.max_conns = (uint32_t)room;
}

/* Record and idle timeouts; connections a worker marked for closing. */
static void sweep(uint64_t now)
{
	uint64_t record_ns = net_lim.record_timeout_ms * 1000000ull;
	uint64_t idle_ns = net_lim.idle_timeout_ms * 1000000ull;
	for (struct conn *c = loop.conns, *next; c; c = next) {
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
	for (struct conn *c = loop.conns; c && loop.nstarved; c = c->next) {
		if (!c->starved)
			continue;
		pthread_mutex_lock(&c->lock);
		c->starved = 0;
		conn_arm(c);
		pthread_mutex_unlock(&c->lock);
		loop.nstarved--;
	}
}

/* net_stop began: no more accepting or reading. */
static void stop_reading(void)
{
	for (int i = 0; i < loop.nlisten; i++) {
		epoll_ctl(conn_poll.ep, EPOLL_CTL_DEL, loop.listen_fds[i], NULL);
		shutdown(loop.listen_fds[i], SHUT_RDWR);
	}
	for (struct conn *c = loop.conns; c; c = c->next) {
		pthread_mutex_lock(&c->lock);
		conn_arm(c);
		pthread_mutex_unlock(&c->lock);
	}
}

static void *event_loop(void *arg)
{
	struct epoll_event evs[256];
	int stopped = 0, timeout = 100;
	uint64_t quit_by = 0;
	for (;;) {
		int n = epoll_wait(conn_poll.ep, evs, 256, timeout);
		uint64_t now = clock_mono_ns();
		for (int i = 0; i < n; i++) {
			uint64_t tag = evs[i].data.u64;
			if (tag == EV_WAKE) {
				uint64_t v;
				ssize_t rd = read(loop.wakefd, &v, sizeof(v));
				(void)rd; /* only wakes the loop */
				continue;
			}
			if (tag < EV_WAKE) {
				if (!stopped)
					accept_ready(loop.listen_fds[tag]);
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
		if (!stopped && __atomic_load_n(&conn_poll.stopping, __ATOMIC_RELAXED)) {
			stopped = 1;
			stop_reading();
		}
		if (since(now, loop.last_sweep_ns) >= SWEEP_NS) {
			fit_fd_limit(0);
			sweep(now);
			loop.last_sweep_ns = now;
		}
		int due_ms = net_inline_tick(clock_mono_ns(), 0);
		timeout = due_ms >= 0 && due_ms < 100 ? due_ms : 100;
		bury();
		if (loop.nstarved && GAUGE(unfinished_record_bytes) + RECORD_FREE_BYTES <= net_lim.record_mem)
			resume_starved();
		if (__atomic_load_n(&loop.quit, __ATOMIC_RELAXED)) {
			if (!quit_by)
				quit_by = now + STOP_GRACE_NS;
			if (!GAUGE(queued_reply_bytes) || now >= quit_by)
				break;
		}
	}
	net_inline_tick(0, 1);
	while (loop.conns)
		conn_close(loop.conns);
	bury();
	return arg;
}

/* Starts the loop thread: accepting on listen_fds, reading every connection. */
static int netloop_start(const int *listen_fds, int nfds)
{
	if (nfds >= EV_WAKE)
		return -1;
	loop.max_conns = net_lim.max_conns;
	fit_fd_limit(1);
	loop.listen_fds = xcalloc((size_t)nfds, sizeof(int));
	memcpy(loop.listen_fds, listen_fds, (size_t)nfds * sizeof(int));
	loop.nlisten = nfds;
	conn_poll.ep = epoll_create1(EPOLL_CLOEXEC);
	loop.wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	loop.reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (conn_poll.ep < 0 || loop.wakefd < 0)
		return -1;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = EV_WAKE };
	if (epoll_ctl(conn_poll.ep, EPOLL_CTL_ADD, loop.wakefd, &ev))
		return -1;
	for (int i = 0; i < nfds; i++) {
		fcntl(listen_fds[i], F_SETFL, fcntl(listen_fds[i], F_GETFL) | O_NONBLOCK);
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = (uint64_t)i };
		if (epoll_ctl(conn_poll.ep, EPOLL_CTL_ADD, listen_fds[i], &ev))
			return -1;
	}
	return pthread_create(&loop.thread, NULL, event_loop, NULL) ? -1 : 0;
}

int net_start(const int *listen_fds, int nfds, int workers, const struct net_limits *lim)
{
	net_lim = *lim;
	if (net_workers_start(workers))
		return -1;
	return netloop_start(listen_fds, nfds);
}

void net_stop(void)
{
	__atomic_store_n(&conn_poll.stopping, 1, __ATOMIC_RELAXED);
	wake_loop();
	net_workers_stop();
	__atomic_store_n(&loop.quit, 1, __ATOMIC_RELAXED);
	wake_loop();
	pthread_join(loop.thread, NULL);
	net_workers_release();
}
