/* layer_counts.c — reading a layer's cumulative per-CPU counts (bpf/aggregate.h) into
 * per-interval deltas: batch map reads, sorted snapshots, merge-diff. An interval's counts
 * are those of its parity (AGG_EPOCH_BIT): read once it ended, against their snapshot of
 * two intervals before, while the programs count the next interval under the other. */
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
	/* a bucket's two parities side by side */
	if ((a->bucket & ~AGG_EPOCH_BIT) != (b->bucket & ~AGG_EPOCH_BIT))
		return (a->bucket & ~AGG_EPOCH_BIT) < (b->bucket & ~AGG_EPOCH_BIT) ? -1 : 1;
	if (a->bucket != b->bucket)
		return a->bucket < b->bucket ? -1 : 1;
	return 0;
}

static int parity_of(const struct agg_key *k)
{
	return (k->bucket & AGG_EPOCH_BIT) != 0;
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

/* Appends the non-zero buckets of chunk k to L->cur, its values summed over n per-CPU
 * copies stride bytes apart. */
static int append_chunk(struct layer *L, const struct agg_key *k, const struct agg_chunk *c, size_t stride, int n)
{
	if (reserve(L, L->ncur + AGG_CHUNK) < 0)
		return -1;
	for (__u32 b = 0; b < AGG_CHUNK; b++) {
		struct agg_key kb = *k;
		uint64_t sum = 0;

		for (int i = 0; i < n; i++)
			sum += ((const struct agg_chunk *)((const char *)c + (size_t)i * stride))->counts[b];
		if (!sum)
			continue;
		kb.bucket += b;
		L->cur[L->ncur++] = (struct count_entry){ kb, sum };
	}
	return 0;
}

/* The live chunks of the hash map agg_counts appended to L->cur; stale entries deleted. */
static int read_hash(struct layer *L, int ncpu, char *err, size_t n)
{
	struct agg_key *keys = malloc(READ_CHUNK * sizeof(*keys));
	struct agg_chunk *vals = malloc((size_t)READ_CHUNK * (size_t)ncpu * sizeof(*vals));
	struct agg_key stale[64];
	size_t nstale = 0;
	__u64 batch = 0;
	void *in = NULL;
	int rc = -1;

	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	if (!keys || !vals) {
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
			if (append_chunk(L, &keys[i], &vals[(size_t)i * (size_t)ncpu], sizeof(*vals), ncpu) < 0) {
				snprintf(err, n, "out of memory reading the %s counts", L->name);
				goto out;
			}
		}
		if (r == -ENOENT)
			break;
		in = &batch;
	}
	for (size_t i = 0; i < nstale; i++)
		bpf_map_delete_elem(L->counts_fd, &stale[i]);
	rc = 0;
out:
	free(keys);
	free(vals);
	return rc;
}

/* The live chunks of the per-CPU array agg_table appended to L->cur: each CPU's entry
 * holds a key of its own (stale ones are left for the programs to take again). One lookup
 * per index: Linux 5.10 has no batch lookups on arrays. */
static int read_table(struct layer *L, int ncpu, char *err, size_t n)
{
	struct agg_table_entry *vals = malloc((size_t)ncpu * sizeof(*vals));
	int rc = -1;

	if (!vals) {
		snprintf(err, n, "out of memory reading the %s counts", L->name);
		return -1;
	}
	for (__u32 i = 0; i < AGG_TABLE_SIZE; i++) {
		if (bpf_map_lookup_elem(L->table_fd, &i, vals) < 0) {
			snprintf(err, n, "reading the %s counts: %s", L->name, strerror(errno));
			goto out;
		}
		for (int c = 0; c < ncpu; c++) {
			const struct agg_table_entry *e = &vals[c];

			if (!e->used || !live(L, &e->k))
				continue;
			if (append_chunk(L, &e->k, &e->c, sizeof(e->c), 1) < 0) {
				snprintf(err, n, "out of memory reading the %s counts", L->name);
				goto out;
			}
		}
	}
	rc = 0;
out:
	free(vals);
	return rc;
}

/* Snapshot of the counts into L->cur, one entry per non-zero bucket, sorted: a chunk's
 * CPUs and its two homes (bpf/aggregate.h) summed. */
static int snapshot(struct layer *L, char *err, size_t n)
{
	int ncpu = libbpf_num_possible_cpus();
	size_t m = 0;

	L->ncur = 0;
	if (ncpu <= 0) {
		snprintf(err, n, "reading the %s counts: no CPU count", L->name);
		return -1;
	}
	if (read_hash(L, ncpu, err, n) < 0 || read_table(L, ncpu, err, n) < 0)
		return -1;
	qsort(L->cur, L->ncur, sizeof(*L->cur), entry_cmp);
	for (size_t i = 0; i < L->ncur; i++) {
		if (m && key_cmp(&L->cur[m - 1].key, &L->cur[i].key) == 0)
			L->cur[m - 1].value += L->cur[i].value;
		else
			L->cur[m++] = L->cur[i];
	}
	L->ncur = m;
	return 0;
}

/* Deltas of the current snapshot against prev, for one slot or all (slot < 0), of one
 * parity or both (parity < 0); a delta's bucket without AGG_EPOCH_BIT, a bucket's two
 * parities summed. */
static void diff(struct layer *L, int slot, int parity)
{
	size_t j = 0;

	L->ndeltas = 0;
	/* merge-diff: both snapshots sorted; a key missing from prev counted from zero */
	for (size_t i = 0; i < L->ncur; i++) {
		struct count_entry *last = L->ndeltas ? &L->deltas[L->ndeltas - 1] : NULL;
		struct agg_key k = L->cur[i].key;
		uint64_t before = 0;

		if ((slot >= 0 && k.slot != slot) || (parity >= 0 && parity_of(&k) != parity))
			continue;
		while (j < L->nprev && key_cmp(&L->prev[j].key, &k) < 0)
			j++;
		if (j < L->nprev && key_cmp(&L->prev[j].key, &k) == 0)
			before = L->prev[j].value;
		if (L->cur[i].value <= before)
			continue;
		k.bucket &= ~AGG_EPOCH_BIT;
		if (last && key_cmp(&last->key, &k) == 0)
			last->value += L->cur[i].value - before;
		else
			L->deltas[L->ndeltas++] = (struct count_entry){ k, L->cur[i].value - before };
	}
}

/* prev becomes the snapshot's entries of parity and prev's own of the other: the
 * baseline of each parity is its snapshot taken while the other was being counted. */
static int keep_baselines(struct layer *L, int parity)
{
	size_t i = 0, j = 0, m = 0, most = L->ncur + L->nprev;
	struct count_entry *merged = malloc((most ? most : 1) * sizeof(*merged));

	if (!merged)
		return -1;
	while (i < L->ncur || j < L->nprev) {
		while (i < L->ncur && parity_of(&L->cur[i].key) != parity)
			i++;
		while (j < L->nprev && parity_of(&L->prev[j].key) == parity)
			j++;
		if (i < L->ncur && (j >= L->nprev || key_cmp(&L->cur[i].key, &L->prev[j].key) < 0))
			merged[m++] = L->cur[i++];
		else if (j < L->nprev)
			merged[m++] = L->prev[j++];
	}
	if (reserve(L, m) < 0) {
		free(merged);
		return -1;
	}
	memcpy(L->prev, merged, m * sizeof(*merged));
	L->nprev = m;
	free(merged);
	return 0;
}

int layer_read_slot(struct layer *L, int slot, char *err, size_t n)
{
	L->ndeltas = 0;
	if (snapshot(L, err, n) < 0)
		return -1;
	diff(L, slot, -1);
	return 0;
}

int layer_read(struct layer *L, int parity, char *err, size_t n)
{
	struct count_entry *swap;

	L->ndeltas = 0;
	if (snapshot(L, err, n) < 0)
		return -1;
	diff(L, -1, parity);
	if (parity >= 0) {
		if (keep_baselines(L, parity) < 0) {
			snprintf(err, n, "out of memory reading the %s counts", L->name);
			return -1;
		}
		return 0;
	}
	swap = L->prev;
	L->prev = L->cur;
	L->nprev = L->ncur;
	L->cur = swap;
	return 0;
}
