/* support.c — whether this host can collect a statistic (its layer's module says: engine
 * binary and its probes, tracepoint BTF, nfsd running, kernel features; and privileges),
 * and `--catalogue` with that answer per statistic. */
#include "catalogue.h"
#include "emit.h"
#include "engine.h"
#include "layers.h"
#include "privileges.h"

bool statistic_supported(const struct statistic *s, const char *engine_path, char *why, size_t n)
{
	why[0] = 0;
	if (s->layer == LAYER_GAUGE) /* sampled from the stats socket while an engine runs */
		return engine_binary_usable(engine_path, why, n);
	return layer_supported(s, engine_path, why, n) && layer_present(s->layer, why, n);
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
