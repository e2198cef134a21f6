/* layers.c — loads the nfs / cache / disk / vdev / fs skeletons (and the wire layer through
 * wire.c, the nfsd layer through nfsd.c), manages their dataset slots and probe links, and turns their cumulative per-CPU counts into per-interval deltas
 * (batch map reads, sorted snapshots, merge-diff). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "layers.h"
#include "disk_btf.h"
#include "kernel_features.h"
#include "nfs.skel.h"
#include "cache.skel.h"
#include "disk.skel.h"
#include "vdev.skel.h"
#include "fs.h"
#include "fs_names.h"
#include "fs.skel.h"
#include "nfsd.h"

#define READ_CHUNK 4096

static void add_probe(struct layer *L, const char *name, struct bpf_program *prog, enum probe_kind kind)
{
	L->probes[L->nprobes++] = (struct probe){ .name = name, .prog = prog, .kind = kind };
}

static int load_nfs(struct layer *L, unsigned max_keys)
{
	struct nfs_bpf *s = nfs_bpf__open();
	int err;

	if (!s)
		return -errno;
	s->rodata->agg_max_keys = max_keys;
	bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * max_keys);
	if ((err = nfs_bpf__load(s))) {
		nfs_bpf__destroy(s);
		return err;
	}
	L->skel = s;
	L->destroy = (void (*)(void *))nfs_bpf__destroy;
	LAYER_BIND_COMMON(L, s);
	add_probe(L, "nfs_ops", s->progs.nfs_ops, PROBE_USDT);
	return 0;
}

static int load_cache(struct layer *L, unsigned max_keys)
{
	struct cache_bpf *s = cache_bpf__open();
	int err;

	if (!s)
		return -errno;
	s->rodata->agg_max_keys = max_keys;
	bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * max_keys);
	if ((err = cache_bpf__load(s))) {
		cache_bpf__destroy(s);
		return err;
	}
	L->skel = s;
	L->destroy = (void (*)(void *))cache_bpf__destroy;
	LAYER_BIND_COMMON(L, s);
	add_probe(L, "l2arc_read", s->progs.l2arc_read, PROBE_USDT);
	add_probe(L, "l2arc_write", s->progs.l2arc_write, PROBE_USDT);
	add_probe(L, "zil_commit", s->progs.zil_commit, PROBE_USDT);
	return 0;
}

static int load_vdev(struct layer *L, unsigned max_keys)
{
	struct vdev_bpf *s = vdev_bpf__open();
	int err;

	if (!s)
		return -errno;
	s->rodata->agg_max_keys = max_keys;
	bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * max_keys);
	if ((err = vdev_bpf__load(s))) {
		vdev_bpf__destroy(s);
		return err;
	}
	L->skel = s;
	L->destroy = (void (*)(void *))vdev_bpf__destroy;
	LAYER_BIND_COMMON(L, s);
	add_probe(L, "vdev_io_done", s->progs.vdev_io_done, PROBE_USDT);
	return 0;
}

/* The requeue program (it only forgets requeued requests) is attached while the disk
 * layer is; once no disk probe is, the issues whose completions came meanwhile are
 * forgotten (they would count as missed completions when re-attached). */
static int disk_active(struct layer *L, bool on)
{
	struct disk_bpf *s = L->skel;
	struct bpf_program *requeue = s->progs.disk_requeue_btf;
	int fd = bpf_map__fd(s->maps.starts);
	__u64 key;

	if (!bpf_program__autoload(requeue))
		requeue = s->progs.disk_requeue_raw;
	if (on) {
		s->links.disk_requeue_btf = bpf_program__attach(requeue);
		return s->links.disk_requeue_btf ? 0 : -errno;
	}
	bpf_link__destroy(s->links.disk_requeue_btf);
	s->links.disk_requeue_btf = NULL;
	while (bpf_map_get_next_key(fd, NULL, &key) == 0)
		bpf_map_delete_elem(fd, &key);
	return 0;
}

/* tp_btf first; raw_tp (same code, untyped arguments) when the kernel refuses it. */
static int load_disk(struct layer *L, unsigned max_keys, char *why, size_t n)
{
	int issue_arg = disk_btf_request_arg("block_rq_issue", why, n);
	int complete_arg = disk_btf_request_arg("block_rq_complete", why, n);
	int requeue_arg = disk_btf_request_arg("block_rq_requeue", why, n);
	int err = -ENOENT;

	if (issue_arg < 0 || complete_arg < 0 || requeue_arg < 0)
		return -ENOTSUP;
	for (int raw = 0; raw < 2; raw++) {
		struct disk_bpf *s = disk_bpf__open();

		if (!s)
			return -errno;
		s->rodata->agg_max_keys = max_keys;
		s->rodata->issue_rq_arg = (__u32)issue_arg;
		s->rodata->complete_rq_arg = (__u32)complete_arg;
		s->rodata->requeue_rq_arg = (__u32)requeue_arg;
		bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * max_keys);
		bpf_program__set_autoload(s->progs.disk_issue_btf, !raw);
		bpf_program__set_autoload(s->progs.disk_complete_btf, !raw);
		bpf_program__set_autoload(s->progs.disk_issue_raw, raw);
		bpf_program__set_autoload(s->progs.disk_complete_raw, raw);
		bpf_program__set_autoload(s->progs.disk_requeue_btf, !raw);
		bpf_program__set_autoload(s->progs.disk_requeue_raw, raw);
		if ((err = disk_bpf__load(s))) {
			disk_bpf__destroy(s);
			continue;
		}
		L->skel = s;
		L->destroy = (void (*)(void *))disk_bpf__destroy;
		L->active = disk_active;
		LAYER_BIND_COMMON(L, s);
		add_probe(L, "block_rq_issue", raw ? s->progs.disk_issue_raw : s->progs.disk_issue_btf, PROBE_TRACEPOINT);
		add_probe(L, "block_rq_complete", raw ? s->progs.disk_complete_raw : s->progs.disk_complete_btf,
			  PROBE_TRACEPOINT);
		return 0;
	}
	snprintf(why, n, "the kernel refused the block tracepoint programs (%s)", strerror(-err));
	return err;
}

static void ignore(void *ctx, const char *msg)
{
	(void)ctx;
	(void)msg;
}

/* Once per interval: the processes followed, and the paths their openat calls gave. */
static void refresh_fs(void (*report)(void *ctx, const char *msg), void *ctx)
{
	fs_refresh(report, ctx);
	fs_names_drain();
}

static void destroy_fs(void *skel)
{
	fs_names_unbind();
	fs_bpf__destroy(skel);
}

/* Needs processes to follow (fs.h); their map is filled before any probe attaches. */
static int load_fs(struct layer *L, unsigned max_keys, char *why, size_t n)
{
	struct bpf_program *enter[3], *leave[3];
	struct fs_bpf *s;
	int err, mode;

	if (!fs_chosen_any()) {
		snprintf(why, n, "no processes chosen: start the collector with --fs-pid PID, --fs-comm NAME "
				 "or --fs-cgroup PATH");
		return -EINVAL;
	}
	if (!fs_supported(why, n))
		return -ENOTSUP;
	if (!(s = fs_bpf__open()))
		return -errno;
	/* the program pair this kernel allows (bpf/fs.bpf.c, enum fs_mode) */
	mode = kernel_has_kfunc("bpf_rdonly_cast") ? 0 : kernel_has_task_storage() ? 1 : 2;
	enter[0] = s->progs.fs_enter, enter[1] = s->progs.fs_enter_read, enter[2] = s->progs.fs_enter_hashed;
	leave[0] = s->progs.fs_exit, leave[1] = s->progs.fs_exit_read, leave[2] = s->progs.fs_exit_hashed;
	for (int m = 0; m < 3; m++) {
		bpf_program__set_autoload(enter[m], m == mode);
		bpf_program__set_autoload(leave[m], m == mode);
	}
	bpf_map__set_autocreate(s->maps.fs_pending, mode != 2);
	bpf_map__set_autocreate(s->maps.fs_pending_tid, mode == 2);
	s->rodata->agg_max_keys = max_keys;
	s->rodata->ns_per_tick = fs_ns_per_tick();
	bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * max_keys);
	if ((err = fs_bpf__load(s)) || (err = fs_names_bind(bpf_map__fd(s->maps.fs_names)) ? -errno : 0)) {
		fs_bpf__destroy(s);
		return err;
	}
	L->skel = s;
	L->destroy = destroy_fs;
	LAYER_BIND_COMMON(L, s);
	add_probe(L, "sys_enter", enter[mode], PROBE_TRACEPOINT);
	add_probe(L, "sys_exit", leave[mode], PROBE_TRACEPOINT);
	fs_bind(bpf_map__fd(s->maps.fs_pids), bpf_map__fd(s->maps.fs_cgroup), &s->bss->fs_use_cgroup);
	L->refresh = refresh_fs;
	return 0;
}

int layer_load(struct layer *L, enum layer_id id, const struct layer_config *cfg, char *err, size_t n)
{
	unsigned max_keys = cfg->max_keys;
	int rc;

	memset(L, 0, sizeof(*L));
	L->id = id;
	err[0] = 0;
	if (id == LAYER_NFS)
		rc = load_nfs(L, max_keys);
	else if (id == LAYER_CACHE)
		rc = load_cache(L, max_keys);
	else if (id == LAYER_WIRE) {
		if ((rc = wire_load(L, &cfg->wire, max_keys, err, n)) == 0)
			add_probe(L, "wire", NULL, PROBE_TC);
	} else if (id == LAYER_VDEV)
		rc = load_vdev(L, max_keys);
	else if (id == LAYER_FS)
		rc = load_fs(L, max_keys, err, n);
	else if (id == LAYER_NFSD)
		rc = nfsd_load(L, max_keys, err, n);
	else
		rc = load_disk(L, max_keys, err, n);
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
	wire_unload(L);
	L->destroy(L->skel);
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

static void publish_nslots(struct layer *L)
{
	__u32 n = 0;

	for (__u32 i = 0; i < AGG_MAX_SLOTS; i++)
		if (L->slots[i].stat)
			n = i + 1;
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
		__atomic_store_n(&s->stat, stat, __ATOMIC_RELEASE); /* the program reads stat first */
		publish_nslots(L);
		return i;
	}
	return -1;
}

void layer_refresh(struct layer *L, void (*report)(void *ctx, const char *msg), void *ctx)
{
	if (L->loaded && L->refresh && layer_attached(L))
		L->refresh(report, ctx);
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

	if (p->kind == PROBE_TC) {
		if (wire_attach(L, err, n) < 0)
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
			snprintf(err, n, "cannot attach tracepoint %s:%s: %s", L->id == LAYER_FS ? "raw_syscalls"
				 : L->id == LAYER_NFSD ? "sunrpc" : "block", p->name, strerror(e));
		return -1;
	}
	p->link = link;
	p->on = true;
	return 0;
}

static void probe_detach(struct layer *L, struct probe *p)
{
	if (p->kind == PROBE_TC && p->on)
		wire_detach(L);
	bpf_link__destroy(p->link);
	p->link = NULL;
	p->on = false;
	if (L->active && !layer_attached(L))
		L->active(L, false);
}

int layer_probe_get(struct layer *L, const char *name, const struct engine_target *t, char *err, size_t n)
{
	struct probe *p = probe_find(L, name);

	if (!p) {
		snprintf(err, n, "the %s program has no probe %s", layer_name(L->id), name);
		return -1;
	}
	if (!p->on && L->refresh && !layer_attached(L))
		L->refresh(ignore, NULL); /* up to date before the first probe attaches */
	if (!p->on && L->active && !layer_attached(L) && L->active(L, true) < 0) {
		snprintf(err, n, "cannot attach the %s layer: %s", layer_name(L->id), strerror(errno));
		return -1;
	}
	if (!p->on && probe_attach(L, p, t, err, n) < 0) {
		if (L->active && !layer_attached(L))
			L->active(L, false);
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
	return L->loaded ? wire_event_fd(L) : -1;
}

void layer_events(struct layer *L, bool rescan)
{
	if (L->loaded)
		wire_refresh(L, rescan);
}

bool layer_attached(const struct layer *L)
{
	for (int i = 0; L->loaded && i < L->nprobes; i++)
		if (L->probes[i].on)
			return true;
	return false;
}

static int key_cmp(const struct agg_key *a, const struct agg_key *b)
{
	int c;

	if (a->slot != b->slot)
		return a->slot < b->slot ? -1 : 1;
	if (a->gen != b->gen)
		return a->gen < b->gen ? -1 : 1;
	if ((c = memcmp(a->key, b->key, AGG_KEY_BYTES)))
		return c;
	if (a->bucket != b->bucket)
		return a->bucket < b->bucket ? -1 : 1;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	return key_cmp(&((const struct count_entry *)a)->key, &((const struct count_entry *)b)->key);
}

static int reserve(struct layer *L, size_t need)
{
	struct count_entry *p;

	if (need <= L->cap)
		return 0;
	need = need < 2 * L->cap ? 2 * L->cap : need;
	if (!(p = realloc(L->cur, need * sizeof(*p))))
		return -1;
	L->cur = p;
	if (!(p = realloc(L->prev, need * sizeof(*p))))
		return -1;
	L->prev = p;
	if (!(p = realloc(L->deltas, need * sizeof(*p))))
		return -1;
	L->deltas = p;
	L->cap = need;
	return 0;
}

static bool live(const struct layer *L, const struct agg_key *k)
{
	return k->slot < AGG_MAX_SLOTS && L->slots[k->slot].stat && L->slots[k->slot].gen == k->gen;
}

/* Snapshot of the counts map into L->cur, one entry per non-zero bucket (each chunk
 * expanded, per-CPU values summed); stale entries deleted. */
static int snapshot(struct layer *L, char *err, size_t n)
{
	int ncpu = libbpf_num_possible_cpus();
	struct agg_key *keys = malloc(READ_CHUNK * sizeof(*keys));
	struct agg_chunk *vals = malloc((size_t)READ_CHUNK * (size_t)(ncpu > 0 ? ncpu : 1) * sizeof(*vals));
	struct agg_key stale[64];
	size_t nstale = 0;
	__u64 batch = 0;
	void *in = NULL;
	int rc = -1;

	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	L->ncur = 0;
	if (!keys || !vals || ncpu <= 0) {
		snprintf(err, n, "out of memory reading the %s counts", layer_name(L->id));
		goto out;
	}
	for (;;) {
		__u32 count = READ_CHUNK;
		int r = bpf_map_lookup_batch(L->counts_fd, in, &batch, keys, vals, &count, &opts);

		if (r < 0 && r != -ENOENT) {
			snprintf(err, n, "reading the %s counts: %s", layer_name(L->id), strerror(-r));
			goto out;
		}
		for (__u32 i = 0; i < count; i++) {
			if (!live(L, &keys[i])) {
				if (nstale < sizeof(stale) / sizeof(stale[0]))
					stale[nstale++] = keys[i];
				continue;
			}
			if (reserve(L, L->ncur + AGG_CHUNK) < 0) {
				snprintf(err, n, "out of memory reading the %s counts", layer_name(L->id));
				goto out;
			}
			for (__u32 b = 0; b < AGG_CHUNK; b++) {
				struct agg_key k = keys[i];
				uint64_t sum = 0;

				for (int c = 0; c < ncpu; c++)
					sum += vals[(size_t)i * (size_t)ncpu + (size_t)c].counts[b];
				if (!sum)
					continue;
				k.bucket += b;
				L->cur[L->ncur++] = (struct count_entry){ k, sum };
			}
		}
		if (r == -ENOENT)
			break;
		in = &batch;
	}
	for (size_t i = 0; i < nstale; i++)
		bpf_map_delete_elem(L->counts_fd, &stale[i]);
	qsort(L->cur, L->ncur, sizeof(*L->cur), entry_cmp);
	rc = 0;
out:
	free(keys);
	free(vals);
	return rc;
}

/* Deltas of the current snapshot against prev, for one slot or all (slot < 0). */
static void diff(struct layer *L, int slot)
{
	size_t j = 0;

	L->ndeltas = 0;
	/* merge-diff: both snapshots sorted; a key missing from prev counted from zero */
	for (size_t i = 0; i < L->ncur; i++) {
		uint64_t before = 0;

		if (slot >= 0 && L->cur[i].key.slot != slot)
			continue;
		while (j < L->nprev && key_cmp(&L->prev[j].key, &L->cur[i].key) < 0)
			j++;
		if (j < L->nprev && key_cmp(&L->prev[j].key, &L->cur[i].key) == 0)
			before = L->prev[j].value;
		if (L->cur[i].value > before)
			L->deltas[L->ndeltas++] = (struct count_entry){ L->cur[i].key, L->cur[i].value - before };
	}
}

int layer_read_slot(struct layer *L, int slot, char *err, size_t n)
{
	L->ndeltas = 0;
	if (snapshot(L, err, n) < 0)
		return -1;
	diff(L, slot);
	return 0;
}

int layer_read(struct layer *L, char *err, size_t n)
{
	struct count_entry *swap;

	L->ndeltas = 0;
	if (snapshot(L, err, n) < 0)
		return -1;
	diff(L, -1);
	swap = L->prev;
	L->prev = L->cur;
	L->nprev = L->ncur;
	L->cur = swap;
	return 0;
}
