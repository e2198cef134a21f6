/* blkmap.c — the sparse radix tree of a file's records (see blkmap.h). */
#include "blkmap.h"

#include <stdbool.h>
#include <stdlib.h>

#include "util.h"

struct node { void *child[BLKMAP_FANOUT]; };
struct leaf { struct blkrec rec[BLKMAP_FANOUT]; };

#define MASK (BLKMAP_FANOUT - 1)

/* Bit position of the index a node at height h takes from a record number. */
static unsigned shift_of(uint32_t h)
{
	return BLKMAP_BITS * (h - 1);
}

static bool fits(uint32_t height, uint64_t blkid)
{
	return BLKMAP_BITS * height >= 64 || blkid >> (BLKMAP_BITS * height) == 0;
}

static bool rec_empty(const struct blkrec *r)
{
	return !r->bp.psize && !r->dirty;
}

struct blkrec *blkmap_find(const struct blkmap *m, uint64_t blkid)
{
	if (!m->height || !fits(m->height, blkid))
		return NULL;
	void *n = m->root;
	for (uint32_t h = m->height; h > 1 && n; h--)
		n = ((struct node *)n)->child[blkid >> shift_of(h) & MASK];
	return n ? &((struct leaf *)n)->rec[blkid & MASK] : NULL;
}

struct blkrec *blkmap_get(struct blkmap *m, uint64_t blkid)
{
	if (!m->height) {
		m->root = xcalloc(1, sizeof(struct leaf));
		m->height = 1;
	}
	while (!fits(m->height, blkid)) {
		struct node *top = xcalloc(1, sizeof(*top));
		top->child[0] = m->root;
		m->root = top;
		m->height++;
	}
	void **slot = &m->root;
	for (uint32_t h = m->height; h > 1; h--) {
		struct node *n = *slot;
		slot = &n->child[blkid >> shift_of(h) & MASK];
		if (!*slot)
			*slot = xcalloc(1, h == 2 ? sizeof(struct leaf) : sizeof(struct node));
	}
	return &((struct leaf *)*slot)->rec[blkid & MASK];
}

struct walk {
	uint64_t from;
	int (*fn)(uint64_t blkid, struct blkrec *r, void *ctx);
	void *ctx;
	int rc;
	bool prune;
};

/* Walks the subtree n of height h whose first record number is base; true
 * when it holds nothing afterwards (then a pruning walk's caller frees it). */
static bool walk_node(void *n, uint32_t h, uint64_t base, struct walk *w)
{
	bool empty = true;
	if (h == 1) {
		struct leaf *l = n;
		for (uint32_t i = 0; i < BLKMAP_FANOUT; i++) {
			struct blkrec *r = &l->rec[i];
			if (w->fn && !w->rc && !rec_empty(r) && base + i >= w->from)
				w->rc = w->fn(base + i, r, w->ctx);
			empty &= rec_empty(r);
		}
		return empty;
	}
	struct node *nd = n;
	unsigned s = shift_of(h);
	for (uint32_t i = 0; i < BLKMAP_FANOUT; i++) {
		if (!nd->child[i])
			continue;
		uint64_t cbase = base + ((uint64_t)i << s);
		uint64_t last = cbase + (((uint64_t)1 << s) - 1);
		if (!w->rc && last >= w->from && walk_node(nd->child[i], h - 1, cbase, w) && w->prune) {
			free(nd->child[i]);
			nd->child[i] = NULL;
		}
		empty &= nd->child[i] == NULL;
	}
	return empty;
}

int blkmap_walk(struct blkmap *m, uint64_t from,
		int (*fn)(uint64_t blkid, struct blkrec *r, void *ctx), void *ctx)
{
	struct walk w = { from, fn, ctx, 0, false };
	if (m->height)
		walk_node(m->root, m->height, 0, &w);
	return w.rc;
}

void blkmap_prune(struct blkmap *m)
{
	struct walk w = { 0, NULL, NULL, 0, true };
	if (m->height && walk_node(m->root, m->height, 0, &w)) {
		free(m->root);
		m->root = NULL;
		m->height = 0;
	}
}

static void free_node(void *n, uint32_t h)
{
	if (h > 1)
		for (uint32_t i = 0; i < BLKMAP_FANOUT; i++)
			if (((struct node *)n)->child[i])
				free_node(((struct node *)n)->child[i], h - 1);
	free(n);
}

void blkmap_free(struct blkmap *m)
{
	if (m->height)
		free_node(m->root, m->height);
	m->root = NULL;
	m->height = 0;
}
