/* wire_ports.c — the ports an RPC server registered: one portmapper v2 DUMP call
 * (RFC 1833, PMAPPROC_DUMP; every rpcbind answers version 2) over TCP to the local
 * rpcbind, and a bounds-checked parser of its reply, which keeps the TCP ports of NFS
 * and MOUNT. The reply is untrusted bytes: every read checks the length left. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "wire_ports.h"
#include "wire_rpc.h"

#define PMAP_PROG    100000
#define PMAP_VERS    2
#define PMAPPROC_DUMP 4
#define PMAP_PORT    111
#define AUTH_BODY_MAX 400 /* RFC 5531 */

struct cursor {
	const uint8_t *p;
	size_t left;
};

static int word(struct cursor *c, uint32_t *v)
{
	if (c->left < 4)
		return -1;
	*v = (uint32_t)c->p[0] << 24 | (uint32_t)c->p[1] << 16 | (uint32_t)c->p[2] << 8 | c->p[3];
	c->p += 4;
	c->left -= 4;
	return 0;
}

static int skip(struct cursor *c, size_t n)
{
	if (c->left < n)
		return -1;
	c->p += n;
	c->left -= n;
	return 0;
}

int wire_ports_parse(const uint8_t *reply, size_t len, uint32_t xid, uint16_t *ports, int max)
{
	struct cursor c = { reply, len };
	uint32_t rxid, mtype, rstat, vflavor, vlen, astat, v[4], follows;
	int n = 0, seen;

	if (word(&c, &rxid) || word(&c, &mtype) || word(&c, &rstat) || rxid != xid || mtype != 1 /* REPLY */ ||
	    rstat != 0 /* MSG_ACCEPTED */ || word(&c, &vflavor) || word(&c, &vlen) || vlen > AUTH_BODY_MAX ||
	    skip(&c, (vlen + 3) & ~3u) || word(&c, &astat) || astat != 0 /* SUCCESS */)
		return -1;
	/* pmaplist: (value_follows, mapping{prog, vers, prot, port})*, value_follows = 0 */
	for (;;) {
		if (word(&c, &follows) || follows > 1)
			return -1;
		if (!follows)
			break;
		if (word(&c, &v[0]) || word(&c, &v[1]) || word(&c, &v[2]) || word(&c, &v[3]))
			return -1;
		if ((v[0] != WIRE_PROG_NFS && v[0] != WIRE_PROG_MOUNT) || v[2] != IPPROTO_TCP || v[3] == 0 || v[3] > 65535)
			continue;
		seen = 0;
		for (int i = 0; i < n; i++)
			seen |= ports[i] == v[3];
		if (!seen && n < max)
			ports[n++] = (uint16_t)v[3];
	}
	return c.left == 0 ? n : -1;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for events on fd until the deadline; 0 when ready. */
static int await(int fd, short events, long long deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	long long left = deadline - now_ms();

	return left > 0 && poll(&p, 1, (int)left) == 1 && (p.revents & events) ? 0 : -1;
}

static int read_full(int fd, uint8_t *buf, size_t n, long long deadline)
{
	while (n > 0) {
		ssize_t r = read(fd, buf, n);

		if (r > 0) {
			buf += r;
			n -= (size_t)r;
		} else if (r == 0 || (errno != EAGAIN && errno != EINTR) || await(fd, POLLIN, deadline)) {
			return -1;
		}
	}
	return 0;
}

/* The reply record's fragments, joined; its length or -1. */
static ssize_t read_record(int fd, uint8_t *buf, size_t max, long long deadline)
{
	size_t have = 0;
	uint8_t mark[4];
	uint32_t m, len;

	do {
		if (read_full(fd, mark, 4, deadline))
			return -1;
		m = (uint32_t)mark[0] << 24 | (uint32_t)mark[1] << 16 | (uint32_t)mark[2] << 8 | mark[3];
		len = m & 0x7fffffff;
		if (len > max - have || read_full(fd, buf + have, len, deadline))
			return -1;
		have += len;
	} while (!(m >> 31));
	return (ssize_t)have;
}

int wire_ports_query(uint16_t *ports, int max, int timeout_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PMAP_PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	long long deadline = now_ms() + timeout_ms;
	uint32_t xid = (uint32_t)rand() ^ (uint32_t)getpid(), call[11];
	uint8_t *buf;
	ssize_t len;
	int fd, n = -1;

	call[0] = htonl(0x80000000u | 40);
	call[1] = htonl(xid);
	call[2] = htonl(0);             /* CALL */
	call[3] = htonl(2);             /* RPC version */
	call[4] = htonl(PMAP_PROG);
	call[5] = htonl(PMAP_VERS);
	call[6] = htonl(PMAPPROC_DUMP);
	call[7] = call[8] = call[9] = call[10] = 0; /* AUTH_NONE credentials and verifier */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if ((connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS) ||
	    await(fd, POLLOUT, deadline) || send(fd, call, sizeof(call), MSG_NOSIGNAL) != (ssize_t)sizeof(call))
		goto out;
	if (!(buf = malloc(WIRE_PORTS_REPLY_MAX)))
		goto out;
	if ((len = read_record(fd, buf, WIRE_PORTS_REPLY_MAX, deadline)) >= 0)
		n = wire_ports_parse(buf, (size_t)len, xid, ports, max);
	free(buf);
out:
	close(fd);
	return n;
}
