/* collector.c — datasets and their control commands, and the once-per-interval data and
 * status records (collectors/FORMAT.md, version 1), over the layers (layers.h). */
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
#include "clock.h"
#include "emit.h"
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

void collector_init(struct collector *c, FILE *out, long interval, const struct layer_config *cfg)
{
	memset(c, 0, sizeof(*c));
	c->out = out;
	c->interval = interval;
	c->cfg = *cfg;
	layers_init(c->layers);
	layers_set_epoch(c->layers, (long long)time(NULL) / interval * interval, interval);
}

void collector_fini(struct collector *c)
{
	layers_fini(c->layers);
}

static struct dataset *dataset_find(struct collector *c, const char *id)
{
	for (size_t i = 0; i < c->ndatasets; i++)
		if (strcmp(c->datasets[i].id, id) == 0)
			return &c->datasets[i];
	return NULL;
}

/* A dataset id needs no JSON escaping (the records print it as it is). */
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
		if (layer_key_parse(s, dim, eq + 1, cfg->filters[cfg->nfilters].value, err, n) < 0)
			return false;
		cfg->nfilters++;
	}
	return true;
}

/* Its layer loaded, a slot taken and the probes it needs attached; false with a message. */
static bool enable(struct collector *c, struct dataset *d, char *err, size_t n)
{
	return layer_dataset_add(&c->layers[d->stat->layer], &c->cfg, d->stat, &d->cfg, &d->slot, err, n) == 0;
}

static bool refuse(struct collector *c, const struct dataset *d, const char *why)
{
	char msg[ERROR_LEN * 2];

	layer_refusal(d->stat, why, msg, sizeof(msg));
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
	d.cfg = cfg;
	d.cfg.stat = (__u32)d.stat->agg_stat;
	d.cfg.breakdown = (__u32)d.breakdown;
	if (!layer_supported(d.stat, err, sizeof(err)))
		return refuse(c, &d, err);
	d.waiting = !layer_present(d.stat->layer, err, sizeof(err));
	if (!d.waiting && !enable(c, &d, err, sizeof(err)))
		return refuse(c, &d, err);
	if (!d.waiting)
		d.enabled_ns = (long long)clock_ns(CLOCK_REALTIME);
	c->datasets[c->ndatasets++] = d;
	reply_ack(c, d.id);
	return true;
}

static void emit_dataset(struct collector *c, long long t, const struct dataset *d, bool partial);

/* The removed dataset's interval in progress, as its last (partial) record. */
static void flush_dataset(struct collector *c, const struct dataset *d)
{
	char err[ERROR_LEN];

	if (d->slot < 0 || layer_read_slot(&c->layers[d->stat->layer], d->slot, err, sizeof(err)) < 0)
		return;
	emit_dataset(c, (long long)time(NULL) / c->interval * c->interval, d, false);
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
	if (!d->waiting)
		layer_dataset_remove(&c->layers[d->stat->layer], d->stat, d->slot);
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
		if (!enable(c, d, err, sizeof(err))) {
			layer_refusal(d->stat, err, d->refused, sizeof(d->refused));
			add_error(c, d->refused);
			continue;
		}
		d->waiting = false;
		d->enabled_ns = (long long)clock_ns(CLOCK_REALTIME);
	}
}

static void emit_dataset(struct collector *c, long long t, const struct dataset *d, bool partial)
{
	static const char *const kinds[] = { "counter", "heatmap", "gauge" };

	fprintf(c->out, "{\"v\":1,\"type\":\"data\",\"t\":%lld,\"id\":\"%s\",\"kind\":\"%s\",%s\"data\":{", t,
		d->id, kinds[d->stat->kind], partial ? "\"partial\":true," : "");
	if (!d->waiting)
		layer_emit(&c->layers[d->stat->layer], d->stat, d->slot, d->breakdown, c->out);
	fprintf(c->out, "}}\n");
}

static void emit_status(struct collector *c, long long t)
{
	bool first = true;

	fprintf(c->out, "{\"v\":1,\"type\":\"status\",\"t\":%lld", t);
	layers_status_drops(c->layers, c->out);
	fprintf(c->out, ",\"overflows\":{");
	for (size_t i = 0; i < c->ndatasets; i++) {
		const struct dataset *d = &c->datasets[i];

		if (d->slot < 0 || d->waiting)
			continue;
		fprintf(c->out, "%s\"%s\":%" PRIu64, first ? "" : ",", d->id,
			layer_overflows(&c->layers[d->stat->layer], d->slot));
		first = false;
	}
	fprintf(c->out, "}");
	layers_status_probes(c->layers, c->out);
	fprintf(c->out, ",\"waiting\":[");
	first = true;
	for (size_t i = 0; i < c->ndatasets; i++) {
		if (!c->datasets[i].waiting)
			continue;
		fprintf(c->out, "%s\"%s\"", first ? "" : ",", c->datasets[i].id);
		first = false;
	}
	fprintf(c->out, "]");
	layers_status_own(c->layers, c->out);
	fprintf(c->out, ",\"errors\":[");
	for (int i = 0; i < c->nerrors; i++) {
		fprintf(c->out, "%s", i ? "," : "");
		emit_json_string(c->out, c->errors[i]);
	}
	fprintf(c->out, "]}\n");
}

int collector_event_fds(const struct collector *c, int *fds, int max)
{
	return layers_event_fds(c->layers, fds, max);
}

void collector_events(struct collector *c)
{
	layers_events(c->layers, false);
}

void collector_tick(struct collector *c, long long t, bool whole)
{
	c->nerrors = 0;
	layers_upkeep(c->layers, report_error, c);
	wake_waiting(c);
	layers_read(c->layers, whole ? -1 : (int)(t / c->interval & 1), report_error, c);
	layers_set_epoch(c->layers, t + c->interval, c->interval);
	for (size_t i = 0; i < c->ndatasets; i++) {
		struct dataset *d = &c->datasets[i];

		emit_dataset(c, t, d, !d->waiting && d->enabled_ns > t * 1000000000LL);
	}
	emit_status(c, t);
	fflush(c->out);
}
