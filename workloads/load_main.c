/* load_main.c — strata-load: a multi-client NFSv3 load generator on libnfs.
 * Starts one thread per client and moves them in step through the phases
 * connect -> setup -> open -> run, then writes the JSON report. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "load_client.h"
#include "load_netns.h"
#include "load_pair.h"
#include "load_report.h"
#include "load_run.h"
#include "load_workingset.h"

#define DRAIN_SLACK_S 32 /* per-second series length beyond --duration */

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static bool ok(const struct load_client *c)
{
	return !c->broken && !(c->peer && c->peer->broken) && !atomic_load(&c->sh->abort);
}

/* A phase on this thread's client and, with --pair, on its twin on server B. */
static void both(struct load_client *c, int (*phase)(struct load_client *))
{
	if (ok(c))
		phase(c);
	if (c->peer && ok(c))
		phase(c->peer);
}

static void *client_thread(void *arg)
{
	struct load_client *c = arg;
	const struct load_opts *o = c->o;
	char err[200];

	if (c->sh->netns_block >= 0 &&
	    netns_enter(c->sh->netns_block, c->idx, err, sizeof(err)) < 0)
		client_fail(c, "%s", err);
	if (o->netns_delay > 0) /* observers of new interfaces (strata's wire layer) attach meanwhile */
		nanosleep(&(struct timespec){ (time_t)o->netns_delay,
					      (long)((o->netns_delay - (double)(time_t)o->netns_delay) * 1e9) }, NULL);
	both(c, client_connect);
	pthread_barrier_wait(&c->sh->barrier);          /* 1: connected */
	if (o->setup)
		both(c, workingset_create);
	pthread_barrier_wait(&c->sh->barrier);          /* 2: working set created */
	if (!o->setup_only)
		both(c, workingset_open);
	pthread_barrier_wait(&c->sh->barrier);          /* 3: handles looked up */
	pthread_barrier_wait(&c->sh->barrier);          /* 4: main has set the clock */
	if (!o->setup_only && ok(c))
		c->peer ? run_pair(c) : run_client(c);
	client_close(c);
	if (c->peer)
		client_close(c->peer);
	return NULL;
}

/* Main's side of a phase barrier: after it, one failed client stops all. */
static void phase_end(struct load_shared *sh, struct load_client *cl, int n)
{
	pthread_barrier_wait(&sh->barrier);
	for (int i = 0; i < n; i++)
		if (cl[i].broken || stop_flag)
			atomic_store(&sh->abort, 1);
}

static const char *first_error(const struct load_client *cl, int n)
{
	for (int i = 0; i < n; i++)
		if (cl[i].broken && cl[i].error[0])
			return cl[i].error;
	if (stop_flag)
		return "interrupted";
	for (int i = 0; i < n; i++)
		if (cl[i].error[0])
			return cl[i].error;
	return NULL;
}

static int write_report(const struct load_opts *o, const struct load_shared *sh,
			const struct load_client *cl, int n, const struct load_totals *t,
			const char *error)
{
	FILE *f = strcmp(o->json, "-") == 0 ? stdout : fopen(o->json, "w");

	if (!f) {
		fprintf(stderr, "strata-load: cannot write %s: %s\n", o->json, strerror(errno));
		return -1;
	}
	report_write(f, o, sh, cl, n, t, error);
	if (f == stdout ? fflush(f) != 0 : fclose(f) != 0) {
		fprintf(stderr, "strata-load: cannot write %s: %s\n", o->json, strerror(errno));
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct load_opts o;
	struct load_shared sh = { .o = &o, .stop = &stop_flag, .netns_block = -1 };
	struct sigaction sa = { .sa_handler = on_signal };
	char err[512];

	load_opts_parse(argc, argv, &o);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o.netns && geteuid() != 0) {
		fprintf(stderr, "strata-load: --netns needs root (it creates namespaces and veths)\n");
		return 1;
	}
	sh.nfsport = o.nfsport;
	sh.mountport = o.mountport;
	if (!sh.nfsport && portmap_lookup(o.server, &sh.nfsport, &sh.mountport, err, sizeof(err)) < 0) {
		fprintf(stderr, "strata-load: %s\n", err);
		return 1;
	}
	if (o.netns && (sh.netns_block = netns_pick_block()) < 0) {
		fprintf(stderr, "strata-load: no free 10.213.B.0/24 block for --netns\n");
		return 1;
	}
	sh.nsec = (uint32_t)ceil(o.duration) + DRAIN_SLACK_S;

	/* --pair: clients 0..N-1 talk to server A, N..2N-1 are their twins on server B */
	int nclients = o.pair_nfsport ? 2 * o.clients : o.clients;
	struct load_client *cl = calloc((size_t)nclients, sizeof(*cl));
	if (!cl) {
		fprintf(stderr, "strata-load: out of memory\n");
		return 1;
	}
	for (int j = 0; j < nclients; j++) {
		struct load_client *c = &cl[j];
		int i = j % o.clients;
		bool b = j >= o.clients;

		*c = (struct load_client){ .idx = i, .sh = &sh, .o = &o, .uid = 10000u + (uint32_t)i,
					   .nfsport = b ? o.pair_nfsport : sh.nfsport,
					   .mountport = b ? o.pair_mountport : sh.mountport,
					   .export = b ? o.pair_export : o.export,
					   .peer = o.pair_nfsport && !b ? &cl[j + o.clients] : NULL };
		snprintf(c->name, sizeof(c->name), b ? "client-%d-b" : "client-%d", i);
		snprintf(c->machine, sizeof(c->machine), "strata-load-%d-c%d", (int)getpid(), i);
		if (stats_init_series(&c->run, sh.nsec) < 0) {
			fprintf(stderr, "strata-load: out of memory\n");
			return 1;
		}
	}
	pthread_barrier_init(&sh.barrier, NULL, (unsigned)o.clients + 1);
	uint64_t t0 = clock_mono_ns();
	for (int i = 0; i < o.clients; i++) {
		int rc = pthread_create(&cl[i].thread, NULL, client_thread, &cl[i]);
		if (rc != 0) { /* the started threads die with the process, and their namespaces */
			fprintf(stderr, "strata-load: cannot start client thread %d: %s\n", i, strerror(rc));
			return 1;
		}
	}
	phase_end(&sh, cl, nclients);
	phase_end(&sh, cl, nclients);
	phase_end(&sh, cl, nclients);
	struct load_totals t = { .setup_s = (double)(clock_mono_ns() - t0) / 1e9 };
	struct timespec wall;
	clock_gettime(CLOCK_REALTIME, &wall);
	sh.run_start_ns = clock_mono_ns();
	t.run_start_unix = (double)wall.tv_sec + (double)wall.tv_nsec / 1e9;
	sh.run_end_ns = sh.run_start_ns + (uint64_t)(o.duration * 1e9);
	pthread_barrier_wait(&sh.barrier);
	for (int i = 0; i < o.clients; i++)
		pthread_join(cl[i].thread, NULL);
	if (!o.setup_only && !atomic_load(&sh.abort))
		t.run_s = (double)(clock_mono_ns() - sh.run_start_ns) / 1e9;
	if (o.netns)
		netns_cleanup(sh.netns_block, o.clients);

	bool failed = atomic_load(&sh.abort) != 0;
	for (int i = 0; i < nclients; i++)
		failed |= cl[i].broken;
	const char *error = first_error(cl, nclients);
	if (report_merge(&sh, cl, nclients, &t) < 0) {
		fprintf(stderr, "strata-load: out of memory\n");
		return 1;
	}
	int rc = 0;
	if (atomic_load(&sh.abort)) { /* never ran: no report, one line why */
		fprintf(stderr, "strata-load: %s\n", error ? error : "aborted");
		rc = 1;
	} else if (o.json && write_report(&o, &sh, cl, nclients, &t, error) < 0) {
		rc = 1;
	} else {
		if (!o.json || strcmp(o.json, "-") != 0)
			report_summary(stdout, &o, &t);
		if (failed || t.run.errors || t.setup.errors) {
			fprintf(stderr, "strata-load: %s\n", error ? error : "errors during the run");
			rc = 1;
		}
	}
	for (int i = 0; i < nclients; i++) {
		run_free(&cl[i]);
		free(cl[i].files);
		stats_free(&cl[i].setup);
		stats_free(&cl[i].run);
	}
	stats_free(&t.setup);
	stats_free(&t.run);
	free(cl);
	pthread_barrier_destroy(&sh.barrier);
	return rc;
}
