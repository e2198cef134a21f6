/* catalogue_host.c — whether this host can collect a statistic (its layer's module says:
 * engine binary and its probes, tracepoint BTF, nfsd running, kernel features; and
 * privileges, for the statistics computed in the kernel), and `--catalogue` with that
 * answer per statistic. */
#include "catalogue.h"
#include "emit.h"
#include "layers.h"
#include "privileges.h"

bool statistic_supported(const struct statistic *s, char *why, size_t n)
{
	return layer_supported(s, why, n) && layer_present(s->layer, why, n);
}

struct host {
	bool privileged;
	char priv[256];
};

static void host_fields(FILE *out, const struct statistic *s, void *arg)
{
	struct host *h = arg;
	char why[512];
	bool ok;

	if (!s) {
		layers_host_fields(out);
		return;
	}
	ok = statistic_supported(s, why, sizeof(why));
	if (ok && !h->privileged && s->kind != KIND_GAUGE) {
		ok = false;
		snprintf(why, sizeof(why), "%s", h->priv);
	}
	fprintf(out, ",\"supported\":%s,\"reason\":", ok ? "true" : "false");
	emit_json_string(out, ok ? "" : why);
}

void catalogue_print(FILE *out)
{
	struct host h;

	h.privileged = privileges_ok(h.priv, sizeof(h.priv));
	catalogue_write(out, host_fields, &h);
}
