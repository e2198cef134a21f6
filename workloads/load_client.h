/* load_client.h — one NFSv3 client of strata-load: its own TCP connection
 * (libnfs raw RPC context), identity (AUTH_SYS machine name and uid, optional
 * network namespace), event loop, and per-procedure accounting. Every RPC goes
 * through the issue helpers below, so each one is counted exactly once, when
 * its reply arrives, in the phase (setup or run) it was issued for. */
#ifndef STRATA_LOAD_CLIENT_H
#define STRATA_LOAD_CLIENT_H

#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs.h>

#include "load_opts.h"
#include "load_stats.h"
#include "clock.h"

struct fh {
	uint32_t len;
	char data[NFS3_FHSIZE];
};

struct file_ref {
	struct fh fh;
	uint64_t size;
};

/* State that main owns and all clients read. */
struct load_shared {
	const struct load_opts *o;
	int nfsport, mountport;
	pthread_barrier_t barrier;      /* clients + main, between phases */
	atomic_int abort;               /* a client failed or a signal arrived */
	volatile sig_atomic_t *stop;    /* set by SIGINT/SIGTERM */
	uint64_t run_start_ns, run_end_ns; /* CLOCK_MONOTONIC, set before the run barrier */
	int netns_block;                /* third octet of 10.213.B.x, -1 without --netns */
	uint32_t nsec;                  /* length of the per-second series */
};

/* One stream of dependent requests (what the seeds call a "thread"). */
struct slot {
	int idx;
	bool busy;
	int state;          /* profile-specific step */
	uint32_t file;      /* current file */
	uint64_t off, base; /* current offset; seed-l2arc: start of the 8-block run */
	int commit_file;    /* write: file to COMMIT next, or -1 */
	struct fh fh;       /* seed-l2arc: handle from this slot's own LOOKUP */
	char *buf;          /* write payload (io_size bytes) */
};

struct load_client {
	int idx;
	struct load_shared *sh;
	const struct load_opts *o;
	char name[32], machine[64], addr[INET6_ADDRSTRLEN];
	uint32_t uid;
	int nfsport, mountport;   /* the server this client talks to */
	const char *export;
	struct load_client *peer; /* --pair: this client's twin on server B (driven by this thread) */
	pthread_t thread;

	struct rpc_context *rpc;
	struct fh root;
	uint32_t rtmax, wtmax;
	struct file_ref *files;
	struct phase_stats setup, run;
	int inflight;
	bool broken;        /* connection unusable: stop issuing */
	bool closing;       /* tearing down: replies are only freed */
	char error[512];    /* first error seen, with what to do (load_hints.h) */
	uint64_t rpc_failures; /* RPCs that got no reply (also in errors) */

	/* run state */
	struct slot *slots;
	uint64_t token_ns, next_token_ns;
	uint64_t rng;
	uint32_t wfile;
	uint64_t woff;
	uint8_t *dirty;     /* per file: unstable writes not yet committed */
};

struct call;
typedef void (*call_done)(struct call *call, int nfsstat, void *res);

/* One RPC in flight. nfsstat passed to done is -1 when no reply came. */
struct call {
	struct load_client *c;
	struct phase_stats *ph;
	int proc;
	bool noent_ok;      /* NFS3ERR_NOENT is an expected answer, not an error */
	uint64_t t0;
	call_done done;
	void *arg;
	char *owned_buf;    /* freed after done */
};

void client_fail(struct load_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void client_note_error(struct load_client *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Issue helpers: 0 = queued (done will run), -1 = not queued (client broken). */
int issue_lookup(struct load_client *c, struct phase_stats *ph, const struct fh *dir,
		 const char *name, bool noent_ok, call_done done, void *arg);
int issue_read(struct load_client *c, struct phase_stats *ph, const struct fh *fh,
	       uint64_t off, uint32_t count, call_done done, void *arg);
int issue_write(struct load_client *c, struct phase_stats *ph, const struct fh *fh,
		uint64_t off, uint32_t count, int stable, char *buf, bool own_buf,
		call_done done, void *arg);
int issue_commit(struct load_client *c, struct phase_stats *ph, const struct fh *fh,
		 call_done done, void *arg);
int issue_create(struct load_client *c, struct phase_stats *ph, const struct fh *dir,
		 const char *name, call_done done, void *arg);
int issue_setattr_size(struct load_client *c, struct phase_stats *ph, const struct fh *fh,
		       uint64_t size, call_done done, void *arg);
int issue_fsinfo(struct load_client *c, struct phase_stats *ph, call_done done, void *arg);

/* Waits up to timeout_ns for socket events and services them. -1 if broken. */
int client_pump(struct load_client *c, uint64_t timeout_ns);
/* Services until at most `limit` RPCs are in flight (or the client breaks,
 * or timeout_s passes without progress). 0 on success. */
int client_wait_inflight(struct load_client *c, int limit, double timeout_s);

/* Connects (portmapper-free) to the MOUNT port, MNTs the export, then connects
 * to the NFS port and asks FSINFO; counted in c->setup. 0 on success. */
int client_connect(struct load_client *c);
void client_close(struct load_client *c);

/* Asks host's portmapper for the MOUNT v3 and NFS v3 TCP ports. */
int portmap_lookup(const char *host, int *nfsport, int *mountport, char *err, size_t errlen);

/* The thread body: identity, connect, setup, prepare, run — in step with main. */
void *client_main(void *arg);

#endif
