/* load_client.c — the RPC layer of one strata-load client: connection set-up
 * (portmapper, MOUNT, NFS), the event loop, and the issue helpers that count
 * every NFSv3/MOUNT RPC once, by procedure, when its reply arrives. */
#include "load_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-portmap.h>
#include "clock.h"
#include "load_hints.h"

#define CONNECT_TIMEOUT_S 10.0
#define CALL_TIMEOUT_S    30.0


static void vnote(struct load_client *c, const char *fmt, va_list ap)
{
	if (c->error[0])
		return;
	int n = snprintf(c->error, sizeof(c->error), "%s: ", c->name);
	vsnprintf(c->error + n, sizeof(c->error) - (size_t)n, fmt, ap);
}

void client_note_error(struct load_client *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vnote(c, fmt, ap);
	va_end(ap);
}

void client_fail(struct load_client *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vnote(c, fmt, ap);
	va_end(ap);
	c->broken = true;
}

/* ---- accounting wrapper around every RPC ---- */

static void on_reply(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *call = priv;
	struct load_client *c = call->c;
	int nfsstat = -1;

	(void)rpc;
	c->inflight--;
	if (status == RPC_STATUS_SUCCESS) {
		uint64_t now = clock_mono_ns();
		int64_t sec = -1;

		if (call->ph == &c->run)
			sec = (int64_t)((now - c->sh->run_start_ns) / 1000000000ull);
		/* Every NFSv3 and MOUNT3 result starts with its status word. */
		nfsstat = (int)*(uint32_t *)data;
		stats_record(call->ph, call->proc, now - call->t0, sec);
		if (nfsstat != 0 && !(nfsstat == NFS3ERR_NOENT && call->noent_ok)) {
			call->ph->errors++;
			if (call->proc == LOAD_PROC_MNT)
				client_note_error(c, "mount %s: %s%s", c->export,
						  mountstat3_to_str(nfsstat),
						  load_hint_status(call->proc, nfsstat, c->o->netns));
			else
				client_note_error(c, "%s: %s%s", load_proc_name(call->proc),
						  nfsstat3_to_str(nfsstat),
						  load_hint_status(call->proc, nfsstat, c->o->netns));
		}
	} else {
		call->ph->errors++;
		c->rpc_failures++;
		if (!c->closing)
			client_fail(c, "%s: no reply: %s", load_proc_name(call->proc),
				    status == RPC_STATUS_ERROR && data ? (char *)data : "cancelled");
	}
	if (!c->closing)
		call->done(call, nfsstat, status == RPC_STATUS_SUCCESS ? data : NULL);
	free(call->owned_buf);
	free(call);
}

static struct call *call_new(struct load_client *c, struct phase_stats *ph, int proc,
			     call_done done, void *arg)
{
	struct call *call = calloc(1, sizeof(*call));

	if (!call) {
		client_fail(c, "out of memory");
		return NULL;
	}
	*call = (struct call){ .c = c, .ph = ph, .proc = proc, .done = done, .arg = arg,
			       .t0 = clock_mono_ns() };
	return call;
}

/* rc is the return of the rpc_*_async call that was given call. */
static int call_queued(struct load_client *c, struct call *call, int rc)
{
	if (rc != 0) {
		client_fail(c, "%s: cannot queue: %s", load_proc_name(call->proc),
			    rpc_get_error(c->rpc));
		free(call->owned_buf);
		free(call);
		return -1;
	}
	c->inflight++;
	return 0;
}

static struct nfs_fh3 fh3(const struct fh *fh)
{
	return (struct nfs_fh3){ .data = { .data_len = fh->len, .data_val = (char *)fh->data } };
}

int issue_lookup(struct load_client *c, struct phase_stats *ph, const struct fh *dir,
		 const char *name, bool noent_ok, call_done done, void *arg)
{
	struct call *call = call_new(c, ph, NFS3_LOOKUP, done, arg);
	LOOKUP3args a = { .what = { .dir = fh3(dir), .name = (char *)name } };

	if (!call)
		return -1;
	call->noent_ok = noent_ok;
	return call_queued(c, call, rpc_nfs3_lookup_async(c->rpc, on_reply, &a, call));
}

int issue_read(struct load_client *c, struct phase_stats *ph, const struct fh *fh,
	       uint64_t off, uint32_t count, call_done done, void *arg)
{
	struct call *call = call_new(c, ph, NFS3_READ, done, arg);
	READ3args a = { .file = fh3(fh), .offset = off, .count = count };

	if (!call)
		return -1;
	return call_queued(c, call, rpc_nfs3_read_async(c->rpc, on_reply, &a, call));
}

int issue_write(struct load_client *c, struct phase_stats *ph, const struct fh *fh,
		uint64_t off, uint32_t count, int stable, char *buf, bool own_buf,
		call_done done, void *arg)
{
	struct call *call = call_new(c, ph, NFS3_WRITE, done, arg);
	WRITE3args a = { .file = fh3(fh), .offset = off, .count = count,
			 .stable = (stable_how)stable,
			 .data = { .data_len = count, .data_val = buf } };

	if (!call) {
		if (own_buf)
			free(buf);
		return -1;
	}
	call->owned_buf = own_buf ? buf : NULL;
	return call_queued(c, call, rpc_nfs3_write_async(c->rpc, on_reply, &a, call));
}

int issue_commit(struct load_client *c, struct phase_stats *ph, const struct fh *fh,
		 call_done done, void *arg)
{
	struct call *call = call_new(c, ph, NFS3_COMMIT, done, arg);
	COMMIT3args a = { .file = fh3(fh), .offset = 0, .count = 0 };

	if (!call)
		return -1;
	return call_queued(c, call, rpc_nfs3_commit_async(c->rpc, on_reply, &a, call));
}

int issue_create(struct load_client *c, struct phase_stats *ph, const struct fh *dir,
		 const char *name, call_done done, void *arg)
{
	struct call *call = call_new(c, ph, NFS3_CREATE, done, arg);
	CREATE3args a = { .where = { .dir = fh3(dir), .name = (char *)name } };

	if (!call)
		return -1;
	a.how.mode = UNCHECKED;
	/* mode 0666: every client identity (distinct uids) may write the working set */
	a.how.createhow3_u.obj_attributes.mode.set_it = 1;
	a.how.createhow3_u.obj_attributes.mode.set_mode3_u.mode = 0666;
	a.how.createhow3_u.obj_attributes.size.set_it = 1;
	a.how.createhow3_u.obj_attributes.size.set_size3_u.size = 0;
	return call_queued(c, call, rpc_nfs3_create_async(c->rpc, on_reply, &a, call));
}

int issue_setattr_size(struct load_client *c, struct phase_stats *ph, const struct fh *fh,
		       uint64_t size, call_done done, void *arg)
{
	struct call *call = call_new(c, ph, NFS3_SETATTR, done, arg);
	SETATTR3args a = { .object = fh3(fh) };

	if (!call)
		return -1;
	a.new_attributes.size.set_it = 1;
	a.new_attributes.size.set_size3_u.size = size;
	return call_queued(c, call, rpc_nfs3_setattr_async(c->rpc, on_reply, &a, call));
}

int issue_fsinfo(struct load_client *c, struct phase_stats *ph, call_done done, void *arg)
{
	struct call *call = call_new(c, ph, NFS3_FSINFO, done, arg);
	FSINFO3args a = { .fsroot = fh3(&c->root) };

	if (!call)
		return -1;
	return call_queued(c, call, rpc_nfs3_fsinfo_async(c->rpc, on_reply, &a, call));
}

/* ---- event loop ---- */

static int pump_rpc(struct rpc_context *rpc, uint64_t timeout_ns)
{
	struct pollfd p = { .fd = rpc_get_fd(rpc), .events = (short)rpc_which_events(rpc) };
	struct timespec ts = { .tv_sec = (time_t)(timeout_ns / 1000000000ull),
			       .tv_nsec = (long)(timeout_ns % 1000000000ull) };
	int n = ppoll(&p, 1, &ts, NULL);

	if (n < 0 && errno != EINTR)
		return -1;
	return rpc_service(rpc, n > 0 ? p.revents : 0);
}

int client_pump(struct load_client *c, uint64_t timeout_ns)
{
	if (c->broken)
		return -1;
	if (pump_rpc(c->rpc, timeout_ns) < 0) {
		const char *why = rpc_get_error(c->rpc);   /* NULL when the server just hung up */

		client_fail(c, "connection lost: %s", why && *why ? why : "the server closed it");
		return -1;
	}
	return c->broken ? -1 : 0;
}

int client_wait_inflight(struct load_client *c, int limit, double timeout_s)
{
	uint64_t deadline = clock_mono_ns() + (uint64_t)(timeout_s * 1e9);

	while (c->inflight > limit) {
		int before = c->inflight;

		if (client_pump(c, 100000000ull) < 0)
			return -1;
		if (c->inflight < before)
			deadline = clock_mono_ns() + (uint64_t)(timeout_s * 1e9);
		else if (clock_mono_ns() > deadline) {
			client_fail(c, "no reply from the server for %.0f s", timeout_s);
			return -1;
		}
	}
	return 0;
}

/* ---- connection set-up ---- */

struct sync_state {
	bool done;
	int status;
	char msg[200];
};

static void on_connected(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct sync_state *st = priv;

	(void)rpc;
	st->done = true;
	st->status = status;
	if (status != RPC_STATUS_SUCCESS)
		snprintf(st->msg, sizeof(st->msg), "%s", data ? (char *)data : "cancelled");
}

/* Runs rpc's loop until st->done; -1 on timeout or socket failure. */
static int wait_sync(struct rpc_context *rpc, struct sync_state *st, double timeout_s)
{
	uint64_t deadline = clock_mono_ns() + (uint64_t)(timeout_s * 1e9);

	while (!st->done) {
		if (clock_mono_ns() > deadline) {
			snprintf(st->msg, sizeof(st->msg), "timed out after %.0f s", timeout_s);
			return -1;
		}
		if (pump_rpc(rpc, 100000000ull) < 0 && !st->done) {
			snprintf(st->msg, sizeof(st->msg), "%s", rpc_get_error(rpc));
			return -1;
		}
	}
	return st->status == RPC_STATUS_SUCCESS ? 0 : -1;
}

static struct rpc_context *connect_to(const char *host, int port, struct AUTH *auth,
				      char *err, size_t errlen)
{
	struct rpc_context *rpc = rpc_init_context();
	struct sync_state st = { 0 };

	if (!rpc) {
		snprintf(err, errlen, "cannot create an RPC context");
		return NULL;
	}
	if (auth)
		rpc_set_auth(rpc, auth);
	if (rpc_connect_async(rpc, host, port, on_connected, &st) != 0) {
		snprintf(err, errlen, "connect to %s:%d: %s", host, port, rpc_get_error(rpc));
		rpc_destroy_context(rpc);
		return NULL;
	}
	if (wait_sync(rpc, &st, CONNECT_TIMEOUT_S) < 0) {
		snprintf(err, errlen, "connect to %s:%d: %s", host, port, st.msg);
		rpc_destroy_context(rpc);
		return NULL;
	}
	return rpc;
}

struct getport_state {
	struct sync_state st;
	uint32_t port;
};

static void on_getport(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct getport_state *g = priv;

	on_connected(rpc, status, data, &g->st);
	if (status == RPC_STATUS_SUCCESS)
		g->port = *(uint32_t *)data;
}

int portmap_lookup(const char *host, int *nfsport, int *mountport, char *err, size_t errlen)
{
	static const struct { int prog, vers; const char *name; } progs[2] = {
		{ NFS_PROGRAM, NFS_V3, "NFS v3" }, { MOUNT_PROGRAM, MOUNT_V3, "MOUNT v3" },
	};
	int *ports[2] = { nfsport, mountport };
	struct rpc_context *rpc = connect_to(host, 111, NULL, err, errlen);

	if (!rpc) {
		strncat(err, load_hint_portmap(), errlen - strlen(err) - 1);
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		struct getport_state g = { 0 };

		if (rpc_pmap2_getport_async(rpc, progs[i].prog, progs[i].vers, IPPROTO_TCP,
					    on_getport, &g) != 0 ||
		    wait_sync(rpc, &g.st, CALL_TIMEOUT_S) < 0) {
			snprintf(err, errlen, "portmapper on %s: %s%s", host,
				 g.st.msg[0] ? g.st.msg : rpc_get_error(rpc), load_hint_portmap());
			rpc_destroy_context(rpc);
			return -1;
		}
		if (g.port == 0 || g.port > 65535) {
			snprintf(err, errlen, "portmapper on %s: %s over TCP is not registered%s",
				 host, progs[i].name, load_hint_portmap());
			rpc_destroy_context(rpc);
			return -1;
		}
		*ports[i] = (int)g.port;
	}
	rpc_destroy_context(rpc);
	return 0;
}

static void on_mnt(struct call *call, int stat, void *res)
{
	struct load_client *c = call->c;
	mountres3 *r = res;

	if (stat != MNT3_OK)
		return; /* error already noted */
	fhandle3 *h = &r->mountres3_u.mountinfo.fhandle;
	if (h->fhandle3_len == 0 || h->fhandle3_len > NFS3_FHSIZE) {
		client_fail(c, "MNT returned a %u-byte file handle", h->fhandle3_len);
		return;
	}
	c->root.len = h->fhandle3_len;
	memcpy(c->root.data, h->fhandle3_val, h->fhandle3_len);
}

static void on_fsinfo(struct call *call, int stat, void *res)
{
	FSINFO3res *r = res;

	if (stat != NFS3_OK)
		return;
	call->c->rtmax = r->FSINFO3res_u.resok.rtmax;
	call->c->wtmax = r->FSINFO3res_u.resok.wtmax;
}

static struct AUTH *client_auth(struct load_client *c)
{
	return libnfs_authunix_create(c->machine, c->uid, c->uid, 0, NULL);
}

static void note_local_addr(struct load_client *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(rpc_get_fd(c->rpc), (struct sockaddr *)&ss, &len) != 0)
		return;
	if (ss.ss_family == AF_INET)
		inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, c->addr, sizeof(c->addr));
	else if (ss.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, c->addr, sizeof(c->addr));
}

int client_connect(struct load_client *c)
{
	const struct load_opts *o = c->o;
	char err[240];

	/* MOUNT: its own short-lived connection, as a kernel client does. */
	c->rpc = connect_to(o->server, c->mountport, client_auth(c), err, sizeof(err));
	if (!c->rpc) {
		client_fail(c, "mount: %s", err);
		return -1;
	}
	struct call *call = call_new(c, &c->setup, LOAD_PROC_MNT, on_mnt, NULL);
	if (!call || call_queued(c, call, rpc_mount3_mnt_async(c->rpc, on_reply,
							   (char *)c->export, call)) < 0 ||
	    client_wait_inflight(c, 0, CALL_TIMEOUT_S) < 0 || c->root.len == 0) {
		client_fail(c, "mount %s:%s failed", o->server, c->export);
		client_close(c);
		return -1;
	}
	client_close(c);

	c->rpc = connect_to(o->server, c->nfsport, client_auth(c), err, sizeof(err));
	if (!c->rpc) {
		client_fail(c, "nfs: %s", err);
		return -1;
	}
	note_local_addr(c);
	if (issue_fsinfo(c, &c->setup, on_fsinfo, NULL) < 0 ||
	    client_wait_inflight(c, 0, CALL_TIMEOUT_S) < 0 || c->rtmax == 0)
		return -1;
	if (o->io_size > c->rtmax || (o->io_size > c->wtmax && (o->profile == PROFILE_WRITE ||
								  o->profile == PROFILE_MIXED))) {
		client_fail(c, "--io-size %llu exceeds the server's limits (rtmax %u, wtmax %u)",
			    (unsigned long long)o->io_size, c->rtmax, c->wtmax);
		return -1;
	}
	return 0;
}

void client_close(struct load_client *c)
{
	if (!c->rpc)
		return;
	c->closing = true; /* replies cancelled by the teardown are only freed */
	rpc_destroy_context(c->rpc);
	c->rpc = NULL;
	c->closing = false;
	c->inflight = 0;
}
