/* layers.c — what the collector's layers share: the one table of their modules (from
 * catalogue/statistics.def's STAT_LAYER lines), their options, loading one through its
 * module (struct layer_ops), its dataset slots and their drop and overflow counters,
 * attaching and detaching its probes as datasets come and go, the tick's upkeep and
 * reads, and the layers' part of the records (layer_counts.c reads their counts). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "catalogue.h"
#include "clock.h"
#include "emit.h"
#include "layers.h"

#define STAT_LAYER(ID, name, provider) extern const struct layer_ops LAYER_OPS(ID);
#include "statistics.def"

static const struct layer_ops *const modules[LAYER_COUNT] = {
#define STAT_LAYER(ID, name, provider) [LAYER_##ID] = &LAYER_OPS(ID),
#include "statistics.def"
};

static __u64 epoch_word; /* what every loaded program's agg_epoch holds */

long option_long(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	return v;
}

/* Not loaded: nothing but what names it. */
static void layer_reset(struct layer *L)
{
	*L = (struct layer){ .id = L->id, .ops = L->ops, .name = L->name, .provider = L->provider };
}

void layers_init(struct layer *L)
{
	for (int l = 0; l < LAYER_COUNT; l++)
		L[l] = (struct layer){ .id = (enum layer_id)l, .ops = modules[l], .name = layer_name((enum layer_id)l),
				       .provider = layer_provider((enum layer_id)l) };
}

const struct layer_option *layer_option_at(int i)
{
	for (int l = 0; l < LAYER_COUNT; l++) {
		for (const struct layer_option *o = modules[l]->options; o && o->name; o++)
			if (i-- == 0)
				return o;
	}
	return NULL;
}

int layers_options_done(char *err, size_t n)
{
	for (int l = 0; l < LAYER_COUNT; l++)
		if (modules[l]->options_done && modules[l]->options_done(err, n) < 0)
			return -1;
	return 0;
}

void layers_host_fields(FILE *out)
{
	for (int l = 0; l < LAYER_COUNT; l++)
		if (modules[l]->host_fields)
			modules[l]->host_fields(out);
}

void layer_add_probe(struct layer *L, const char *name, struct bpf_program *prog, enum probe_kind kind)
{
	L->probes[L->nprobes++] = (struct probe){ .name = name, .prog = prog, .kind = kind };
}

bool layer_supported(const struct statistic *s, char *why, size_t n)
{
	why[0] = 0;
	return !modules[s->layer]->supported || modules[s->layer]->supported(s, why, n);
}

bool layer_present(enum layer_id id, char *why, size_t n)
{
	why[0] = 0;
	return !modules[id]->present || modules[id]->present(why, n);
}

void layer_refusal(const struct statistic *s, const char *why, char *out, size_t n)
{
	snprintf(out, n, "%s cannot be collected: %.400s", s->name, why);
}

static void ignore(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
}

static int layer_load(struct layer *L, const struct layer_config *cfg, char *err, size_t n)
{
	int rc;

	err[0] = 0;
	rc = L->ops->load(L, cfg, err, n);
	if (rc) {
		if (!err[0])
			snprintf(err, n, "cannot load the %s BPF program: %s", L->name, strerror(-rc));
		layer_reset(L);
		return -1;
	}
	L->loaded = true;
	if (L->epoch)
		__atomic_store_n(L->epoch, epoch_word, __ATOMIC_RELEASE);
	return 0;
}

static void layer_unload(struct layer *L)
{
	if (!L->loaded)
		return;
	for (int i = 0; i < L->nprobes; i++)
		bpf_link__destroy(L->probes[i].link);
	if (L->ops->unload)
		L->ops->unload(L);
	free(L->prev);
	free(L->cur);
	free(L->deltas);
	layer_reset(L);
}

void layers_fini(struct layer *L)
{
	for (int l = 0; l < LAYER_COUNT; l++)
		layer_unload(&L[l]);
}

static uint64_t stats_sum(const struct layer *L, __u32 index)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t sum = 0;
	__u64 *vals;

	if (ncpu <= 0 || !(vals = calloc((size_t)ncpu, sizeof(*vals))))
		return 0;
	if (bpf_map_lookup_elem(L->stats_fd, &index, vals) == 0)
		for (int c = 0; c < ncpu; c++)
			sum += vals[c];
	free(vals);
	return sum;
}

/* Cumulative drops. */
static uint64_t layer_drops(const struct layer *L)
{
	return L->loaded && L->slots ? stats_sum(L, AGG_STATS_DROPS) : 0;
}

uint64_t layer_overflows(const struct layer *L, int slot)
{
	return stats_sum(L, 1 + (__u32)slot) - L->overflow_base[slot];
}

/* The dimensions slot s breaks down or filters by (1 << enum agg_dim). */
static __u32 slot_dims(const struct agg_slot *s)
{
	__u32 dims = 1u << s->breakdown;

	for (__u32 f = 0; f < s->nfilters && f < AGG_MAX_FILTERS; f++)
		dims |= 1u << s->filters[f].dim;
	return dims;
}

/* The program's agg_nslots and agg_dims, from the enabled slots. */
static void publish_nslots(struct layer *L)
{
	__u32 n = 0, dims = 0;

	for (__u32 i = 0; i < AGG_MAX_SLOTS; i++) {
		if (L->slots[i].stat) {
			n = i + 1;
			dims |= slot_dims(&L->slots[i]);
		}
	}
	__atomic_store_n(L->dims, dims, __ATOMIC_RELEASE);
	__atomic_store_n(L->nslots, n, __ATOMIC_RELEASE);
}

/* A slot configured as cfg (its gen is set here); returns the slot or -1 if all are taken. */
static int layer_slot_alloc(struct layer *L, const struct agg_slot *cfg)
{
	__u32 zero = 0;

	for (int i = 0; i < AGG_MAX_SLOTS; i++) {
		struct agg_slot *s = &L->slots[i];
		__u32 key = (__u32)i, stat = cfg->stat;

		if (s->stat)
			continue;
		bpf_map_update_elem(L->nkeys_fd, &key, &zero, BPF_ANY);
		s->breakdown = cfg->breakdown;
		s->nfilters = cfg->nfilters;
		memcpy(s->filters, cfg->filters, sizeof(s->filters));
		s->gen = (s->gen + 1) & 0xffff;
		L->overflow_base[i] = stats_sum(L, 1 + key);
		__atomic_store_n(L->dims, *L->dims | slot_dims(s), __ATOMIC_RELEASE); /* keys read before use */
		__atomic_store_n(&s->stat, stat, __ATOMIC_RELEASE); /* the program reads stat first */
		publish_nslots(L);
		return i;
	}
	return -1;
}

/* Deletes every counts / keyset entry of slot (any generation): collect, then delete. */
static void delete_slot_entries(int fd, size_t key_size, int slot)
{
	unsigned char *keys = NULL, *grown, last[sizeof(struct agg_key)], next[sizeof(struct agg_key)];
	size_t nkeys = 0, cap = 0;
	bool started = false;

	while (bpf_map_get_next_key(fd, started ? last : NULL, next) == 0) {
		__u16 s;

		memcpy(last, next, key_size);
		started = true;
		memcpy(&s, next, sizeof(s)); /* both key types start with __u16 slot */
		if (s != slot)
			continue;
		if (nkeys == cap) {
			cap = cap ? 2 * cap : 256;
			if (!(grown = realloc(keys, cap * key_size)))
				break;
			keys = grown;
		}
		memcpy(keys + nkeys++ * key_size, next, key_size);
	}
	for (size_t i = 0; i < nkeys; i++)
		bpf_map_delete_elem(fd, keys + i * key_size);
	free(keys);
}

/* Disables the slot and deletes its counts. */
static void layer_slot_free(struct layer *L, int slot)
{
	size_t keep = 0;

	__atomic_store_n(&L->slots[slot].stat, 0, __ATOMIC_RELEASE);
	publish_nslots(L);
	delete_slot_entries(L->counts_fd, sizeof(struct agg_key), slot);
	delete_slot_entries(L->keyset_fd, sizeof(struct agg_keyset_key), slot);
	for (size_t i = 0; i < L->nprev; i++)
		if (L->prev[i].key.slot != slot)
			L->prev[keep++] = L->prev[i];
	L->nprev = keep;
}

static struct probe *probe_find(struct layer *L, const char *name)
{
	for (int i = 0; i < L->nprobes; i++)
		if (strcmp(L->probes[i].name, name) == 0)
			return &L->probes[i];
	return NULL;
}

static bool layer_attached(const struct layer *L)
{
	for (int i = 0; L->loaded && i < L->nprobes; i++)
		if (L->probes[i].on)
			return true;
	return false;
}

static int probe_attach(struct layer *L, struct probe *p, char *err, size_t n)
{
	if (p->kind == PROBE_OWN) {
		if (L->ops->attach(L, p, err, n) < 0)
			return -1;
	} else if (!(p->link = bpf_program__attach(p->prog))) {
		int e = errno;

		snprintf(err, n, "cannot attach tracepoint %s:%s: %s", L->provider, p->name, strerror(e));
		return -1;
	}
	p->on = true;
	return 0;
}

static void probe_detach(struct layer *L, struct probe *p)
{
	if (p->kind == PROBE_OWN && p->on && L->ops->detach)
		L->ops->detach(L, p);
	bpf_link__destroy(p->link);
	p->link = NULL;
	p->on = false;
	if (L->ops->active && !layer_attached(L))
		L->ops->active(L, false);
}

/* One more user of the probe; attaches it when it had none. 0 or -1 with a message. */
static int layer_probe_get(struct layer *L, const char *name, char *err, size_t n)
{
	struct probe *p = probe_find(L, name);

	if (!p) {
		snprintf(err, n, "the %s program has no probe %s", L->name, name);
		return -1;
	}
	if (!p->on && L->ops->refresh && !layer_attached(L))
		L->ops->refresh(L, ignore, NULL); /* up to date before the first probe attaches */
	if (!p->on && L->ops->active && !layer_attached(L) && L->ops->active(L, true) < 0) {
		snprintf(err, n, "cannot attach the %s layer: %s", L->name, strerror(errno));
		return -1;
	}
	if (!p->on && probe_attach(L, p, err, n) < 0) {
		if (L->ops->active && !layer_attached(L))
			L->ops->active(L, false);
		return -1;
	}
	p->users++;
	return 0;
}

/* One user fewer; detaches it when none remain. */
static void layer_probe_put(struct layer *L, const char *name)
{
	struct probe *p = probe_find(L, name);

	if (!p || p->users <= 0)
		return;
	if (--p->users == 0)
		probe_detach(L, p);
}

void layer_probes_off(struct layer *L)
{
	for (int i = 0; L->loaded && i < L->nprobes; i++)
		if (L->probes[i].on)
			probe_detach(L, &L->probes[i]);
}

int layer_probes_on(struct layer *L, char *err, size_t n)
{
	int rc = 0;

	for (int i = 0; L->loaded && i < L->nprobes; i++) {
		struct probe *p = &L->probes[i];

		if (p->users > 0 && !p->on && probe_attach(L, p, err, n) < 0)
			rc = -1;
	}
	return rc;
}

bool layer_in_use(const struct layer *L)
{
	for (int i = 0; L->loaded && i < L->nprobes; i++)
		if (L->probes[i].users > 0)
			return true;
	return false;
}

/* Whether a dataset of slot configuration cfg (NULL: the layer has no counts) reads probe. */
static bool layer_reads(const struct layer *L, const struct agg_slot *cfg, const char *probe)
{
	return !L->ops->reads || !cfg || L->ops->reads(cfg, probe);
}

int layer_dataset_add(struct layer *L, const struct layer_config *lc, const struct statistic *s,
		      const struct agg_slot *cfg, int *slot, char *err, size_t n)
{
	int p;

	*slot = -1;
	if (!L->loaded && layer_load(L, lc, err, n) < 0)
		return -1;
	if (L->slots && (*slot = layer_slot_alloc(L, cfg)) < 0) {
		snprintf(err, n, "all %d %s dataset slots are in use", AGG_MAX_SLOTS, L->name);
		return -1;
	}
	for (p = 0; p < STAT_MAX_PROBES && s->probes[p]; p++) {
		if (layer_reads(L, cfg, s->probes[p]) && layer_probe_get(L, s->probes[p], err, n) < 0) {
			while (--p >= 0)
				if (layer_reads(L, cfg, s->probes[p]))
					layer_probe_put(L, s->probes[p]);
			if (*slot >= 0)
				layer_slot_free(L, *slot);
			*slot = -1;
			return -1;
		}
	}
	L->datasets++;
	if (L->ops->refresh && layer_attached(L)) /* upkeep that follows the datasets (fs: its tier programs) */
		L->ops->refresh(L, ignore, NULL);
	return 0;
}

void layer_dataset_remove(struct layer *L, const struct statistic *s, int slot)
{
	for (int p = 0; p < STAT_MAX_PROBES && s->probes[p]; p++)
		if (layer_reads(L, slot >= 0 ? &L->slots[slot] : NULL, s->probes[p]))
			layer_probe_put(L, s->probes[p]);
	if (slot >= 0)
		layer_slot_free(L, slot);
	L->datasets--;
}

int layers_event_fds(const struct layer *L, int *fds, int max)
{
	int n = 0;

	for (int l = 0; l < LAYER_COUNT && n < max; l++)
		if (L[l].loaded && L[l].ops->event_fd && (fds[n] = L[l].ops->event_fd(&L[l])) >= 0)
			n++;
	return n;
}

void layers_events(struct layer *L, bool rescan)
{
	for (int l = 0; l < LAYER_COUNT; l++)
		if (L[l].loaded && L[l].ops->events)
			L[l].ops->events(&L[l], rescan);
}

void layers_upkeep(struct layer *L, layer_report_fn *report, void *ctx)
{
	for (int l = 0; l < LAYER_COUNT; l++)
		if (L[l].ops->upkeep)
			L[l].ops->upkeep(&L[l], report, ctx);
}

void layers_set_epoch(struct layer *L, long long from, long interval)
{
	long long mono = (long long)clock_mono_ns(), wall = (long long)clock_ns(CLOCK_REALTIME);
	long long end = (from + interval) * 1000000000LL - wall + mono;

	epoch_word = ((__u64)end & ~1ULL) | (__u64)(from / interval & 1);
	for (int l = 0; l < LAYER_COUNT; l++)
		if (L[l].loaded && L[l].epoch)
			__atomic_store_n(L[l].epoch, epoch_word, __ATOMIC_RELEASE);
}

void layers_read(struct layer *L, int parity, layer_report_fn *report, void *ctx)
{
	char err[256];

	for (int l = 0; l < LAYER_COUNT; l++) {
		if (L[l].loaded && L[l].ops->events)
			L[l].ops->events(&L[l], true);
		if (L[l].loaded && L[l].ops->refresh && layer_attached(&L[l]))
			L[l].ops->refresh(&L[l], report, ctx);
	}
	for (int l = 0; l < LAYER_COUNT; l++) {
		int rc = 0;

		if (!L[l].loaded)
			continue;
		if (L[l].ops->read)
			rc = L[l].ops->read(&L[l], err, sizeof(err));
		else if (L[l].slots)
			rc = layer_read(&L[l], parity, err, sizeof(err));
		if (rc < 0)
			report(ctx, err);
	}
}

static const struct key_codec *codec_of(const struct statistic *s, int dim)
{
	for (const struct key_codec *k = modules[s->layer]->keys; k && k->dim; k++)
		if (k->dim == dim)
			return k;
	return NULL;
}

void layer_key_format(const struct statistic *s, int dim, const uint8_t key[AGG_KEY_BYTES], char *out, size_t n)
{
	const struct key_codec *k = dim == AGG_DIM_NONE || key_is_other(key) ? NULL : codec_of(s, dim);

	if (k)
		k->format(key, out, n);
	else
		key_format(dim, s->ops, key, out, n);
}

int layer_key_parse(const struct statistic *s, int dim, const char *text, uint8_t key[AGG_KEY_BYTES], char *err,
		    size_t n)
{
	const struct key_codec *k = codec_of(s, dim);

	memset(key, 0, AGG_KEY_BYTES);
	return k ? k->parse(text, key, err, n) : key_parse(dim, s->ops, text, key, err, n);
}

void layer_emit(const struct layer *L, const struct statistic *s, int slot, int dim, FILE *out)
{
	const struct count_entry *e = L->deltas, *end = L->deltas + L->ndeltas;
	bool heat = s->kind == KIND_HEATMAP, first_key = true;
	char text[PATH_MAX + 64];

	if (L->ops->data) {
		L->ops->data(L, s, out);
		return;
	}
	while (e < end && e->key.slot < slot)
		e++;
	while (e < end && e->key.slot == slot) {
		const struct count_entry *k = e;

		layer_key_format(s, dim, k->key.key, text, sizeof(text));
		fprintf(out, "%s", first_key ? "" : ",");
		emit_json_string(out, text);
		first_key = false;
		if (!heat) {
			uint64_t sum = 0;

			for (; e < end && e->key.slot == slot && !memcmp(e->key.key, k->key.key, AGG_KEY_BYTES); e++)
				sum += e->value;
			fprintf(out, ":%" PRIu64, sum);
			continue;
		}
		fprintf(out, ":{");
		for (; e < end && e->key.slot == slot && !memcmp(e->key.key, k->key.key, AGG_KEY_BYTES); e++)
			fprintf(out, "%s\"%u\":%" PRIu64, e == k ? "" : ",", e->key.bucket, e->value);
		fprintf(out, "}");
	}
}

void layers_status_drops(const struct layer *L, FILE *out)
{
	uint64_t drops = 0;

	for (int l = 0; l < LAYER_COUNT; l++)
		drops += layer_drops(&L[l]);
	fprintf(out, ",\"drops\":%" PRIu64, drops);
}

void layers_status_probes(const struct layer *L, FILE *out)
{
	bool first = true;

	fprintf(out, ",\"attached\":[");
	for (int l = 0; l < LAYER_COUNT; l++) {
		if (!layer_attached(&L[l]))
			continue;
		fprintf(out, "%s\"%s\"", first ? "" : ",", L[l].name);
		first = false;
	}
	fprintf(out, "],\"probes\":[");
	first = true;
	for (int l = 0; l < LAYER_COUNT; l++) {
		for (int p = 0; L[l].loaded && p < L[l].nprobes; p++) {
			if (!L[l].probes[p].on)
				continue;
			if (L[l].probes[p].source)
				fprintf(out, "%s\"%s\"", first ? "" : ",", L[l].probes[p].source);
			else
				fprintf(out, "%s\"%s:%s\"", first ? "" : ",", L[l].provider, L[l].probes[p].name);
			first = false;
		}
	}
	fprintf(out, "]");
}

void layers_status_own(const struct layer *L, FILE *out)
{
	for (int l = 0; l < LAYER_COUNT; l++)
		if (L[l].ops->status)
			L[l].ops->status(&L[l], out);
}
