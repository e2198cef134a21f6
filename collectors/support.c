/* support.c — whether this host can collect a statistic (engine binary and its probes,
 * block and syscall tracepoint BTF, nfsd running, kernel features, privileges), and `--catalogue` with that answer per statistic. */
#include <stdlib.h>
#include <unistd.h>
#include "catalogue.h"
#include "disk_btf.h"
#include "emit.h"
#include "engine.h"
#include "fs.h"
#include "kernel_features.h"
#include "nfsd.h"
#include "privileges.h"

bool statistic_supported(const struct statistic *s, const char *engine_path, char *why, size_t n)
{
	why[0] = 0;
	if (s->layer == LAYER_DISK)
		return disk_btf_supported(why, n);
	if (s->layer == LAYER_WIRE) /* TC clsact: checked when attaching (strata doctor probes it) */
		return true;
	if (s->layer == LAYER_FS)
		return fs_supported(why, n);
	if (s->layer == LAYER_NFSD)
		return nfsd_supported(why, n);
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

struct host {
	const char *engine_path;
	bool privileged;
	char priv[256];
};

static void host_fields(FILE *out, const struct statistic *s, void *arg)
{
	struct host *h = arg;
	char why[512];
	bool ok;

	if (!s) {
		fprintf(out, ",\"engine\":");
		emit_json_string(out, h->engine_path ? h->engine_path : "");
		return;
	}
	ok = statistic_supported(s, h->engine_path, why, sizeof(why));
	if (ok && !h->privileged && s->layer != LAYER_GAUGE) {
		ok = false;
		snprintf(why, sizeof(why), "%s", h->priv);
	}
	fprintf(out, ",\"supported\":%s,\"reason\":", ok ? "true" : "false");
	emit_json_string(out, ok ? "" : why);
}

void catalogue_print(FILE *out, const char *engine_path)
{
	struct host h = { .engine_path = engine_path };

	h.privileged = privileges_ok(h.priv, sizeof(h.priv));
	catalogue_write(out, host_fields, &h);
}
