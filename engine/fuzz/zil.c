/* zil.c (fuzz) — libFuzzer harness for ZIL replay: an input is the start of
 * a log region (superblock at 0, then the ring of log blocks; the rest is
 * zero).  The superblock checksum and, walking from its checkpoint, every
 * block's checksum are made to match first, unless the fuzzer sets bit 0
 * (superblock) or bit 1 (blocks) of the first block's pad, so replay reaches
 * the records.  Each run: open (scan), replay (every record's bytes are
 * read), checkpoint, three threads commit two records each (batched into
 * shared log blocks), close; then open and replay again: every commit that
 * returned 0 must come back from replay intact.
 * Seeds: STRATA_FUZZ_SEEDS=DIR fuzz_zil writes regions made by real commits
 * and exits (engine/fuzz/README.md). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cksum.h"
#include "fuzz/image.h"
#include "tierdev.h"
#include "zil.h"

#define REGION (TIERDEV_ALIGN + (64u << 10))
#define RING_START TIERDEV_ALIGN
#define RING_LEN (REGION - RING_START)
#define OWNER 0x5354524154414655ull
#define MARK_OBJ 0x4d41524b00000000ull /* the records this harness commits */

/* The on-region layouts of zil.c. */
struct sb_view {
	uint64_t magic, version, guid, region_size, owner, tail_lpos, tail_seq, tail_nonce;
	struct cksum ck;
};
struct blk_view {
	uint64_t magic, guid, seq, lpos;
	uint32_t len, nrec, payload, pad;
	uint64_t max_txg, nonce, next_nonce;
	struct cksum ck;
};

#define COMMITTERS 3

struct seen { uint64_t sum; int marks; uint32_t salt; };

static int on_record(void *ctx, const struct zil_record *r)
{
	struct seen *s = ctx;
	const uint8_t *p = r->data;
	for (uint32_t i = 0; i < r->length; i++)
		s->sum += p[i];
	if (r->objid == MARK_OBJ && r->length >= 100 && !memcmp(p, &s->salt, sizeof(s->salt)))
		s->marks++;
	return 0;
}

static struct zil *open_log(void)
{
	char err[256];
	struct zil *z = zil_open(fuzz_img_path, 0, REGION, OWNER, err, sizeof(err));
	if (!z) {
		fprintf(stderr, "fuzz_zil: %s\n", err);
		abort();
	}
	return z;
}

/* Two records of len bytes (the first starts with salt) at txg. */
static int commit(struct zil *z, uint32_t salt, uint64_t txg, uint32_t len)
{
	uint8_t *data[2];
	struct zil_record r[2];
	for (int i = 0; i < 2; i++) {
		data[i] = malloc(len);
		memset(data[i], 'a' + i, len);
		memcpy(data[i], &salt, sizeof(salt));
		r[i] = (struct zil_record){ MARK_OBJ, 4096u * (uint64_t)i, txg, len, data[i] };
	}
	int rc = zil_commit(z, r, 2);
	free(data[0]);
	free(data[1]);
	return rc;
}

struct committer { pthread_t t; struct zil *z; uint32_t salt; int rc; };

static void *committer_main(void *arg)
{
	struct committer *c = arg;
	c->rc = commit(c->z, c->salt, 1000, 100);
	return NULL;
}

/* Seeds: a few commits; records over one 4 KiB block; a tail past the
 * ring's start; a hand that has wrapped around the ring's end. */
static void make_seed(int s)
{
	struct zil *z = open_log();
	for (int c = 0; c < (s == 2 ? 8 : 2); c++) {
		if (s >= 2 && c >= 3)
			zil_checkpoint(z, 1 + (uint64_t)c); /* a tail past the ring's start */
		commit(z, (uint32_t)(10 * s + c), 2 + (uint64_t)c, s == 1 ? 3000 : s == 2 ? 6000 : 100);
	}
	zil_close(z);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_image_init("zil", REGION, "commits", 3, make_seed);
	return 0;
}

/* Fixes checksums along the chain the way scan() walks it (fields copied:
 * a fuzzed position need not be aligned). */
static void repair(void)
{
	struct sb_view sb;
	memcpy(&sb, fuzz_img, sizeof(sb));
	uint64_t lpos = sb.tail_lpos;
	struct blk_view h;
	uint32_t flags = 0;
	for (int i = 0; i < 64; i++) {
		uint64_t p = RING_START + lpos % RING_LEN;
		if (p + sizeof(h) > REGION)
			h.magic = 0;
		else
			memcpy(&h, fuzz_img + p, sizeof(h));
		if (h.magic != 0x4b4c424c495a5453ull && p != RING_START) { /* the writer skipped the ring's end */
			lpos += REGION - p;
			p = RING_START;
			memcpy(&h, fuzz_img + p, sizeof(h));
		}
		if (!i)
			flags = h.pad;
		if (h.len < TIERDEV_ALIGN || h.len % TIERDEV_ALIGN || p + h.len > REGION || (flags & 2))
			break;
		fuzz_image_seal(p, h.len, p + offsetof(struct blk_view, ck));
		lpos += h.len;
	}
	if (!(flags & 1))
		fuzz_image_seal(0, offsetof(struct sb_view, ck), offsetof(struct sb_view, ck));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (fuzz_image_prepare(data, size, sizeof(struct sb_view), repair))
		return 0;
	uint32_t salt = (uint32_t)size * 2654435761u;
	struct zil *z = open_log();
	struct seen s = { .salt = salt };
	zil_replay(z, 3, on_record, &s);
	zil_checkpoint(z, 8);
	zil_commit(z, NULL, 0);
	struct committer c[COMMITTERS];
	for (int i = 0; i < COMMITTERS; i++) {
		c[i] = (struct committer){ .z = z, .salt = salt };
		if (pthread_create(&c[i].t, NULL, committer_main, &c[i]))
			abort();
	}
	int durable = 0;
	for (int i = 0; i < COMMITTERS; i++) {
		pthread_join(c[i].t, NULL);
		durable += !c[i].rc;
	}
	struct zil_stats st;
	zil_get_stats(z, &st);
	zil_close(z);

	z = open_log();
	s = (struct seen){ .salt = salt };
	int n = zil_replay(z, 0, on_record, &s);
	zil_close(z);
	if (s.marks < 2 * durable) {
		fprintf(stderr, "fuzz_zil: durable commits did not replay (replay %d, %d of %d records)\n", n,
			s.marks, 2 * durable);
		abort();
	}
	return 0;
}
