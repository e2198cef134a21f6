/* netconn.c — what the event loop (netloop.c) and the workers (net.c) both do to
 * a connection: drop a reference, mark it failed, send its queued replies, set
 * its epoll interest.  Below both, so that neither calls the other for these. */
#include "netconn.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

struct net_limits net_lim;
struct conn_poll conn_poll = { .ep = -1 };

void conn_put(struct conn *c)
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

void conn_fail(struct conn *c)
{
	if (c->closing)
		return;
	c->closing = 1;
	shutdown(c->fd, SHUT_RDWR);
}

int conn_flush(struct conn *c)
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
		conn_touch(c);
		if (b->off == b->len) {
			c->out = b->next;
			if (!c->out)
				c->out_tail = NULL;
			free(b);
		}
	}
	return 0;
}

/* Sets the epoll interest from the state (c->lock held): writable while replies
 * wait; readable unless stopping, waiting for record_mem, or holding its most
 * requests or unsent reply bytes. */
void conn_arm(struct conn *c)
{
	if (c->closing)
		return;
	int backlog = c->out_bytes >= net_lim.reply_queue;
	uint32_t want = c->out ? EPOLLOUT : 0;
	if (!__atomic_load_n(&conn_poll.stopping, __ATOMIC_RELAXED) && !c->starved && !backlog &&
	    c->nreq + c->running < CONN_MAX_INFLIGHT && c->req_bytes < CONN_MAX_REQ_BYTES)
		want |= EPOLLIN;
	if (want == c->mask)
		return;
	if ((c->mask & EPOLLIN) && !(want & EPOLLIN) && backlog)
		CTR_INC(net_backpressure);
	c->mask = want;
	struct epoll_event ev = { .events = want, .data.ptr = c };
	epoll_ctl(conn_poll.ep, EPOLL_CTL_MOD, c->fd, &ev);
}
