/* engine.c — the engine layer: its gauges, sampled from the engine's stats socket once
 * per interval (its --stats-socket, else /run/strata/engine-PID.sock); the engine's binary (--engine, --engine-pid, else strata-engine beside
 * this program) and its running process, followed across restarts; and, for the layers
 * on its USDT probes (usdt.h), attaching them to the binary or to the one process
 * followed, again after that process restarted. */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/un.h>
#include <bpf/libbpf.h>
#include "emit.h"
#include "strata_probes.h"
#include "engine_process.h"
#include "kernel_features.h"
#include "usdt.h"

static struct {
	const char *binary_arg;    /* --engine */
	long pid_arg;              /* --engine-pid, or -1 */
	char *path;                /* realpath of the engine binary, or NULL */
	pid_t pid;                 /* the running engine, or -1 */
	pid_t before;              /* pid before this interval's upkeep */
	bool by_pid;               /* --engine-pid: attach to that process, follow restarts */
} engine = { .pid_arg = -1, .pid = -1, .before = -1 };

struct gauge_state {
	struct gauges sampled;
	bool ok;                   /* sampled this interval */
};

static int binary_option(const char *arg, char *err, size_t n)
{
	engine.binary_arg = arg;
	return 0;
}

static int pid_option(const char *arg, char *err, size_t n)
{
	if ((engine.pid_arg = option_long(arg, 1, INT_MAX)) < 0) {
		snprintf(err, n, "--engine-pid needs a process id, not %s", arg);
		return -1;
	}
	return 0;
}

static int socket_option(const char *arg, char *err, size_t n)
{
	if (arg[0] != '/' || strlen(arg) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		snprintf(err, n, "--stats-socket needs an absolute path shorter than 108 bytes, not %s", arg);
		return -1;
	}
	engine_stats_socket_use(arg);
	return 0;
}

/* The default engine: strata-engine next to this program (build/bin). */
static char *default_binary(void)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		return NULL;
	self[len] = 0;
	snprintf(path, sizeof(path), "%s/strata-engine", dirname(self));
	return access(path, X_OK) == 0 ? realpath(path, NULL) : NULL;
}

/* The binary, and the process running it now. */
static int options_done(char *err, size_t n)
{
	if (engine.binary_arg && engine.pid_arg > 0) {
		snprintf(err, n, "give --engine or --engine-pid, not both");
		return -1;
	}
	if (engine.binary_arg && !(engine.path = realpath(engine.binary_arg, NULL))) {
		snprintf(err, n, "no engine binary at %s", engine.binary_arg);
		return -1;
	}
	if (engine.pid_arg > 0 && !(engine.path = engine_exe_of((pid_t)engine.pid_arg))) {
		snprintf(err, n, "no process with pid %ld", engine.pid_arg);
		return -1;
	}
	if (!engine.path)
		engine.path = default_binary();
	engine.by_pid = engine.pid_arg > 0;
	engine.pid = engine.by_pid ? (pid_t)engine.pid_arg : engine.path ? engine_find_pid(engine.path) : -1;
	engine.before = engine.pid;
	engine_names_use(engine.pid);
	return 0;
}

static bool alive(pid_t pid, const char *exe)
{
	char *now;
	bool same;

	if (pid <= 0)
		return false;
	now = engine_exe_of(pid);
	same = now && strcmp(now, exe) == 0;
	free(now);
	return same;
}

/* Follows engine restarts: the newest process running the binary, once the one followed is gone. */
static void follow(struct layer *L, layer_report_fn *report, void *ctx)
{
	engine.before = engine.pid;
	if (engine.path && !alive(engine.pid, engine.path))
		engine.pid = engine_find_pid(engine.path);
	engine_names_use(engine.pid);
}

void engine_usdt_upkeep(struct layer *L, layer_report_fn *report, void *ctx)
{
	char err[256];

	if (!L->loaded || !engine.by_pid)
		return;
	if (engine.pid != engine.before)
		layer_probes_off(L);
	if (engine.pid <= 0) {
		if (layer_in_use(L)) {
			snprintf(err, sizeof(err), "engine %s is not running: waiting for it to start", engine.path);
			report(ctx, err);
		}
		return;
	}
	if (layer_probes_on(L, err, sizeof(err)) < 0)
		report(ctx, err);
}

bool engine_usdt_supported(const struct statistic *s, char *why, size_t n)
{
	char has[32] = "declares no probe layout";
	int layout;

	if (!engine_binary_usable(engine.path, why, n))
		return false;
	if ((layout = engine_probe_layout(engine.path)) != STRATA_PROBE_LAYOUT) {
		if (layout > 0)
			snprintf(has, sizeof(has), "has probe layout %d", layout);
		snprintf(why, n, "engine binary %s %s, this collector reads layout %d: use an engine and a "
			 "collector of the same revision", engine.path, has, STRATA_PROBE_LAYOUT);
		return false;
	}
	for (int p = 0; p < STAT_MAX_PROBES && s->probes[p]; p++) {
		if (engine_has_probe(engine.path, s->probes[p]) != 1) {
			snprintf(why, n, "engine binary %s has no strata:%s USDT probe", engine.path, s->probes[p]);
			return false;
		}
	}
	return true;
}

int engine_usdt_attach(struct layer *L, struct probe *p, char *err, size_t n)
{
	pid_t pid = engine.by_pid ? engine.pid : -1;

	if (!engine.path) {
		snprintf(err, n, "no engine binary to attach strata:%s to", p->name);
		return -1;
	}
	if (pid < 0 && !kernel_has_bpf_cookie()) {
		snprintf(err, n, "kernel lacks BPF cookies (Linux 5.15+), which following every %s process needs: "
				 "give --engine-pid PID", engine.path);
		return -1;
	}
	if (!(p->link = bpf_program__attach_usdt(p->prog, pid, engine.path, "strata", p->name, NULL))) {
		int e = errno;

		snprintf(err, n, "cannot attach strata:%s in %s (pid %d): %s", p->name, engine.path, (int)pid, strerror(e));
		return -1;
	}
	return 0;
}

static bool supported(const struct statistic *s, char *why, size_t n)
{
	return engine_binary_usable(engine.path, why, n);
}

static int load(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	return (L->state = calloc(1, sizeof(struct gauge_state))) ? 0 : -ENOMEM;
}

static void unload(struct layer *L)
{
	free(L->state);
	L->state = NULL;
}

/* The gauges, while any dataset wants them. */
static int read_gauges(struct layer *L, char *err, size_t n)
{
	struct gauge_state *g = L->state;

	g->ok = false;
	if (!L->datasets)
		return 0;
	if (engine.pid <= 0) {
		snprintf(err, n, "gauges: no running engine to sample");
		return -1;
	}
	if (engine_stats_sample(engine.pid, &g->sampled, err, n) < 0)
		return -1;
	g->ok = true;
	return 0;
}

static void gauges_data(const struct layer *L, const struct statistic *s, FILE *out)
{
	const struct gauge_state *g = L->state;
	double v;

	if (g->ok && gauges_find(&g->sampled, s->name, &v) == 0)
		fprintf(out, "\"\":%.17g", v);
}

static void status(const struct layer *L, FILE *out)
{
	fprintf(out, ",\"engine_pid\":%d", (int)engine.pid);
}

static void host_fields(FILE *out)
{
	fprintf(out, ",\"engine\":");
	emit_json_string(out, engine.path ? engine.path : "");
}

static const struct layer_option options[] = {
	{ "engine", "PATH", binary_option },
	{ "engine-pid", "PID", pid_option },
	{ "stats-socket", "PATH", socket_option },
	{ NULL },
};

const struct layer_ops LAYER_OPS(ENGINE) = {
	.options = options, .options_done = options_done, .supported = supported, .load = load,
	.unload = unload, .upkeep = follow, .read = read_gauges, .data = gauges_data, .status = status,
	.host_fields = host_fields,
};
