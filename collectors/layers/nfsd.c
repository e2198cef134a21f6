/* nfsd.c — the kernel nfsd layer: bpf/nfsd.bpf.c on sunrpc:svc_stats_latency, tp_btf first
 * and raw_tp (the same code through helper reads) when the kernel refuses it. nfsd's
 * tracepoints exist only while its modules are loaded: until then nfsd.* datasets wait,
 * and the collector attaches when nfsd starts. Its probe "svc_xprt_enqueue" (nfsd.queue) is the
 * transports' enqueue and dequeue; the tier programs are attached while a dataset breaks down
 * or filters by tier (bpf/nfsd.bpf.c), their wait on fentry where the kernel allows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "layers.h"
#include "nfsd_export.h"
#include "tier_links.h"
#include "nfsd.skel.h"

static bool present(char *why, size_t n)
{
	if (access("/sys/module/sunrpc", F_OK) != 0) {
		snprintf(why, n, "nfsd is not running (sunrpc module not loaded)");
		return false;
	}
	if (access("/sys/module/nfsd", F_OK) != 0) {
		snprintf(why, n, "nfsd is not running (nfsd module not loaded)");
		return false;
	}
	return true;
}

/* The links the layer keeps itself: the tier programs, the dequeue (while nfsd.queue needs
 * each request's start) and nfsd.queue's others (enqueue, data_ready, recvfrom). */
struct nfsd_links {
	struct tier_links tier;
	struct bpf_link *dequeue, *queue[3];
	bool attached; /* svc_stats_latency */
};

/* The dequeue attached exactly while the queue needs it; the reply reads the thread's record
 * only then. */
static void dequeue_sync(struct layer *L, layer_report_fn *report, void *ctx)
{
	struct nfsd_bpf *s = L->skel;
	struct nfsd_links *k = L->state;
	bool want = k->queue[0];
	char msg[160];

	if (want && !k->dequeue && !(k->dequeue = bpf_program__attach(s->progs.nfsd_dequeue)) && report) {
		snprintf(msg, sizeof(msg), "nfsd: cannot attach sunrpc:svc_xprt_dequeue: %s", strerror(errno));
		report(ctx, msg);
	} else if (!want && k->dequeue) {
		bpf_link__destroy(k->dequeue);
		k->dequeue = NULL;
	}
	s->bss->nfsd_threads_on = k->dequeue != NULL;
}

static void refresh(struct layer *L, layer_report_fn *report, void *ctx)
{
	struct nfsd_links *k = L->state;

	struct nfsd_bpf *s = L->skel;

	s->bss->nfsd_tier_on = tier_links_sync(&k->tier, tier_wanted(L, k->attached), "nfsd", report, ctx);
	dequeue_sync(L, report, ctx);
}

static int active(struct layer *L, bool on)
{
	struct nfsd_links *k = L->state;

	k->attached = on;
	refresh(L, NULL, NULL);
	return 0;
}

static void detach(struct layer *L, struct probe *p)
{
	struct nfsd_links *k = L->state;

	(void)p;
	for (int i = 0; i < 3; i++) {
		bpf_link__destroy(k->queue[i]);
		k->queue[i] = NULL;
	}
	dequeue_sync(L, NULL, NULL);
}

/* The probe "svc_xprt_enqueue" (nfsd.queue): the enqueue (svc_xprt_do_enqueue before Linux
 * 5.11), the data's arrival, the read of a whole call and the dequeue; refused in one line
 * naming the tracepoint this kernel lacks. */
static int attach(struct layer *L, struct probe *p, char *err, size_t n)
{
	struct nfsd_bpf *s = L->skel;
	struct nfsd_links *k = L->state;
	struct { struct bpf_program *prog; const char *tp, *old; } want[3] = {
		{ s->progs.nfsd_enqueue, "svc_xprt_enqueue", "svc_xprt_do_enqueue" },
		{ s->progs.nfsd_data_ready, "svcsock_data_ready", NULL },
		{ s->progs.nfsd_recvfrom, "svc_xdr_recvfrom", NULL },
	};

	for (int i = 0; i < 3; i++) {
		k->queue[i] = bpf_program__attach_raw_tracepoint(want[i].prog, want[i].tp);
		if (!k->queue[i] && want[i].old)
			k->queue[i] = bpf_program__attach_raw_tracepoint(want[i].prog, want[i].old);
		if (!k->queue[i]) {
			snprintf(err, n, "nfsd.queue needs the tracepoint sunrpc:%s, which this kernel lacks", want[i].tp);
			detach(L, p);
			return -1;
		}
	}
	dequeue_sync(L, NULL, NULL);
	if (!k->dequeue) {
		snprintf(err, n, "nfsd.queue needs the tracepoint sunrpc:svc_xprt_dequeue, which this kernel lacks");
		detach(L, p);
		return -1;
	}
	return 0;
}

static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

static int load(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	int err = -ENOENT;

	if (!present(why, n))
		return -ENOENT;
	/* tp_btf before raw_tp, each with the tier's fentry programs first */
	for (int flavour = 0; flavour < 4; flavour++) {
		bool raw = flavour >= 2, fentry = !(flavour & 1);
		struct nfsd_bpf *s = nfsd_bpf__open();
		struct nfsd_links *k;

		if (!s)
			return -errno;
		s->rodata->agg_max_keys = cfg->max_keys;
		bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * cfg->max_keys);
		bpf_program__set_autoload(s->progs.nfsd_reply_btf, !raw);
		bpf_program__set_autoload(s->progs.nfsd_reply_raw, raw);
		/* the tier's block I/O and context switch programs through helper reads (raw_tp) */
		bpf_program__set_autoload(s->progs.nfsd_tier_bio_r, false);
		bpf_program__set_autoload(s->progs.nfsd_tier_wait_r, false);
		bpf_program__set_autoload(s->progs.nfsd_tier_io_schedule, fentry);
		bpf_program__set_autoload(s->progs.nfsd_tier_io_schedule_timeout, fentry);
		bpf_program__set_autoload(s->progs.nfsd_tier_io_schedule_prepare, fentry);
		/* libbpf's account of a refusal (the verifier's log) is muted: the tp_btf flavour's is
		 * followed by the raw_tp flavour, and a refusal of both is the one line below */
		libbpf_print_fn_t print = libbpf_set_print(silent);

		err = nfsd_bpf__load(s);
		libbpf_set_print(print);
		if (err) {
			nfsd_bpf__destroy(s);
			continue;
		}
		if (!(L->state = k = calloc(1, sizeof(struct nfsd_links)))) {
			nfsd_bpf__destroy(s);
			return -ENOMEM;
		}
		k->tier.prog[0] = s->progs.nfsd_tier_bio_h;
		k->tier.prog[1] = s->progs.nfsd_tier_wait_h;
		if (fentry) {
			k->tier.fentry[0] = s->progs.nfsd_tier_io_schedule;
			k->tier.fentry[1] = s->progs.nfsd_tier_io_schedule_timeout;
			k->tier.fentry[2] = s->progs.nfsd_tier_io_schedule_prepare;
		}
		L->skel = s;
		LAYER_BIND_COMMON(L, s);
		layer_add_probe(L, "svc_stats_latency", raw ? s->progs.nfsd_reply_raw : s->progs.nfsd_reply_btf,
				PROBE_TRACEPOINT);
		layer_add_probe(L, "svc_xprt_enqueue", NULL, PROBE_OWN);
		L->probes[L->nprobes - 1].source = "sunrpc:svc_xprt_enqueue+svcsock_data_ready+svc_xdr_recvfrom+svc_xprt_dequeue";
		return 0;
	}
	snprintf(why, n, "the kernel refused the sunrpc:svc_stats_latency programs (%s; they read struct "
		 "svc_rqst through BTF, the sunrpc module's or vmlinux's)", strerror(-err));
	return err;
}

static void unload(struct layer *L)
{
	struct nfsd_links *k = L->state;

	detach(L, NULL);
	k->attached = false;
	refresh(L, NULL, NULL);
	free(k);
	L->state = NULL;
	nfsd_bpf__destroy(L->skel);
}

const struct layer_ops LAYER_OPS(NFSD) = {
	.present = present, .load = load, .unload = unload, .active = active, .attach = attach, .detach = detach,
	.refresh = refresh, .keys = nfsd_export_keys,
};
