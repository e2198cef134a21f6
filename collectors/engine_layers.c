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

/* Opens skeleton X with the key bound, loads it and binds it to L; 0 or a negative errno. */
#define LOAD_ENGINE_SKEL(X, L, cfg)                                                       \
	({                                                                                \
		struct X##_bpf *s_ = X##_bpf__open();                                     \
		int err_ = s_ ? 0 : -errno;                                               \
		if (s_) {                                                                 \
			s_->rodata->agg_max_keys = (cfg)->max_keys;                       \
			bpf_map__set_max_entries(s_->maps.agg_keyset, AGG_MAX_SLOTS * (cfg)->max_keys); \
			if ((err_ = X##_bpf__load(s_)))                                   \
				X##_bpf__destroy(s_);                                     \
			else {                                                            \
				(L)->skel = s_;                                           \
				LAYER_BIND_COMMON(L, s_);                                 \
			}                                                                 \
		}                                                                         \
		err_;                                                                     \
	})

static int load_nfs(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	int err = LOAD_ENGINE_SKEL(nfs, L, cfg);
	struct nfs_bpf *s = L->skel;

	(void)why, (void)n;
	if (!err)
		layer_add_probe(L, "nfs_ops", s->progs.nfs_ops, PROBE_USDT);
	return err;
}

static void unload_nfs(struct layer *L)
{
	nfs_bpf__destroy(L->skel);
}

static int load_cache(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	int err = LOAD_ENGINE_SKEL(cache, L, cfg);
	struct cache_bpf *s = L->skel;

	(void)why, (void)n;
	if (!err) {
		layer_add_probe(L, "l2arc_read", s->progs.l2arc_read, PROBE_USDT);
		layer_add_probe(L, "l2arc_write", s->progs.l2arc_write, PROBE_USDT);
		layer_add_probe(L, "zil_commit", s->progs.zil_commit, PROBE_USDT);
	}
	return err;
}

static void unload_cache(struct layer *L)
{
	cache_bpf__destroy(L->skel);
}

static int load_vdev(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	int err = LOAD_ENGINE_SKEL(vdev, L, cfg);
	struct vdev_bpf *s = L->skel;

	(void)why, (void)n;
	if (!err)
		layer_add_probe(L, "vdev_io_done", s->progs.vdev_io_done, PROBE_USDT);
	return err;
}

static void unload_vdev(struct layer *L)
{
	vdev_bpf__destroy(L->skel);
}

const struct layer_ops nfs_layer = { .supported = engine_supported, .load = load_nfs, .unload = unload_nfs };
const struct layer_ops cache_layer = { .supported = engine_supported, .load = load_cache, .unload = unload_cache };
const struct layer_ops vdev_layer = { .supported = engine_supported, .load = load_vdev, .unload = unload_vdev };
