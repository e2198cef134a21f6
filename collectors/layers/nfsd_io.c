/* nfsd_io.c — the layer under the kernel nfsd: bpf/nfsd_io.bpf.c on nfsd's own read and
 * write tracepoints (nfsd_read_splice, nfsd_read_vector, nfsd_read_io_done,
 * nfsd_write_opened, nfsd_write_io_done), raw_tp programs attached and detached together
 * as the layer's one probe, "io". Like the nfsd layer, it waits while nfsd's modules are
 * not loaded (the tracepoints exist only then). The tier programs (bpf/tier.h) are attached
 * while the probe is and a dataset breaks down or filters by tier, their wait on fentry where
 * the kernel allows. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "layers.h"
#include "nfsd_export.h"
#include "tier_links.h"
#include "nfsd_io.skel.h"

#define IO_PROGS 5

struct io_links {
	struct bpf_link *link[IO_PROGS];
	struct tier_links tier;
	bool attached;
};

static bool present(char *why, size_t n)
{
	return layer_present(LAYER_NFSD, why, n);
}

static int silent(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return 0;
}

static int load(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	struct nfsd_io_bpf *s;
	struct io_links *io;
	int err;

	if (!present(why, n))
		return -ENOENT;
	/* the tier's wait on fentry first, then without it (every context switch) */
	for (int fentry = 1; fentry >= 0; fentry--) {
		if (!(s = nfsd_io_bpf__open()))
			return -errno;
		s->rodata->agg_max_keys = cfg->max_keys;
		bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * cfg->max_keys);
		/* the tier programs through helper reads (raw_tp), as the others */
		bpf_program__set_autoload(s->progs.nfsd_io_tier_bio_r, false);
		bpf_program__set_autoload(s->progs.nfsd_io_tier_wait_r, false);
		bpf_program__set_autoload(s->progs.nfsd_io_tier_io_schedule, fentry);
		bpf_program__set_autoload(s->progs.nfsd_io_tier_io_schedule_timeout, fentry);
		bpf_program__set_autoload(s->progs.nfsd_io_tier_io_schedule_prepare, fentry);
		/* a refusal of the fentry programs is followed by the load without them: its
		 * account (the verifier's log) is muted */
		libbpf_print_fn_t print = fentry ? libbpf_set_print(silent) : NULL;

		err = nfsd_io_bpf__load(s);
		if (fentry)
			libbpf_set_print(print);
		if (!err)
			break;
		nfsd_io_bpf__destroy(s);
		if (!fentry) {
			snprintf(why, n, "the kernel refused the nfsd I/O programs (%s)", strerror(-err));
			return err;
		}
	}
	if (!(L->state = io = calloc(1, sizeof(struct io_links)))) {
		nfsd_io_bpf__destroy(s);
		return -ENOMEM;
	}
	io->tier.prog[0] = s->progs.nfsd_io_tier_bio_h;
	io->tier.prog[1] = s->progs.nfsd_io_tier_wait_h;
	if (bpf_program__autoload(s->progs.nfsd_io_tier_io_schedule)) {
		io->tier.fentry[0] = s->progs.nfsd_io_tier_io_schedule;
		io->tier.fentry[1] = s->progs.nfsd_io_tier_io_schedule_timeout;
		io->tier.fentry[2] = s->progs.nfsd_io_tier_io_schedule_prepare;
	}
	L->skel = s;
	LAYER_BIND_COMMON(L, s);
	layer_add_probe(L, "io", NULL, PROBE_OWN);
	return 0;
}

static void refresh(struct layer *L, layer_report_fn *report, void *ctx)
{
	struct io_links *io = L->state;

	tier_links_sync(&io->tier, tier_wanted(L, io->attached), "nfsd.io", report, ctx);
}

static void detach(struct layer *L, struct probe *p)
{
	struct io_links *io = L->state;

	for (int i = 0; i < IO_PROGS; i++) {
		bpf_link__destroy(io->link[i]);
		io->link[i] = NULL;
	}
	io->attached = false;
	refresh(L, NULL, NULL);
}

static int attach(struct layer *L, struct probe *p, char *err, size_t n)
{
	struct nfsd_io_bpf *s = L->skel;
	struct bpf_program *progs[IO_PROGS] = { s->progs.nfsd_read_splice, s->progs.nfsd_read_vector,
						s->progs.nfsd_read_io_done, s->progs.nfsd_write_opened,
						s->progs.nfsd_write_io_done };
	struct io_links *io = L->state;

	for (int i = 0; i < IO_PROGS; i++) {
		if (!(io->link[i] = bpf_program__attach(progs[i]))) {
			int e = errno;

			snprintf(err, n, "cannot attach tracepoint nfsd:%s: %s", bpf_program__name(progs[i]), strerror(e));
			detach(L, p);
			return -1;
		}
	}
	io->attached = true;
	refresh(L, NULL, NULL);
	return 0;
}

static void unload(struct layer *L)
{
	detach(L, NULL);
	free(L->state);
	L->state = NULL;
	nfsd_io_bpf__destroy(L->skel);
}

const struct layer_ops LAYER_OPS(NFSD_IO) = {
	.present = present, .load = load, .unload = unload, .attach = attach, .detach = detach, .refresh = refresh,
	.keys = nfsd_export_keys,
};
