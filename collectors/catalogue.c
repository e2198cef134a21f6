/* catalogue.c — the statistics table and the `--catalogue` JSON. */
#include <string.h>
#include <unistd.h>
#include "catalogue.h"
#include "emit.h"
#include "engine.h"
#include "privileges.h"
#include "disk_btf.h"

#define D(x) (1u << (x))
#define NFS_DIMS (D(AGG_DIM_OP) | D(AGG_DIM_CLIENT) | D(AGG_DIM_TIER) | D(AGG_DIM_FILE))
#define DISK_DIMS (D(AGG_DIM_DEVICE) | D(AGG_DIM_OP))
#define L2_DIMS (D(AGG_DIM_OP) | D(AGG_DIM_FILE))
#define WIRE_DIMS (D(AGG_DIM_OP) | D(AGG_DIM_CLIENT) | D(AGG_DIM_VERSION) | D(AGG_DIM_STATUS) | D(AGG_DIM_SERVER))
#define GAUGE(n, u, d) { n, u, KIND_GAUGE, LAYER_GAUGE, 0, OPS_NFS, 0, 0, { NULL, NULL }, d }

const struct statistic statistics[] = {
	{ "nfs.ops", "operations", KIND_COUNTER, LAYER_NFS, AGG_STAT_NFS_OPS, OPS_NFS, NFS_DIMS, NFS_DIMS,
	  { "nfs_ops", NULL }, "NFSv3 and MOUNT operations completed by the engine" },
	{ "nfs.latency", "ns", KIND_HEATMAP, LAYER_NFS, AGG_STAT_NFS_LATENCY, OPS_NFS, NFS_DIMS, NFS_DIMS,
	  { "nfs_ops", NULL }, "time from request decoded to reply, per operation" },
	{ "nfs.size", "bytes", KIND_HEATMAP, LAYER_NFS, AGG_STAT_NFS_SIZE, OPS_NFS, NFS_DIMS, NFS_DIMS,
	  { "nfs_ops", NULL }, "payload bytes read or written per operation (0 for metadata)" },
	{ "arc.accesses", "records", KIND_COUNTER, LAYER_NFS, AGG_STAT_ARC_ACCESSES, OPS_NFS,
	  D(AGG_DIM_HITMISS) | NFS_DIMS, NFS_DIMS, { "nfs_ops", NULL },
	  "records looked up in the ARC by NFS operations (hit/miss from the op probe)" },
	{ "l2arc.latency", "ns", KIND_HEATMAP, LAYER_CACHE, AGG_STAT_L2ARC_LATENCY, OPS_TIER, L2_DIMS, L2_DIMS,
	  { "l2arc_read", "l2arc_write" }, "L2ARC device reads and feed writes" },
	{ "zil.latency", "ns", KIND_HEATMAP, LAYER_CACHE, AGG_STAT_ZIL_LATENCY, OPS_TIER, D(AGG_DIM_FILE),
	  D(AGG_DIM_FILE), { "zil_commit", NULL }, "ZIL commits, until durable" },
	{ "disk.ops", "operations", KIND_COUNTER, LAYER_DISK, AGG_STAT_DISK_OPS, OPS_DISK, DISK_DIMS, DISK_DIMS,
	  { "block_rq_issue", "block_rq_complete" }, "block requests completed" },
	{ "disk.latency", "ns", KIND_HEATMAP, LAYER_DISK, AGG_STAT_DISK_LATENCY, OPS_DISK, DISK_DIMS, DISK_DIMS,
	  { "block_rq_issue", "block_rq_complete" }, "block request issue to completion" },
	{ "disk.size", "bytes", KIND_HEATMAP, LAYER_DISK, AGG_STAT_DISK_SIZE, OPS_DISK, DISK_DIMS, DISK_DIMS,
	  { "block_rq_issue", "block_rq_complete" }, "bytes per block request" },
	{ "disk.offset", "bytes", KIND_HEATMAP, LAYER_DISK, AGG_STAT_DISK_OFFSET, OPS_DISK, DISK_DIMS, DISK_DIMS,
	  { "block_rq_issue", "block_rq_complete" }, "byte offset of each block request on its device" },
	{ "wire.ops", "operations", KIND_COUNTER, LAYER_WIRE, AGG_STAT_WIRE_OPS, OPS_NFS, WIRE_DIMS, WIRE_DIMS,
	  { "wire", NULL }, "NFS and MOUNT operations of any server, seen on its interfaces (reply matched to call)" },
	{ "wire.latency", "ns", KIND_HEATMAP, LAYER_WIRE, AGG_STAT_WIRE_LATENCY, OPS_NFS, WIRE_DIMS, WIRE_DIMS,
	  { "wire", NULL }, "time from a call's first packet arriving to its reply's first packet leaving" },
	{ "wire.size", "bytes", KIND_HEATMAP, LAYER_WIRE, AGG_STAT_WIRE_SIZE, OPS_NFS, WIRE_DIMS, WIRE_DIMS,
	  { "wire", NULL }, "RPC bytes of an operation: call record plus reply record" },
	GAUGE("arc.size", "bytes", "bytes held by the ARC (data and headers)"),
	GAUGE("arc.c", "bytes", "ARC target size"),
	GAUGE("arc.p", "bytes", "ARC adaptive MRU target"),
	GAUGE("arc.hdr_size", "bytes", "bytes of ARC headers"),
	GAUGE("arc.data_size", "bytes", "bytes of ARC record data"),
	GAUGE("l2arc.size", "bytes", "bytes held on the L2ARC device"),
};
const size_t nstatistics = sizeof(statistics) / sizeof(statistics[0]);

static const char *const layer_names[LAYER_COUNT] = { "nfs", "cache", "disk", "wire", "engine" };

const char *layer_name(enum layer_id layer)
{
	return layer_names[layer];
}

const struct statistic *statistic_find(const char *name)
{
	for (size_t i = 0; i < nstatistics; i++)
		if (strcmp(statistics[i].name, name) == 0)
			return &statistics[i];
	return NULL;
}

bool statistic_supported(const struct statistic *s, const char *engine_path, char *why, size_t n)
{
	why[0] = 0;
	if (s->layer == LAYER_DISK)
		return disk_btf_supported(why, n);
	if (s->layer == LAYER_WIRE)
		return true; /* TC clsact: checked when attaching (strata doctor probes it) */
	if (!engine_path) {
		snprintf(why, n, "engine binary not found (give --engine PATH or --engine-pid PID)");
		return false;
	}
	if (access(engine_path, R_OK) != 0) {
		snprintf(why, n, "engine binary %s is not readable", engine_path);
		return false;
	}
	if (s->layer == LAYER_GAUGE)
		return true; /* sampled from the stats socket while an engine runs */
	for (int p = 0; p < STAT_MAX_PROBES && s->probes[p]; p++) {
		if (engine_has_probe(engine_path, s->probes[p]) != 1) {
			snprintf(why, n, "engine binary %s has no strata:%s USDT probe", engine_path, s->probes[p]);
			return false;
		}
	}
	return true;
}

static void print_dims(FILE *out, const char *field, unsigned mask)
{
	int first = 1;

	fprintf(out, ",\"%s\":[", field);
	for (int d = 1; d < AGG_DIM_COUNT; d++) {
		if (!(mask & D(d)))
			continue;
		fprintf(out, "%s", first ? "" : ",");
		emit_json_string(out, dim_name(d));
		first = 0;
	}
	fprintf(out, "]");
}

void catalogue_print(FILE *out, const char *engine_path)
{
	static const char *const kinds[] = { "counter", "heatmap", "gauge" };
	char why[512], priv[256];
	bool privileged = privileges_ok(priv, sizeof(priv));

	fprintf(out, "{\"v\":1,\"engine\":");
	emit_json_string(out, engine_path ? engine_path : "");
	fprintf(out, ",\"statistics\":[");
	for (size_t i = 0; i < nstatistics; i++) {
		const struct statistic *s = &statistics[i];
		bool ok = statistic_supported(s, engine_path, why, sizeof(why));

		if (ok && !privileged && s->layer != LAYER_GAUGE) {
			ok = false;
			snprintf(why, sizeof(why), "%s", priv);
		}
		fprintf(out, "%s{\"name\":", i ? "," : "");
		emit_json_string(out, s->name);
		fprintf(out, ",\"unit\":\"%s\",\"kind\":\"%s\",\"layer\":\"%s\"", s->unit, kinds[s->kind],
			layer_name(s->layer));
		print_dims(out, "breakdowns", s->breakdowns);
		print_dims(out, "filters", s->filters);
		fprintf(out, ",\"source\":");
		if (s->layer == LAYER_GAUGE)
			emit_json_string(out, "engine stats socket");
		else if (s->layer == LAYER_DISK)
			emit_json_string(out, "tracepoints block:block_rq_issue, block:block_rq_complete");
		else if (s->layer == LAYER_WIRE)
			emit_json_string(out, "tc clsact ingress and egress (ONC RPC over TCP)");
		else {
			char src[128];

			snprintf(src, sizeof(src), "usdt strata:%s%s%s", s->probes[0], s->probes[1] ? ", strata:" : "",
				 s->probes[1] ? s->probes[1] : "");
			emit_json_string(out, src);
		}
		fprintf(out, ",\"description\":");
		emit_json_string(out, s->description);
		fprintf(out, ",\"supported\":%s,\"reason\":", ok ? "true" : "false");
		emit_json_string(out, ok ? "" : why);
		fprintf(out, "}");
	}
	fprintf(out, "]}\n");
}
