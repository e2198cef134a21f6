/* catalogue.h — the statistics strata-collect can collect, compiled from
 * catalogue/statistics.def, and `--catalogue`: the list as JSON with, per statistic,
 * whether this host supports it. */
#ifndef STRATA_COLLECT_CATALOGUE_H
#define STRATA_COLLECT_CATALOGUE_H

#include <stdbool.h>
#include <stdio.h>
#include "keys.h"

enum stat_kind { KIND_COUNTER, KIND_HEATMAP, KIND_GAUGE };
enum layer_id {
#define STAT_LAYER(ID, name, provider) LAYER_##ID,
#include "statistics.def"
	LAYER_COUNT
};

#define STAT_MAX_PROBES 2

struct statistic {
	const char *name;
	const char *unit;
	enum stat_kind kind;
	enum layer_id layer;     /* which bpf/ program (or the engine stats socket) */
	int agg_stat;            /* enum agg_stat; 0 for gauges */
	enum keyset ops;         /* names of the "op" dimension */
	unsigned breakdowns;     /* 1 << AGG_DIM_* */
	unsigned filters;        /* 1 << AGG_DIM_* */
	const char *probes[STAT_MAX_PROBES]; /* engine USDT probe names, tracepoints, or "wire" (TC) */
	const char *description;
};

extern const struct statistic statistics[];
extern const size_t nstatistics;

/* An op of a statistic's key set that it never records (STAT_UNRECORDED in statistics.def). */
struct unrecorded_op {
	int agg_stat;            /* enum agg_stat of the statistic */
	uint32_t op;             /* key value in the statistic's op key set */
	int counted_by;          /* enum agg_stat of the counter that counts it */
	const char *why;
};

extern const struct unrecorded_op unrecorded_ops[];
extern const size_t nunrecorded_ops;

const struct statistic *statistic_find(const char *name);
/* The kernel statistic of an enum agg_stat; NULL if none. */
const struct statistic *statistic_of(int agg_stat);
/* "engine", "nfs", "cache", "disk", "vdev", "wire", "fs", "nfsd", "nfsd_io" */
const char *layer_name(enum layer_id layer);
/* Who defines the layer's probes: "strata" (the engine's USDT), "block", "raw_syscalls" or
 * "sunrpc" (tracepoints), "tc" (the wire view's TC programs); "" for the engine's gauges. */
const char *layer_provider(enum layer_id layer);

/* Writes the catalogue as one JSON object: its dimensions, key sets and statistics
 * (collectors/FORMAT.md). host, when not NULL, adds this host's fields: once with
 * s == NULL to the top-level object, then to each statistic's object. */
typedef void catalogue_host_fn(FILE *out, const struct statistic *s, void *arg);
void catalogue_write(FILE *out, catalogue_host_fn *host, void *arg);

/* catalogue_host.c: whether this host can collect s; reason (if not) in why. */
bool statistic_supported(const struct statistic *s, char *why, size_t n);

/* `strata-collect --catalogue`: the catalogue with this host's support of each statistic. */
void catalogue_print(FILE *out);

#endif
