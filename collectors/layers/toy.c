/* toy.c — a toy layer (not shipped): bpf/toy.bpf.c on syscalls:sys_enter_getppid. */
#include <errno.h>
#include <bpf/libbpf.h>
#include "layers.h"
#include "toy.skel.h"

static int load(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	struct toy_bpf *s = toy_bpf__open();
	int err;

	if (!s)
		return -errno;
	s->rodata->agg_max_keys = cfg->max_keys;
	bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * cfg->max_keys);
	if ((err = toy_bpf__load(s))) {
		toy_bpf__destroy(s);
		return err;
	}
	L->skel = s;
	LAYER_BIND_COMMON(L, s);
	layer_add_probe(L, "sys_enter_getppid", s->progs.sys_enter_getppid, PROBE_TRACEPOINT);
	return 0;
}

static void unload(struct layer *L)
{
	toy_bpf__destroy(L->skel);
}

const struct layer_ops LAYER_OPS(TOY) = { .load = load, .unload = unload };
