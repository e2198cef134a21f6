/* blkmap_test.c — unit test of the sparse record map (engine/blkmap.c) under
 * ASan+UBSan: far-apart record numbers cost a path each, walks visit records
 * in ascending order from a starting number, emptied records are pruned. */
#include <stdlib.h>

#include "blkmap.h"
#include "unit_check.h"

struct seen { uint64_t ids[16]; int n; };

static int record_id(uint64_t blkid, struct blkrec *r, void *ctx)
{
	struct seen *s = ctx;
	if (s->n < 16)
		s->ids[s->n++] = blkid;
	return 0;
}

static int empty_record(uint64_t blkid, struct blkrec *r, void *ctx)
{
	r->bp.psize = 0;
	return 0;
}

static int stop_at_second(uint64_t blkid, struct blkrec *r, void *ctx)
{
	return ++*(int *)ctx == 2 ? 7 : 0;
}

int main(void)
{
	struct blkmap m = { 0 };
	CHECK(blkmap_find(&m, 0) == NULL, "empty map finds nothing");
	const uint64_t ids[] = { 5, 64, 1ull << 28, (1ull << 32) - 1, UINT64_MAX };
	for (int i = 0; i < 5; i++)
		blkmap_get(&m, ids[i])->bp.psize = (uint32_t)(i + 1) * 4096;
	CHECK(m.height == 11, "height %u for record number 2^64-1", m.height);
	for (int i = 0; i < 5; i++) {
		struct blkrec *r = blkmap_find(&m, ids[i]);
		CHECK(r && r->bp.psize == (uint32_t)(i + 1) * 4096, "record %d found", i);
	}
	CHECK(!blkmap_find(&m, 6) || !blkmap_find(&m, 6)->bp.psize, "a hole is empty");
	CHECK(!blkmap_find(&m, 1ull << 40), "no path where nothing was stored");

	struct seen s = { .n = 0 };
	blkmap_walk(&m, 0, record_id, &s);
	CHECK(s.n == 5, "walk saw %d records", s.n);
	for (int i = 0; i < s.n && i < 5; i++)
		CHECK(s.ids[i] == ids[i], "walk order: %d is %llu", i, (unsigned long long)s.ids[i]);
	s.n = 0;
	blkmap_walk(&m, 65, record_id, &s);
	CHECK(s.n == 3 && s.ids[0] == 1ull << 28, "walk from 65 starts at 2^28 (%d records)", s.n);
	int calls = 0;
	CHECK(blkmap_walk(&m, 0, stop_at_second, &calls) == 7 && calls == 2, "a non-zero return stops the walk");

	blkmap_walk(&m, 1ull << 20, empty_record, NULL);
	blkmap_prune(&m);
	CHECK(!blkmap_find(&m, 1ull << 28), "pruned path is gone");
	CHECK(blkmap_find(&m, 64) && blkmap_find(&m, 64)->bp.psize, "records below the cut stay");
	blkmap_walk(&m, 0, empty_record, NULL);
	blkmap_prune(&m);
	CHECK(m.height == 0 && m.root == NULL, "an emptied map frees its root");
	blkmap_get(&m, 3)->bp.psize = 4096;
	blkmap_free(&m);
	return unit_result("blkmap_test");
}
