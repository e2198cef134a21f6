/* collector.c — datasets and their control commands, engine restarts, and the
 * once-per-interval data and status records (collectors/FORMAT.md, version 1). */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "collector.h"
#include "emit.h"
#include "engine_names.h"
#include "keys.h"

static void add_error(struct collector *c, const char *msg)
{
	for (int i = 0; i < c->nerrors; i++)
		if (strcmp(c->errors[i], msg) == 0)
			return;
	if (c->nerrors < ERRORS_MAX)
		snprintf(c->errors[c->nerrors++], ERROR_LEN, "%s", msg);
}

static void report_error(void *c, const char *msg)
{
	add_error(c, msg);
}

static void reply_ack(struct collector *c, const char *id)
{
	fprintf(c->out, "{\"v\":1,\"type\":\"ack\",\"id\":");
	emit_json_string(c->out, id);
	fprintf(c->out, ",\"ok\":true}\n");
	fflush(c->out);
}

static bool reply_error(struct collector *c, const char *id, const char *msg)
{
	fprintf(c->out, "{\"v\":1,\"type\":\"error\",\"id\":");
	emit_json_string(c->out, id);
	fprintf(c->out, ",\"message\":");
	emit_json_string(c->out, msg);
	fprintf(c->out, "}\n");
	fflush(c->out);
	return true;
}

void collector_reply_error(struct collector *c, const char *id, const char *msg)
{
	reply_error(c, id, msg);
}

void collector_init(struct collector *c, FILE *out, long interval, const struct layer_config *cfg, char *engine_path,
		    pid_t pid, bool by_pid)
{
	memset(c, 0, sizeof(*c));
	c->out = out;
	c->interval = interval;
	c->cfg = *cfg;
	c->engine_path = engine_path;
	c->engine_pid = pid;
	c->by_pid = by_pid;
	engine_names_use(pid);
}

void collector_fini(struct collector *c)
{
	for (int l = 0; l < LAYER_GAUGE; l++)
		layer_unload(&c->layers[l]);
	free(c->engine_path);
}

static struct dataset *dataset_find(struct collector *c, const char *id)
{
	for (size_t i = 0; i < c->ndatasets; i++)
		if (strcmp(c->datasets[i].id, id) == 0)
			return &c->datasets[i];
	return NULL;
}

static bool valid_id(const char *id)
{
	size_t len = strlen(id);

	if (len == 0 || len >= DATASET_ID_MAX)
		return false;
	for (const char *p = id; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.:-[]=/", *p))
			return false;
	return true;
}

static struct engine_target target(const struct collector *c)
{
	return (struct engine_target){ c->engine_path, c->by_pid ? c->engine_pid : -1 };
}

/* Parses "FIELD=VALUE" filters into cfg; false with a message. */
static bool parse_filters(const struct statistic *s, char **tok, int ntok, struct agg_slot *cfg, char *err, size_t n)
{
	for (int i = 0; i < ntok; i++) {
		char *eq = strchr(tok[i], '=');
		int dim;

		if (!eq) {
			snprintf(err, n, "filter '%s' is not FIELD=VALUE", tok[i]);
			return false;
		}
		*eq = 0;
		dim = dim_parse(tok[i]);
		if (dim <= AGG_DIM_NONE || !(s->filters & (1u << dim))) {
			snprintf(err, n, "%s cannot be filtered by '%s'", s->name, tok[i]);
			return false;
		}
		for (__u32 f = 0; f < cfg->nfilters; f++) {
			if (cfg->filters[f].dim == (__u32)dim) {
				snprintf(err, n, "filter '%s' given twice", tok[i]);
				return false;
			}
		}
		if (cfg->nfilters >= AGG_MAX_FILTERS) {
			snprintf(err, n, "at most %d filters", AGG_MAX_FILTERS);
			return false;
		}
		cfg->filters[cfg->nfilters].dim = (__u32)dim;
		if (key_parse(dim, s->ops, eq + 1, cfg->filters[cfg->nfilters].value, err, n) < 0)
			return false;
		cfg->nfilters++;
	}
	return true;
}

/* Loads the layer, takes a slot and attaches what the statistic needs. */
static bool enable_kernel(struct collector *c, struct dataset *d, const struct agg_slot *cfg, char *err, size_t n)
{
	const struct statistic *s = d->stat;
	struct layer *L = &c->layers[s->layer];
	struct engine_target t = target(c);
	int p;

	if (!L->loaded && layer_load(L, s->layer, &c->cfg, err, n) < 0)
		return false;
	if ((d->slot = layer_slot_alloc(L, cfg)) < 0) {
		snprintf(err, n, "all %d %s dataset slots are in use", AGG_MAX_SLOTS, layer_name(s->layer));
		return false;
	}
	for (p = 0; p < STAT_MAX_PROBES && s->probes[p]; p++) {
		if (layer_probe_get(L, s->probes[p], &t, err, n) < 0) {
			while (--p >= 0)
				layer_probe_put(L, s->probes[p]);
			layer_slot_free(L, d->slot);
			return false;
		}
	}
	return true;
}

static void disable(struct collector *c, struct dataset *d)
{
	const struct statistic *s = d->stat;
	struct layer *L;

	if (s->layer == LAYER_GAUGE || d->waiting)
		return;
	L = &c->layers[s->layer];
	for (int p = 0; p < STAT_MAX_PROBES && s->probes[p]; p++)
		layer_probe_put(L, s->probes[p]);
	layer_slot_free(L, d->slot);
}

static bool refuse(struct collector *c, const struct dataset *d, const char *why)
{
	char msg[700];

	snprintf(msg, sizeof(msg), "%s cannot be collected: %s", d->stat->name, why);
	return reply_error(c, d->id, msg);
}

static bool command_add(struct collector *c, char **tok, int ntok)
{
	struct agg_slot cfg = { 0 };
	struct dataset d = { .slot = -1 };
	char err[512];

	if (ntok < 4)
		return reply_error(c, ntok > 1 ? tok[1] : "", "usage: add ID STATISTIC BREAKDOWN [FIELD=VALUE ...]");
	if (!valid_id(tok[1]))
		return reply_error(c, tok[1], "dataset id must be 1-63 characters of [A-Za-z0-9_.:-[]=/]");
	if (dataset_find(c, tok[1]))
		return reply_error(c, tok[1], "a dataset with this id is already enabled");
	if (c->ndatasets >= DATASETS_MAX)
		return reply_error(c, tok[1], "too many datasets");
	snprintf(d.id, sizeof(d.id), "%s", tok[1]);
	if (!(d.stat = statistic_find(tok[2]))) {
		snprintf(err, sizeof(err), "unknown statistic '%s' (see strata-collect --catalogue)", tok[2]);
		return reply_error(c, d.id, err);
	}
	d.breakdown = dim_parse(tok[3]);
	if (d.breakdown < 0 || (d.breakdown > 0 && !(d.stat->breakdowns & (1u << d.breakdown)))) {
		snprintf(err, sizeof(err), "%s has no breakdown '%s'", d.stat->name, tok[3]);
		return reply_error(c, d.id, err);
	}
	if (!parse_filters(d.stat, tok + 4, ntok - 4, &cfg, err, sizeof(err)))
		return reply_error(c, d.id, err);
	if (d.stat->layer == LAYER_GAUGE) {
		if (!statistic_supported(d.stat, c->engine_path, err, sizeof(err)))
			return reply_error(c, d.id, err);
	} else {
		cfg.stat = (__u32)d.stat->agg_stat;
		cfg.breakdown = (__u32)d.breakdown;
		d.cfg = cfg;
		if (!layer_supported(d.stat, c->engine_path, err, sizeof(err)))
			return refuse(c, &d, err);
		d.waiting = !layer_present(d.stat->layer, err, sizeof(err));
		if (!d.waiting && !enable_kernel(c, &d, &cfg, err, sizeof(err)))
			return refuse(c, &d, err);
	}
	c->datasets[c->ndatasets++] = d;
	reply_ack(c, d.id);
	return true;
}

static void emit_dataset(struct collector *c, long long t, const struct dataset *d);

/* The removed dataset's interval in progress, as its last (partial) record. */
static void flush_dataset(struct collector *c, const struct dataset *d)
{
	char err[ERROR_LEN];

	if (d->stat->layer == LAYER_GAUGE || d->waiting ||
	    layer_read_slot(&c->layers[d->stat->layer], d->slot, err, sizeof(err)) < 0)
		return;
	emit_dataset(c, (long long)time(NULL) / c->interval * c->interval, d);
	c->layers[d->stat->layer].ndeltas = 0;
}

static bool command_remove(struct collector *c, char **tok, int ntok)
{
	struct dataset *d;

	if (ntok != 2)
		return reply_error(c, ntok > 1 ? tok[1] : "", "usage: remove ID");
	if (!(d = dataset_find(c, tok[1])))
		return reply_error(c, tok[1], "no dataset with this id");
	flush_dataset(c, d);
	disable(c, d);
	memmove(d, d + 1, (size_t)(c->datasets + c->ndatasets - (d + 1)) * sizeof(*d));
	c->ndatasets--;
	reply_ack(c, tok[1]);
	return true;
}

bool collector_command(struct collector *c, char *line)
{
	char *tok[4 + AGG_MAX_FILTERS + 1], *save = NULL, *t;
	int ntok = 0;

	for (t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
		if (ntok == (int)(sizeof(tok) / sizeof(tok[0])))
			return reply_error(c, tok[1], "too many words (at most 4 filters)");
		tok[ntok++] = t;
	}
	if (ntok == 0)
		return true;
	if (strcmp(tok[0], "add") == 0)
		return command_add(c, tok, ntok);
	if (strcmp(tok[0], "remove") == 0)
		return command_remove(c, tok, ntok);
	if (strcmp(tok[0], "quit") == 0) {
		reply_ack(c, "");
		return false;
	}
	return reply_error(c, ntok > 1 ? tok[1] : "", "unknown command (add, remove, quit)");
}

/* --- per-interval records --- */

static bool engine_alive(pid_t pid, const char *exe)
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

static bool uses_usdt(const struct collector *c)
{
	for (size_t i = 0; i < c->ndatasets; i++)
		if (strcmp(layer_provider(c->datasets[i].stat->layer), "strata") == 0)
			return true;
	return false;
}

/* Follows engine restarts: a new pid for gauges, and (by pid) re-attached USDT probes. */
static void watch_engine(struct collector *c)
{
	char err[ERROR_LEN];
	pid_t old = c->engine_pid;

	if (!c->engine_path)
		return;
	if (!engine_alive(c->engine_pid, c->engine_path))
		c->engine_pid = engine_find_pid(c->engine_path);
	if (!c->by_pid)
		return;
	if (c->engine_pid != old)
		for (int l = 0; l < LAYER_GAUGE; l++)
			layer_usdt_detach(&c->layers[l]);
	if (c->engine_pid <= 0) {
		if (uses_usdt(c)) {
			snprintf(err, sizeof(err), "engine %s is not running: waiting for it to start", c->engine_path);
			add_error(c, err);
		}
		return;
	}
	for (int l = 0; l < LAYER_GAUGE; l++) { /* only USDT probes: the block tracepoints stay */
		struct engine_target t = target(c);

		if (layer_usdt_attach(&c->layers[l], &t, err, sizeof(err)) < 0)
			add_error(c, err);
	}
}

/* Enables the datasets whose layer's subject started (nfsd's modules loaded). */
static void wake_waiting(struct collector *c)
{
	char why[ERROR_LEN], err[512], msg[2 * ERROR_LEN];

	for (size_t i = 0; i < c->ndatasets; i++) {
		struct dataset *d = &c->datasets[i];

		if (!d->waiting)
			continue;
		if (d->refused[0]) {
			add_error(c, d->refused);
			continue;
		}
		if (!layer_present(d->stat->layer, why, sizeof(why))) {
			snprintf(msg, sizeof(msg), "%s: waiting for it to start", why);
			add_error(c, msg);
			continue;
		}
		if (!enable_kernel(c, d, &d->cfg, err, sizeof(err))) {
			snprintf(d->refused, sizeof(d->refused), "%s cannot be collected: %.200s", d->stat->name, err);
			add_error(c, d->refused);
			continue;
		}
		d->waiting = false;
	}
}

static void sample_gauges(struct collector *c)
{
	char err[ERROR_LEN];
	bool wanted = false;

	for (size_t i = 0; i < c->ndatasets; i++)
		wanted |= c->datasets[i].stat->layer == LAYER_GAUGE;
	c->gauges_ok = false;
	if (!wanted)
		return;
	if (c->engine_pid <= 0) {
		add_error(c, "gauges: no running engine to sample");
		return;
	}
	if (engine_stats_sample(c->engine_pid, &c->gauges, err, sizeof(err)) < 0) {
		add_error(c, err);
		return;
	}
	c->gauges_ok = true;
}

static void emit_header(struct collector *c, long long t, const struct dataset *d)
{
	static const char *const kinds[] = { "counter", "heatmap", "gauge" };

	fprintf(c->out, "{\"v\":1,\"type\":\"data\",\"t\":%lld,\"id\":", t);
	emit_json_string(c->out, d->id);
	fprintf(c->out, ",\"kind\":\"%s\",\"data\":{", kinds[d->stat->kind]);
}

static void emit_kernel(struct collector *c, const struct dataset *d)
{
	const struct layer *L = &c->layers[d->stat->layer];
	const struct count_entry *e = L->deltas, *end = L->deltas + L->ndeltas;
	bool heat = d->stat->kind == KIND_HEATMAP, first_key = true;
	char text[PATH_MAX + 64];

	if (d->waiting)
		return;
	while (e < end && e->key.slot < d->slot)
		e++;
	while (e < end && e->key.slot == d->slot) {
		const struct count_entry *k = e;

		key_format(d->breakdown, d->stat->ops, k->key.key, text, sizeof(text));
		fprintf(c->out, "%s", first_key ? "" : ",");
		emit_json_string(c->out, text);
		first_key = false;
		if (!heat) {
			uint64_t sum = 0;

			for (; e < end && e->key.slot == d->slot && !memcmp(e->key.key, k->key.key, AGG_KEY_BYTES); e++)
				sum += e->value;
			fprintf(c->out, ":%" PRIu64, sum);
			continue;
		}
		fprintf(c->out, ":{");
		for (; e < end && e->key.slot == d->slot && !memcmp(e->key.key, k->key.key, AGG_KEY_BYTES); e++)
			fprintf(c->out, "%s\"%u\":%" PRIu64, e == k ? "" : ",", e->key.bucket, e->value);
		fprintf(c->out, "}");
	}
}

static void emit_gauge(struct collector *c, const struct dataset *d)
{
	double v;

	if (c->gauges_ok && gauges_find(&c->gauges, d->stat->name, &v) == 0)
		fprintf(c->out, "\"\":%.17g", v);
}

static void emit_dataset(struct collector *c, long long t, const struct dataset *d)
{
	emit_header(c, t, d);
	if (d->stat->layer == LAYER_GAUGE)
		emit_gauge(c, d);
	else
		emit_kernel(c, d);
	fprintf(c->out, "}}\n");
}

static void emit_status(struct collector *c, long long t)
{
	uint64_t drops = 0;
	bool first = true;

	for (int l = 0; l < LAYER_GAUGE; l++)
		drops += layer_drops(&c->layers[l]);
	fprintf(c->out, "{\"v\":1,\"type\":\"status\",\"t\":%lld,\"drops\":%" PRIu64 ",\"overflows\":{", t, drops);
	for (size_t i = 0; i < c->ndatasets; i++) {
		const struct dataset *d = &c->datasets[i];

		if (d->stat->layer == LAYER_GAUGE || d->waiting)
			continue;
		fprintf(c->out, "%s", first ? "" : ",");
		emit_json_string(c->out, d->id);
		fprintf(c->out, ":%" PRIu64, layer_overflows(&c->layers[d->stat->layer], d->slot));
		first = false;
	}
	fprintf(c->out, "},\"attached\":[");
	first = true;
	for (int l = 0; l < LAYER_GAUGE; l++) {
		if (!layer_attached(&c->layers[l]))
			continue;
		fprintf(c->out, "%s\"%s\"", first ? "" : ",", layer_name((enum layer_id)l));
		first = false;
	}
	fprintf(c->out, "],\"probes\":[");
	first = true;
	for (int l = 0; l < LAYER_GAUGE; l++) {
		for (int p = 0; c->layers[l].loaded && p < c->layers[l].nprobes; p++) {
			if (!c->layers[l].probes[p].on)
				continue;
			fprintf(c->out, "%s\"%s:%s\"", first ? "" : ",", layer_provider((enum layer_id)l),
				c->layers[l].probes[p].name);
			first = false;
		}
	}
	fprintf(c->out, "],\"waiting\":[");
	first = true;
	for (size_t i = 0; i < c->ndatasets; i++) {
		if (!c->datasets[i].waiting)
			continue;
		fprintf(c->out, "%s", first ? "" : ",");
		emit_json_string(c->out, c->datasets[i].id);
		first = false;
	}
	fprintf(c->out, "],\"engine_pid\":%d", (int)c->engine_pid);
	for (int l = 0; l < LAYER_GAUGE; l++)
		layer_status(&c->layers[l], c->out);
	fprintf(c->out, ",\"errors\":[");
	for (int i = 0; i < c->nerrors; i++) {
		fprintf(c->out, "%s", i ? "," : "");
		emit_json_string(c->out, c->errors[i]);
	}
	fprintf(c->out, "]}\n");
}

int collector_event_fds(const struct collector *c, int *fds, int max)
{
	int n = 0;

	for (int l = 0; l < LAYER_GAUGE && n < max; l++)
		if ((fds[n] = layer_event_fd(&c->layers[l])) >= 0)
			n++;
	return n;
}

void collector_events(struct collector *c)
{
	for (int l = 0; l < LAYER_GAUGE; l++)
		layer_events(&c->layers[l], false);
}

void collector_tick(struct collector *c, long long t)
{
	char err[ERROR_LEN];

	c->nerrors = 0;
	watch_engine(c);
	wake_waiting(c);
	engine_names_use(c->engine_pid);
	for (int l = 0; l < LAYER_GAUGE; l++) {
		layer_events(&c->layers[l], true);
		layer_refresh(&c->layers[l], report_error, c);
	}
	for (int l = 0; l < LAYER_GAUGE; l++)
		if (c->layers[l].loaded && layer_read(&c->layers[l], err, sizeof(err)) < 0)
			add_error(c, err);
	sample_gauges(c);
	engine_names_tick();
	for (size_t i = 0; i < c->ndatasets; i++)
		emit_dataset(c, t, &c->datasets[i]);
	emit_status(c, t);
	fflush(c->out);
}
