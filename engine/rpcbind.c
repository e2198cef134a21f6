/* rpcbind.c — PMAPPROC_SET/UNSET calls to 127.0.0.1:111 (see rpcbind.h). */
#include "rpcbind.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rpc.h"
#include "strata_probes.h"
#include "xdr.h"

#define PMAP_PROG 100000
#define PMAP_VERS 2
#define PMAPPROC_SET 1
#define PMAPPROC_UNSET 2
#define IPPROTO_TCP_NUM 6

static int registered[2]; /* NFS, MOUNT */

/* One portmapper call; returns the boolean result, or -1 when unreachable. */
static int pmap_call(uint32_t proc, uint32_t prog, uint32_t vers, uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(111),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int rc = -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		struct pollfd p = { fd, POLLOUT, 0 };
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (poll(&p, 1, 1000) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr)
			goto out;
	}
	uint8_t buf[128];
	struct xdr_out o;
	xdr_out_init(&o, buf + 4, sizeof(buf) - 4);
	xdr_put_u32(&o, (uint32_t)getpid() ^ proc ^ prog);
	xdr_put_u32(&o, 0); /* CALL */
	xdr_put_u32(&o, 2);
	xdr_put_u32(&o, PMAP_PROG);
	xdr_put_u32(&o, PMAP_VERS);
	xdr_put_u32(&o, proc);
	xdr_put_u32(&o, RPC_AUTH_NONE);
	xdr_put_u32(&o, 0);
	xdr_put_u32(&o, RPC_AUTH_NONE);
	xdr_put_u32(&o, 0);
	xdr_put_u32(&o, prog);
	xdr_put_u32(&o, vers);
	xdr_put_u32(&o, IPPROTO_TCP_NUM);
	xdr_put_u32(&o, port);
	uint32_t mark = (uint32_t)o.pos | 0x80000000u;
	buf[0] = mark >> 24, buf[1] = mark >> 16, buf[2] = mark >> 8, buf[3] = mark;
	struct pollfd p = { fd, POLLOUT, 0 };
	if (poll(&p, 1, 1000) != 1 || send(fd, buf, o.pos + 4, MSG_NOSIGNAL) != (ssize_t)(o.pos + 4))
		goto out;
	size_t got = 0;
	while (got < 32) {
		p = (struct pollfd){ fd, POLLIN, 0 };
		if (poll(&p, 1, 1000) != 1)
			goto out;
		ssize_t n = recv(fd, buf + got, sizeof(buf) - got, 0);
		if (n <= 0)
			goto out;
		got += (size_t)n;
	}
	/* mark, xid, REPLY, MSG_ACCEPTED, verf(flavor, len 0), SUCCESS, bool */
	struct xdr_in x;
	xdr_in_init(&x, buf + 4, got - 4);
	xdr_get_u32(&x);
	uint32_t type = xdr_get_u32(&x), accepted = xdr_get_u32(&x);
	xdr_get_u32(&x);
	uint32_t vlen;
	xdr_get_opaque(&x, 400, &vlen);
	uint32_t stat = xdr_get_u32(&x), res = xdr_get_u32(&x);
	if (!x.err && type == 1 && accepted == 0 && stat == 0)
		rc = res != 0;
out:
	close(fd);
	return rc;
}

int rpcbind_register(uint16_t nfs_port, uint16_t mount_port)
{
	int reachable = pmap_call(PMAPPROC_SET, STRATA_PROG_NFS, 3, nfs_port);
	registered[0] = reachable == 1;
	registered[1] = reachable >= 0 &&
		pmap_call(PMAPPROC_SET, STRATA_PROG_MOUNT, 3, mount_port) == 1;
	return registered[0] + registered[1];
}

void rpcbind_unregister(void)
{
	if (registered[0])
		pmap_call(PMAPPROC_UNSET, STRATA_PROG_NFS, 3, 0);
	if (registered[1])
		pmap_call(PMAPPROC_UNSET, STRATA_PROG_MOUNT, 3, 0);
	registered[0] = registered[1] = 0;
}
