/* usdt.h — what the layers on the engine's USDT probes (nfs, cache, vdev: one file each)
 * share with the engine layer (layers/engine.c), which knows the engine's binary and
 * follows its process: whether the binary declares their probes, attaching them to it,
 * re-attaching them when the followed process restarts, and naming the engine's files. */
#ifndef STRATA_COLLECT_USDT_H
#define STRATA_COLLECT_USDT_H

#include <errno.h>
#include <bpf/libbpf.h>
#include "engine_names.h"
#include "layers.h"

/* The engine binary is there and declares every probe s needs; why not in why. */
bool engine_usdt_supported(const struct statistic *s, char *why, size_t n);
/* Attaches probe p to the engine binary, or to the one process followed (--engine-pid). */
int engine_usdt_attach(struct layer *L, struct probe *p, char *err, size_t n);
/* Re-attaches the layer's probes to a new engine process (--engine-pid, after a restart). */
void engine_usdt_upkeep(struct layer *L, layer_report_fn *report, void *ctx);

/* The layer ID on skeleton X (bpf/X.bpf.c) and its USDT probes, named as its programs;
 * READS: which of them a dataset reads (struct layer_ops), or NULL. */
#define ENGINE_USDT_LAYER(X, ID, READS, ...)                                                        \
	static int load_##X(struct layer *L, const struct layer_config *cfg, char *why, size_t n)   \
	{                                                                                            \
		static const char *const probes[] = { __VA_ARGS__ };                                 \
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
		for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++)                      \
			layer_add_probe(L, probes[i], bpf_object__find_program_by_name(s->obj, probes[i]), \
					PROBE_OWN);                                                  \
		return 0;                                                                            \
	}                                                                                            \
	static void unload_##X(struct layer *L)                                                      \
	{                                                                                            \
		X##_bpf__destroy(L->skel);                                                           \
	}                                                                                            \
	const struct layer_ops LAYER_OPS(ID) = {                                                     \
		.supported = engine_usdt_supported, .load = load_##X, .unload = unload_##X,          \
		.attach = engine_usdt_attach, .upkeep = engine_usdt_upkeep, .keys = engine_file_keys, \
		.reads = READS,                                                                      \
	}

#endif
