/* nfsd.c — the kernel nfsd layer: refuses nfsd.* while nfsd is not running (its modules
 * not loaded), and loads bpf/nfsd.bpf.c, tp_btf first and raw_tp (the same code through
 * helper reads) when the kernel refuses it, with its one probe sunrpc:svc_stats_latency. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "layers.h"
#include "nfsd.h"
#include "nfsd.skel.h"

bool nfsd_supported(char *why, size_t n)
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

int nfsd_load(struct layer *L, unsigned max_keys, char *why, size_t n)
{
	int err = -ENOENT;

	if (!nfsd_supported(why, n))
		return -ENOENT;
	for (int raw = 0; raw < 2; raw++) {
		struct nfsd_bpf *s = nfsd_bpf__open();

		if (!s)
			return -errno;
		s->rodata->agg_max_keys = max_keys;
		bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * max_keys);
		bpf_program__set_autoload(s->progs.nfsd_reply_btf, !raw);
		bpf_program__set_autoload(s->progs.nfsd_reply_raw, raw);
		if ((err = nfsd_bpf__load(s))) {
			nfsd_bpf__destroy(s);
			continue;
		}
		L->skel = s;
		L->destroy = (void (*)(void *))nfsd_bpf__destroy;
		LAYER_BIND_COMMON(L, s);
		L->probes[L->nprobes++] = (struct probe){ .name = "svc_stats_latency",
							  .prog = raw ? s->progs.nfsd_reply_raw : s->progs.nfsd_reply_btf,
							  .kind = PROBE_TRACEPOINT };
		return 0;
	}
	snprintf(why, n, "the kernel refused the sunrpc:svc_stats_latency programs (%s; they read struct "
		 "svc_rqst through BTF, the sunrpc module's or vmlinux's)", strerror(-err));
	return err;
}
