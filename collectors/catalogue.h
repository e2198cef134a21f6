/* catalogue.h — the statistics strata-collect can collect (collectors/STATISTICS.md),
 * and `--catalogue`: the list as JSON with, per statistic, whether this host supports it. */
#ifndef STRATA_COLLECT_CATALOGUE_H
#define STRATA_COLLECT_CATALOGUE_H

#include <stdbool.h>
#include <stdio.h>
#include "keys.h"

enum stat_kind { KIND_COUNTER, KIND_HEATMAP, KIND_GAUGE };
enum layer_id { LAYER_NFS, LAYER_CACHE, LAYER_DISK, LAYER_WIRE, LAYER_GAUGE, LAYER_COUNT };

#define STAT_MAX_PROBES 2

struct statistic {
	const char *name;
	const char *unit;
	enum stat_kind kind;
	enum layer_id layer;     /* which bpf/ program (or the engine stats socket) */
	int agg_stat;            /* enum agg_stat; 0 for gauges */
	enum op_family ops;      /* names of the "op" dimension */
	unsigned breakdowns;     /* 1 << AGG_DIM_* */
	unsigned filters;        /* 1 << AGG_DIM_* */
	const char *probes[STAT_MAX_PROBES]; /* engine USDT probe names, tracepoints, or "wire" (TC) */
	const char *description;
};

extern const struct statistic statistics[];
extern const size_t nstatistics;

const struct statistic *statistic_find(const char *name);
/* "nfs", "cache", "disk", "wire", "engine" */
const char *layer_name(enum layer_id layer);

/* Whether this host can collect s; reason (if not) in why. engine_path may be NULL. */
bool statistic_supported(const struct statistic *s, const char *engine_path, char *why, size_t n);

/* The catalogue as one JSON object on out. */
void catalogue_print(FILE *out, const char *engine_path);

#endif
