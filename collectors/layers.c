/* layers.c — what the collector's layers share: loading one through its module
 * (struct layer_ops), its dataset slots and their drop and overflow counters, and
 * attaching and detaching its probes as datasets come and go (layer_counts.c reads its
 * counts). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "catalogue.h"
#include "kernel_features.h"
#include "layers.h"

void layer_add_probe(struct layer *L, const char *name, struct bpf_program *prog, enum probe_kind kind)
{
	L->probes[L->nprobes++] = (struct probe){ .name = name, .prog = prog, .kind = kind };
}

static const struct layer_ops *const modules[LAYER_GAUGE] = {
	[LAYER_NFS] = &nfs_layer,   [LAYER_CACHE] = &cache_layer, [LAYER_DISK] = &disk_layer, [LAYER_VDEV] = &vdev_layer,
	[LAYER_WIRE] = &wire_layer, [LAYER_FS] = &fs_layer,       [LAYER_NFSD] = &nfsd_layer,
	[LAYER_NFSD_IO] = &nfsd_io_layer,
};

const struct layer_ops *layer_ops_of(enum layer_id id)
{
	return modules[id];
}

bool layer_supported(const struct statistic *s, const char *engine_path, char *why, size_t n)
{
	why[0] = 0;
	return !modules[s->layer]->supported || modules[s->layer]->supported(s, engine_path, why, n);
}

bool layer_present(enum layer_id id, char *why, size_t n)
{
	why[0] = 0;
	return !modules[id]->present || modules[id]->present(why, n);
}

static void ignore(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
}

int layer_load(struct layer *L, enum layer_id id, const struct layer_config *cfg, char *err, size_t n)
{
	int rc;

	memset(L, 0, sizeof(*L));
	L->id = id;
	L->ops = modules[id];
	err[0] = 0;
	rc = L->ops->load(L, cfg, err, n);
	if (rc) {
		if (!err[0])
			snprintf(err, n, "cannot load the %s BPF program: %s", layer_name(id), strerror(-rc));
		memset(L, 0, sizeof(*L));
		return -1;
	}
	L->loaded = true;
	return 0;
}

void layer_unload(struct layer *L)
{
	if (!L->loaded)
		return;
	for (int i = 0; i < L->nprobes; i++)
		bpf_link__destroy(L->probes[i].link);
	L->ops->unload(L);
	free(L->prev);
	free(L->cur);
	free(L->deltas);
	memset(L, 0, sizeof(*L));
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

uint64_t layer_drops(const struct layer *L)
{
	return L->loaded ? stats_sum(L, AGG_STATS_DROPS) : 0;
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

int layer_slot_alloc(struct layer *L, const struct agg_slot *cfg)
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

void layer_refresh(struct layer *L, layer_report_fn *report, void *ctx)
{
	if (L->loaded && L->ops->refresh && layer_attached(L))
		L->ops->refresh(L, report, ctx);
}

void layer_status(const struct layer *L, FILE *out)
{
	if (L->loaded && L->ops->status)
		L->ops->status(L, out);
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

void layer_slot_free(struct layer *L, int slot)
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

static int probe_attach(struct layer *L, struct probe *p, const struct engine_target *t, char *err, size_t n)
{
	struct bpf_link *link;

	if (p->kind == PROBE_OWN) {
		if (L->ops->attach(L, err, n) < 0)
			return -1;
		p->on = true;
		return 0;
	}
	if (p->kind == PROBE_USDT && !t->path) {
		snprintf(err, n, "no engine binary to attach strata:%s to", p->name);
		return -1;
	}
	if (p->kind == PROBE_USDT && t->pid < 0 && !kernel_has_bpf_cookie()) {
		snprintf(err, n, "kernel lacks BPF cookies (Linux 5.15+), which following every %s process needs: "
				 "give --engine-pid PID", t->path);
		return -1;
	}
	if (p->kind == PROBE_USDT)
		link = bpf_program__attach_usdt(p->prog, t->pid, t->path, "strata", p->name, NULL);
	else
		link = bpf_program__attach(p->prog);
	if (!link) {
		int e = errno;

		if (p->kind == PROBE_USDT)
			snprintf(err, n, "cannot attach strata:%s in %s (pid %d): %s", p->name, t->path, (int)t->pid,
				 strerror(e));
		else
			snprintf(err, n, "cannot attach tracepoint %s:%s: %s", layer_provider(L->id), p->name,
				 strerror(e));
		return -1;
	}
	p->link = link;
	p->on = true;
	return 0;
}

static void probe_detach(struct layer *L, struct probe *p)
{
	if (p->kind == PROBE_OWN && p->on)
		L->ops->detach(L);
	bpf_link__destroy(p->link);
	p->link = NULL;
	p->on = false;
	if (L->ops->active && !layer_attached(L))
		L->ops->active(L, false);
}

int layer_probe_get(struct layer *L, const char *name, const struct engine_target *t, char *err, size_t n)
{
	struct probe *p = probe_find(L, name);

	if (!p) {
		snprintf(err, n, "the %s program has no probe %s", layer_name(L->id), name);
		return -1;
	}
	if (!p->on && L->ops->refresh && !layer_attached(L))
		L->ops->refresh(L, ignore, NULL); /* up to date before the first probe attaches */
	if (!p->on && L->ops->active && !layer_attached(L) && L->ops->active(L, true) < 0) {
		snprintf(err, n, "cannot attach the %s layer: %s", layer_name(L->id), strerror(errno));
		return -1;
	}
	if (!p->on && probe_attach(L, p, t, err, n) < 0) {
		if (L->ops->active && !layer_attached(L))
			L->ops->active(L, false);
		return -1;
	}
	p->users++;
	return 0;
}

void layer_probe_put(struct layer *L, const char *name)
{
	struct probe *p = probe_find(L, name);

	if (!p || p->users <= 0)
		return;
	if (--p->users == 0)
		probe_detach(L, p);
}

void layer_usdt_detach(struct layer *L)
{
	for (int i = 0; L->loaded && i < L->nprobes; i++) {
		if (L->probes[i].kind == PROBE_USDT && L->probes[i].on)
			probe_detach(L, &L->probes[i]);
	}
}

int layer_usdt_attach(struct layer *L, const struct engine_target *t, char *err, size_t n)
{
	int rc = 0;

	for (int i = 0; L->loaded && i < L->nprobes; i++) {
		struct probe *p = &L->probes[i];

		if (p->kind == PROBE_USDT && p->users > 0 && !p->on && probe_attach(L, p, t, err, n) < 0)
			rc = -1;
	}
	return rc;
}

int layer_event_fd(const struct layer *L)
{
	return L->loaded && L->ops->event_fd ? L->ops->event_fd(L) : -1;
}

void layer_events(struct layer *L, bool rescan)
{
	if (L->loaded && L->ops->events)
		L->ops->events(L, rescan);
}

bool layer_attached(const struct layer *L)
{
	for (int i = 0; L->loaded && i < L->nprobes; i++)
		if (L->probes[i].on)
			return true;
	return false;
}

