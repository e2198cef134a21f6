/* catalogue.c — the statistics[] table compiled from statistics.def, and the catalogue
 * as JSON (the part every host shares; catalogue_host.c adds this host's). */
#include <string.h>
#include "catalogue.h"
#include "emit.h"

#define D(x) (1u << AGG_DIM_##x)

const struct statistic statistics[] = {
#define STAT_KERNEL(ID, name, kind, unit, layer, ops, breakdowns, filters, probe0, probe1, description) \
	{ name, unit, KIND_##kind, LAYER_##layer, AGG_STAT_##ID, KEYSET_##ops, breakdowns, filters,         \
	  { probe0, probe1 }, description },
#define STAT_GAUGE(ID, name, unit, description) \
	{ name, unit, KIND_GAUGE, LAYER_ENGINE, 0, KEYSET_NFS_OP, 0, 0, { NULL, NULL }, description },
#include "statistics.def"
};
const size_t nstatistics = sizeof(statistics) / sizeof(statistics[0]);

/* Each kernel statistic's op key set, kind and dimensions as constants, for the checks below. */
enum {
#define STAT_KERNEL(ID, name, kind, unit, layer, ops, breakdowns, filters, probe0, probe1, description) \
	STAT_OPS_##ID = (int)KEYSET_##ops, STAT_KIND_##ID = (int)KIND_##kind,                           \
	STAT_DIMS_##ID = (breakdowns) | (filters),
#include "statistics.def"
};

/* A STAT_UNRECORDED row names a statistic, key set, key and counter that exist (else the table
 * below does not compile), the statistic's own op key set, and a counter on that key set. */
#define STAT_UNRECORDED(STAT, SET, KEY, COUNTED_BY, why)                                           \
	_Static_assert((STAT_DIMS_##STAT & D(OP)) && STAT_OPS_##STAT == (int)KEYSET_##SET,          \
		       "STAT_UNRECORDED: " #STAT " has no op of key set " #SET);                    \
	_Static_assert((STAT_DIMS_##COUNTED_BY & D(OP)) && STAT_OPS_##COUNTED_BY == (int)KEYSET_##SET && \
			       STAT_KIND_##COUNTED_BY == (int)KIND_COUNTER,                              \
		       "STAT_UNRECORDED: " #COUNTED_BY " is not a counter of key set " #SET);
#include "statistics.def"

const struct unrecorded_op unrecorded_ops[] = {
#define STAT_UNRECORDED(STAT, SET, KEY, COUNTED_BY, why) \
	{ AGG_STAT_##STAT, AGG_##SET##_##KEY, AGG_STAT_##COUNTED_BY, why },
#include "statistics.def"
};
const size_t nunrecorded_ops = sizeof(unrecorded_ops) / sizeof(unrecorded_ops[0]);

static const char *const layer_names[LAYER_COUNT] = {
#define STAT_LAYER(ID, name, provider) [LAYER_##ID] = name,
#include "statistics.def"
};

static const char *const layer_providers[LAYER_COUNT] = {
#define STAT_LAYER(ID, name, provider) [LAYER_##ID] = provider,
#include "statistics.def"
};

const char *layer_name(enum layer_id layer)
{
	return layer_names[layer];
}

const char *layer_provider(enum layer_id layer)
{
	return layer_providers[layer];
}

const struct statistic *statistic_find(const char *name)
{
	for (size_t i = 0; i < nstatistics; i++)
		if (strcmp(statistics[i].name, name) == 0)
			return &statistics[i];
	return NULL;
}

const struct statistic *statistic_of(int agg_stat)
{
	for (size_t i = 0; i < nstatistics; i++)
		if (statistics[i].kind != KIND_GAUGE && statistics[i].agg_stat == agg_stat)
			return &statistics[i];
	return NULL;
}

static void print_dims(FILE *out, const char *field, unsigned mask)
{
	int first = 1;

	fprintf(out, ",\"%s\":[", field);
	for (int d = 1; d < AGG_DIM_COUNT; d++) {
		if (!(mask & (1u << d)))
			continue;
		fprintf(out, "%s", first ? "" : ",");
		emit_json_string(out, dim_name(d));
		first = 0;
	}
	fprintf(out, "]");
}

/* "usdt strata:nfs_ops", "tracepoints block:block_rq_issue, block:block_rq_complete", ... */
static void print_source(FILE *out, const struct statistic *s)
{
	const char *provider = layer_provider(s->layer), *how = strcmp(provider, "strata") ? "tracepoints" : "usdt";
	char src[160];

	if (s->kind == KIND_GAUGE)
		snprintf(src, sizeof(src), "engine stats socket");
	else if (s->layer == LAYER_WIRE)
		snprintf(src, sizeof(src), "tc clsact ingress and egress (ONC RPC over TCP)");
	else if (s->layer == LAYER_FS)
		snprintf(src, sizeof(src), "fentry/fexit on each followed syscall, else tracepoints "
			 "syscalls:sys_enter_X, syscalls:sys_exit_X");
	else if (s->probes[1])
		snprintf(src, sizeof(src), "%s %s:%s, %s:%s", how, provider, s->probes[0], provider, s->probes[1]);
	else
		snprintf(src, sizeof(src), "%s %s:%s", how, provider, s->probes[0]);
	emit_json_string(out, src);
}

/* "unrecorded":{"flush":{"why":"...","counted_by":"disk.ops"}}: the ops of its key set s never records. */
static void print_unrecorded(FILE *out, const struct statistic *s)
{
	int first = 1;

	fprintf(out, ",\"unrecorded\":{");
	for (size_t i = 0; s->kind != KIND_GAUGE && i < nunrecorded_ops; i++) {
		const struct unrecorded_op *u = &unrecorded_ops[i];

		if (u->agg_stat != s->agg_stat)
			continue;
		fprintf(out, "%s", first ? "" : ",");
		emit_json_string(out, key_text_of(s->ops, u->op));
		fprintf(out, ":{\"why\":");
		emit_json_string(out, u->why);
		fprintf(out, ",\"counted_by\":");
		emit_json_string(out, statistic_of(u->counted_by)->name);
		fprintf(out, "}");
		first = 0;
	}
	fprintf(out, "}");
}

static void print_statistic(FILE *out, const struct statistic *s)
{
	static const char *const kinds[] = { "counter", "heatmap", "gauge" };

	fprintf(out, "{\"name\":");
	emit_json_string(out, s->name);
	fprintf(out, ",\"unit\":\"%s\",\"kind\":\"%s\",\"layer\":\"%s\",\"ops\":\"%s\"", s->unit, kinds[s->kind],
		layer_name(s->layer), (s->breakdowns | s->filters) & (1u << AGG_DIM_OP) ? keyset_name(s->ops) : "");
	print_dims(out, "breakdowns", s->breakdowns);
	print_dims(out, "filters", s->filters);
	fprintf(out, ",\"probes\":[");
	for (int p = 0; p < STAT_MAX_PROBES && s->probes[p]; p++) {
		fprintf(out, "%s", p ? "," : "");
		emit_json_string(out, s->probes[p]);
	}
	fprintf(out, "],\"source\":");
	print_source(out, s);
	fprintf(out, ",\"description\":");
	emit_json_string(out, s->description);
	print_unrecorded(out, s);
}

static void print_keysets(FILE *out)
{
	fprintf(out, ",\n\"keysets\":[");
	for (int k = 0; k < KEYSET_COUNT; k++) {
		int first = 1;

		fprintf(out, "%s\n {\"name\":", k ? "," : "");
		emit_json_string(out, keyset_name(k));
		fprintf(out, ",\"doc\":");
		emit_json_string(out, keyset_doc(k));
		fprintf(out, ",\"keys\":[");
		for (size_t i = 0; i < nkey_texts; i++) {
			if (key_texts[i].set != (enum keyset)k)
				continue;
			fprintf(out, "%s{\"text\":", first ? "" : ",");
			emit_json_string(out, key_texts[i].text);
			fprintf(out, ",\"value\":%u}", key_texts[i].value);
			first = 0;
		}
		fprintf(out, "]}");
	}
	fprintf(out, "]");
}

void catalogue_write(FILE *out, catalogue_host_fn *host, void *arg)
{
	fprintf(out, "{\"v\":1");
	if (host)
		host(out, NULL, arg);
	fprintf(out, ",\n\"dimensions\":[");
	for (int d = 1; d < AGG_DIM_COUNT; d++) {
		fprintf(out, "%s\n {\"name\":", d > 1 ? "," : "");
		emit_json_string(out, dim_name(d));
		fprintf(out, ",\"values\":");
		emit_json_string(out, dim_values(d));
		fprintf(out, ",\"doc\":");
		emit_json_string(out, dim_doc(d));
		fprintf(out, "}");
	}
	fprintf(out, "]");
	print_keysets(out);
	fprintf(out, ",\n\"statistics\":[");
	for (size_t i = 0; i < nstatistics; i++) {
		fprintf(out, "%s\n ", i ? "," : "");
		print_statistic(out, &statistics[i]);
		if (host)
			host(out, &statistics[i], arg);
		fprintf(out, "}");
	}
	fprintf(out, "]}\n");
}
