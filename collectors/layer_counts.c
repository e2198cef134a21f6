/* layer_counts.c — reading a layer's cumulative per-CPU counts (bpf/aggregate.h) into
 * per-interval deltas: batch map reads, sorted snapshots, merge-diff. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "layers.h"

#define READ_CHUNK 4096

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
		snprintf(err, n, "out of memory reading the %s counts", L->name);
		goto out;
	}
	for (;;) {
		__u32 count = READ_CHUNK;
		int r = bpf_map_lookup_batch(L->counts_fd, in, &batch, keys, vals, &count, &opts);

		if (r < 0 && r != -ENOENT) {
			snprintf(err, n, "reading the %s counts: %s", L->name, strerror(-r));
			goto out;
		}
		for (__u32 i = 0; i < count; i++) {
			if (!live(L, &keys[i])) {
				if (nstale < sizeof(stale) / sizeof(stale[0]))
					stale[nstale++] = keys[i];
				continue;
			}
			if (reserve(L, L->ncur + AGG_CHUNK) < 0) {
				snprintf(err, n, "out of memory reading the %s counts", L->name);
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
