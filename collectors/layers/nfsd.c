/* nfsd.c — the kernel nfsd layer: bpf/nfsd.bpf.c on sunrpc:svc_stats_latency, tp_btf first
 * and raw_tp (the same code through helper reads) when the kernel refuses it. nfsd's
 * tracepoints exist only while its modules are loaded: until then nfsd.* datasets wait,
 * and the collector attaches when nfsd starts. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "layers.h"
#include "nfsd_export.h"
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

static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

static int load(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	int err = -ENOENT;

	if (!present(why, n))
		return -ENOENT;
	for (int raw = 0; raw < 2; raw++) {
		struct nfsd_bpf *s = nfsd_bpf__open();

		if (!s)
			return -errno;
		s->rodata->agg_max_keys = cfg->max_keys;
		bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * cfg->max_keys);
		bpf_program__set_autoload(s->progs.nfsd_reply_btf, !raw);
		bpf_program__set_autoload(s->progs.nfsd_reply_raw, raw);
		/* libbpf's account of a refusal (the verifier's log) is muted: the tp_btf flavour's is
		 * followed by the raw_tp flavour, and a refusal of both is the one line below */
		libbpf_print_fn_t print = libbpf_set_print(silent);

		err = nfsd_bpf__load(s);
		libbpf_set_print(print);
		if (err) {
			nfsd_bpf__destroy(s);
			continue;
		}
		L->skel = s;
		LAYER_BIND_COMMON(L, s);
		layer_add_probe(L, "svc_stats_latency", raw ? s->progs.nfsd_reply_raw : s->progs.nfsd_reply_btf,
				PROBE_TRACEPOINT);
		return 0;
	}
	snprintf(why, n, "the kernel refused the sunrpc:svc_stats_latency programs (%s; they read struct "
		 "svc_rqst through BTF, the sunrpc module's or vmlinux's)", strerror(-err));
	return err;
}

static void unload(struct layer *L)
{
	nfsd_bpf__destroy(L->skel);
}

const struct layer_ops LAYER_OPS(NFSD) = { .present = present, .load = load, .unload = unload, .keys = nfsd_export_keys };
