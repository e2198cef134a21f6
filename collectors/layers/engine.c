/* engine_layers.c — the engine's own layers, nfs, cache and vdev: bpf/nfs.bpf.c,
 * cache.bpf.c and vdev.bpf.c on the engine's USDT probes (engine/strata_probes.h), which
 * the collector attaches to the engine binary, or to one engine process. */
#include <errno.h>
#include <stdio.h>
#include <bpf/libbpf.h>
#include "catalogue.h"
#include "engine.h"
#include "layers.h"
#include "nfs.skel.h"
#include "cache.skel.h"
#include "vdev.skel.h"

/* The engine binary is there and declares every probe s needs. */
static bool engine_supported(const struct statistic *s, const char *engine_path, char *why, size_t n)
{
	if (!engine_binary_usable(engine_path, why, n))
		return false;
	for (int p = 0; p < STAT_MAX_PROBES && s->probes[p]; p++) {
		if (engine_has_probe(engine_path, s->probes[p]) != 1) {
			snprintf(why, n, "engine binary %s has no strata:%s USDT probe", engine_path, s->probes[p]);
			return false;
		}
	}
	return true;
}

/* Adds the USDT probes named in names (NULL-ended): each program is named as its probe. */
static void add_probes(struct layer *L, struct bpf_object *obj, const char *const *names)
{
	for (; *names; names++)
		layer_add_probe(L, *names, bpf_object__find_program_by_name(obj, *names), PROBE_USDT);
}

/* The layer X_layer on skeleton X (bpf/X.bpf.c) and its USDT probes, named as its programs. */
#define ENGINE_LAYER(X, ...)                                                                         \
	static int load_##X(struct layer *L, const struct layer_config *cfg, char *why, size_t n)   \
	{                                                                                            \
		struct X##_bpf *s = X##_bpf__open();                                                 \
		int err;                                                                             \
                                                                                                     \
		(void)why, (void)n;                                                                  \
		if (!s)                                                                              \
			return -errno;                                                               \
		s->rodata->agg_max_keys = cfg->max_keys;                                             \
		bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * cfg->max_keys);         \
		if ((err = X##_bpf__load(s))) {                                                      \
			X##_bpf__destroy(s);                                                         \
			return err;                                                                  \
		}                                                                                    \
		L->skel = s;                                                                         \
		LAYER_BIND_COMMON(L, s);                                                             \
		add_probes(L, s->obj, (const char *const[]){ __VA_ARGS__, NULL });                   \
		return 0;                                                                            \
	}                                                                                            \
	static void unload_##X(struct layer *L)                                                      \
	{                                                                                            \
		X##_bpf__destroy(L->skel);                                                           \
	}                                                                                            \
	const struct layer_ops X##_layer = { .supported = engine_supported, .load = load_##X, .unload = unload_##X }

ENGINE_LAYER(nfs, "nfs_ops");
ENGINE_LAYER(cache, "l2arc_read", "l2arc_write", "zil_commit");
ENGINE_LAYER(vdev, "vdev_io_done");
