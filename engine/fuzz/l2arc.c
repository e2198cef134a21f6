/* l2arc.c (fuzz) — libFuzzer harness for the L2ARC's on-device metadata: an
 * input is the start of a cache device (superblock at 0, then the ring; the
 * rest is zero).  The superblock's and the log blocks' checksums are made to
 * match first (walking the chain oldest block first), unless the fuzzer sets
 * bit 0 (superblock) or bit 1 (log blocks) of the superblock's head.pad, so
 * the rebuild reaches the entries.  Each run: rebuild (l2arc.c rebuild_main over l2arc_log.c l2_log_walk), read
 * every key the seeds use, feed new buffers (log blocks, superblock), then
 * open the device again: if the first rebuild found no bad block, a rebuild
 * of what the feed just wrote must find none either.
 * Seeds: STRATA_FUZZ_SEEDS=DIR fuzz_l2arc writes device images made by the
 * real feed and exits (engine/fuzz/README.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/image.h"
#include "l2arc_impl.h"

#define DEV_SIZE (256u << 10)
#define RING_START TIERDEV_ALIGN
#define RING_LEN (DEV_SIZE - RING_START)
#define NOBJ 4
#define NBLK 8
#define BUF 2048u

/* The superblock as l2arc_log.c lays it out. */
struct sb_view {
	uint64_t magic, version, guid, dev_size, ring_start, ring_end;
	uint64_t hand_lpos, evict_lpos, filled;
	struct l2_lbptr head;
	struct cksum ck;
};

static struct l2arc *open_dev(void)
{
	struct l2arc_config cfg;
	l2arc_config_defaults(&cfg);
	cfg.max_buf = 16u << 10;
	cfg.log_entries = 8;
	cfg.feed_interval_ms = 3600u * 1000; /* feeds only when flushed */
	cfg.write_max = cfg.write_boost = 64u << 10;
	struct l2arc *l2 = l2arc_create(&cfg);
	char err[256];
	if (l2arc_add_device(l2, fuzz_img_path, 0, err, sizeof(err))) {
		fprintf(stderr, "fuzz_l2arc: %s\n", err);
		abort();
	}
	l2arc_wait_rebuild(l2);
	return l2;
}

static void feed(struct l2arc *l2, uint32_t salt, int n)
{
	uint8_t buf[BUF];
	for (int i = 0; i < n; i++) {
		memset(buf, (int)(salt + i), sizeof(buf));
		memcpy(buf, &salt, sizeof(salt));
		struct arc_key k = { 1 + (salt + i) % NOBJ, (uint64_t)i % NBLK };
		l2arc_invalidate(l2, k);
		l2arc_feed_offer(l2, k, buf, i % 3 ? BUF : 512);
	}
	l2arc_flush(l2);
}

static void read_all(struct l2arc *l2)
{
	uint8_t buf[16u << 10];
	for (uint64_t o = 1; o <= NOBJ; o++)
		for (uint64_t b = 0; b < NBLK; b++)
			l2arc_read(l2, (struct arc_key){ o, b }, buf, sizeof(buf));
}

/* Seed s: s + 1 feeds of more buffers each time. */
static void make_seed(int s)
{
	struct l2arc *l2 = open_dev();
	for (int f = 0; f <= s; f++)
		feed(l2, (uint32_t)(7 * s + f), 6 + 4 * s);
	l2arc_destroy(l2);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_image_init("l2arc", DEV_SIZE, "feed", 3, make_seed);
	return 0;
}

static int lbptr_sane(const struct l2_lbptr *p)
{
	return p->size >= sizeof(struct l2_lbhdr) && p->size <= RING_LEN && p->size % L2_SECTOR == 0 &&
	       RING_START + p->lpos % RING_LEN + p->size <= DEV_SIZE;
}

/* Makes the checksums along the chain match, oldest block first: a block's
 * checksum lives in the pointer to it, inside the next newer block.  Fields
 * are copied in and out: a fuzzed lpos need not be aligned. */
static void repair(void)
{
	struct sb_view sb;
	memcpy(&sb, fuzz_img, sizeof(sb));
	if (!(sb.head.pad & 2)) {
		size_t at[64]; /* where each pointer of the chain is stored */
		int n = 0;
		size_t off = offsetof(struct sb_view, head);
		struct l2_lbptr p = sb.head;
		while (n < 64 && p.size && lbptr_sane(&p)) {
			at[n++] = off;
			off = RING_START + p.lpos % RING_LEN + offsetof(struct l2_lbhdr, prev);
			memcpy(&p, fuzz_img + off, sizeof(p));
		}
		while (n-- > 0) {
			memcpy(&p, fuzz_img + at[n], sizeof(p));
			fuzz_image_seal(RING_START + p.lpos % RING_LEN, p.size, at[n] + offsetof(struct l2_lbptr, ck));
		}
	}
	if (!(sb.head.pad & 1))
		fuzz_image_seal(0, offsetof(struct sb_view, ck), offsetof(struct sb_view, ck));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fuzz_image_prepare(data, size, sizeof(struct sb_view), repair))
		return 0;
	struct l2arc *l2 = open_dev();
	read_all(l2);
	struct l2arc_stats st;
	l2arc_get_stats(l2, &st);
	int clean = !st.l2_rebuild_lb_bad && !st.l2_rebuild_io_errors;
	feed(l2, (uint32_t)size, 5);
	read_all(l2);
	l2arc_destroy(l2);

	l2 = open_dev();
	read_all(l2);
	l2arc_get_stats(l2, &st);
	if (clean && (st.l2_rebuild_lb_bad || st.l2_rebuild_io_errors)) {
		fprintf(stderr, "fuzz_l2arc: the chain the feed wrote does not rebuild (%llu bad blocks)\n",
			(unsigned long long)st.l2_rebuild_lb_bad);
		abort();
	}
	l2arc_destroy(l2);
	return 0;
}
