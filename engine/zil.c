/* zil.c — the intent log: batched, checksummed log blocks on a log device or
 * file region; replay after a crash; checkpoints that reclaim space (zil.h). */
#include "zil.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "cksum.h"
#include "devmodel.h"
#include "strata_probes.h"
#include "tierdev.h"
#include "util.h"

#define ZIL_SB_MAGIC  0x3142534c495a5453ull /* "STZILSB1" */
#define ZIL_BLK_MAGIC 0x4b4c424c495a5453ull /* "STZILBLK" */
#define ZIL_VERSION   2 /* 2: the owner (pool guid) in the superblock */
#define ZIL_BATCH_MAX (1u << 20)            /* carry more committers up to this */
#define ZIL_MIN_RING  (64u << 10)

#define F(x) TIER_STAT_FIELD(struct zil_stats, x)
const struct tier_stat_field zil_stat_fields[] = {
	F(zil_commit_count), F(zil_itx_count), F(zil_commit_writes), F(zil_commit_bytes),
	F(zil_commit_errors), F(zil_replayed), F(zil_replay_skipped), F(zil_checkpoints),
	F(zil_log_used), F(zil_log_size),
};
#undef F
const size_t zil_stat_nfields = sizeof(zil_stat_fields) / sizeof(zil_stat_fields[0]);

struct zil_sb {
	uint64_t magic, version, guid, region_size;
	uint64_t owner;                           /* the pool this log belongs to */
	uint64_t tail_lpos, tail_seq, tail_nonce; /* the checkpoint */
	struct cksum ck;
};

struct zil_blkhdr {
	uint64_t magic, guid, seq, lpos;
	uint32_t len;      /* block bytes, a 4 KiB multiple */
	uint32_t nrec;
	uint32_t payload;  /* record bytes after this header */
	uint32_t pad;
	uint64_t max_txg;
	uint64_t nonce;      /* must equal the previous block's next_nonce */
	uint64_t next_nonce; /* random: stale blocks after a bad tail never chain */
	struct cksum ck;   /* fletcher4 of the block with ck zeroed */
};

struct zil_lr {            /* followed by length bytes of data, padded to 8 */
	uint64_t objid, offset, txg;
	uint32_t length, pad;
};

struct zil_blk { uint64_t lpos, seq, nonce, max_txg; uint32_t len; int replay; };

struct zil_waiter {
	const struct zil_record *recs;
	uint32_t n;
	uint32_t bytes;     /* serialized size */
	uint32_t blk_len;   /* size of the write that carried it */
	int done, err;
	struct zil_waiter *next;
};

struct zil {
	struct tierdev io;
	uint64_t base, ring_start, ring_end, ring_len; /* device offsets */
	uint64_t guid, owner;
	pthread_mutex_t lock;
	pthread_cond_t cv;
	pthread_mutex_t ckpt_lock;     /* one checkpoint at a time */
	struct zil_waiter *pend_head, *pend_tail;
	int writing;
	int failed;                    /* -EIO after a write error, until all is reclaimed */
	uint64_t hand_lpos, next_seq, next_nonce; /* where the next block goes */
	uint64_t tail_lpos, tail_seq, tail_nonce; /* the durable checkpoint */
	uint64_t rng;
	struct zil_blk *blks;          /* FIFO of blocks since the checkpoint */
	size_t nblks, first, capblks;
	int replayed;                  /* zil_replay done: its blocks may go */
	struct devmodel *model;
	uint64_t write_delay_ns;    /* fault injection: added to every log write */
	struct zil_stats st;
};

static uint64_t phys(const struct zil *z, uint64_t lpos)
{
	return z->ring_start + lpos % z->ring_len;
}

static uint32_t rec_bytes(uint32_t length)
{
	return (uint32_t)(sizeof(struct zil_lr) + tier_roundup(length, 8));
}

static int blk_push(struct zil *z, struct zil_blk b)
{
	if (z->first + z->nblks == z->capblks) {
		if (z->first) {
			memmove(z->blks, z->blks + z->first, z->nblks * sizeof(*z->blks));
			z->first = 0;
		} else {
			size_t cap = z->capblks ? 2 * z->capblks : 64;
			struct zil_blk *nb = realloc(z->blks, cap * sizeof(*nb));
			if (!nb)
				return -ENOMEM;
			z->blks = nb;
			z->capblks = cap;
		}
	}
	z->blks[z->first + z->nblks++] = b;
	return 0;
}

static uint64_t next_random(struct zil *z)
{
	uint64_t x = (z->rng += 0x9E3779B97F4A7C15ull);
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	return x ^ (x >> 31);
}

static int sb_write(struct zil *z, uint64_t tail_lpos, uint64_t tail_seq, uint64_t tail_nonce)
{
	struct zil_sb sb = { .magic = ZIL_SB_MAGIC, .version = ZIL_VERSION, .guid = z->guid, .owner = z->owner,
			     .region_size = z->ring_end - z->base, .tail_lpos = tail_lpos,
			     .tail_seq = tail_seq, .tail_nonce = tail_nonce };
	fletcher4(&sb, offsetof(struct zil_sb, ck), &sb.ck);
	uint8_t *buf = tierdev_alloc(TIERDEV_ALIGN);
	memcpy(buf, &sb, sizeof(sb));
	int rc = tierdev_pwrite(&z->io, buf, TIERDEV_ALIGN, z->base);
	free(buf);
	return rc ? rc : tierdev_sync(&z->io);
}

static int sb_load(struct zil *z)
{
	uint8_t *buf = tierdev_alloc(TIERDEV_ALIGN);
	struct zil_sb sb;
	int ok = !tierdev_pread(&z->io, buf, TIERDEV_ALIGN, z->base);
	memcpy(&sb, buf, sizeof(sb));
	free(buf);
	struct cksum ck;
	fletcher4(&sb, offsetof(struct zil_sb, ck), &ck);
	if (!ok || sb.magic != ZIL_SB_MAGIC || sb.version != ZIL_VERSION || !cksum_equal(&ck, &sb.ck) ||
	    sb.region_size != z->ring_end - z->base || sb.owner != z->owner)
		return 0;
	z->guid = sb.guid;
	z->tail_lpos = sb.tail_lpos;
	z->tail_seq = sb.tail_seq;
	z->tail_nonce = sb.tail_nonce;
	return 1;
}

/* Reads and verifies the block numbered seq with nonce at lpos into *out
 * (malloc'ed, aligned; the caller frees it).  0 if valid. */
static int blk_read(struct zil *z, uint64_t lpos, uint64_t seq, uint64_t nonce, uint8_t **out)
{
	uint64_t p = phys(z, lpos);
	*out = NULL;
	if (p + TIERDEV_ALIGN > z->ring_end)
		return -EINVAL;
	uint8_t *buf = tierdev_alloc(TIERDEV_ALIGN);
	struct zil_blkhdr h;
	if (tierdev_pread(&z->io, buf, TIERDEV_ALIGN, p))
		goto bad;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != ZIL_BLK_MAGIC || h.guid != z->guid || h.seq != seq || h.nonce != nonce || h.lpos != lpos ||
	    h.len < TIERDEV_ALIGN || h.len % TIERDEV_ALIGN || h.len > z->ring_len / 2 ||
	    p + h.len > z->ring_end || h.payload > h.len - sizeof(h))
		goto bad;
	if (h.len > TIERDEV_ALIGN) {
		uint8_t *big = tierdev_alloc(h.len);
		memcpy(big, buf, TIERDEV_ALIGN);
		free(buf);
		buf = big;
		if (tierdev_pread(&z->io, buf + TIERDEV_ALIGN, h.len - TIERDEV_ALIGN, p + TIERDEV_ALIGN))
			goto bad;
	}
	struct zil_blkhdr *hp = (struct zil_blkhdr *)buf;
	memset(&hp->ck, 0, sizeof(hp->ck));
	struct cksum ck;
	fletcher4(buf, h.len, &ck);
	hp->ck = h.ck;
	if (!cksum_equal(&ck, &h.ck))
		goto bad;
	*out = buf;
	return 0;
bad:
	free(buf);
	return -EINVAL;
}

/* Walks the records of a verified block; fn returns non-zero to stop. */
static int blk_foreach(const uint8_t *buf, int (*fn)(void *ctx, const struct zil_record *r), void *ctx)
{
	struct zil_blkhdr h;
	memcpy(&h, buf, sizeof(h));
	const uint8_t *p = buf + sizeof(h), *end = p + h.payload;
	for (uint32_t i = 0; i < h.nrec; i++) {
		struct zil_lr lr;
		if ((size_t)(end - p) < sizeof(lr))
			return -EINVAL;
		memcpy(&lr, p, sizeof(lr));
		if (lr.length > (size_t)(end - p) - sizeof(lr))
			return -EINVAL;
		struct zil_record r = { lr.objid, lr.offset, lr.txg, lr.length, p + sizeof(lr) };
		int rc = fn(ctx, &r);
		if (rc)
			return rc;
		p += sizeof(lr) + tier_roundup(lr.length, 8);
		if (p > end)
			p = end;
	}
	return 0;
}

static int count_rec(void *ctx, const struct zil_record *r)
{
	(void)r;
	(*(uint64_t *)ctx)++;
	return 0;
}

/* Finds the valid blocks from the checkpoint on: they become the FIFO and
 * the hand goes after the last one. */
static void scan(struct zil *z)
{
	uint64_t lpos = z->tail_lpos, seq = z->tail_seq, nonce = z->tail_nonce;
	for (;;) {
		uint8_t *buf;
		if (blk_read(z, lpos, seq, nonce, &buf)) {
			uint64_t next_lap = lpos + (z->ring_end - phys(z, lpos));
			if (phys(z, lpos) == z->ring_start || blk_read(z, next_lap, seq, nonce, &buf))
				break;
			lpos = next_lap; /* the writer skipped the end of the ring */
		}
		struct zil_blkhdr h;
		memcpy(&h, buf, sizeof(h));
		uint64_t nrec = 0;
		int bad = blk_foreach(buf, count_rec, &nrec);
		free(buf);
		if (bad || lpos + h.len - z->tail_lpos > z->ring_len ||
		    blk_push(z, (struct zil_blk){ lpos, seq, nonce, h.max_txg, h.len, 1 }))
			break;
		lpos += h.len;
		seq++;
		nonce = h.next_nonce;
	}
	z->hand_lpos = lpos;
	z->next_seq = seq;
	z->next_nonce = nonce;
}

struct zil *zil_open(const char *path, uint64_t offset, uint64_t size, uint64_t owner, char *err,
		     size_t errsz)
{
	if (offset % TIERDEV_ALIGN || size % TIERDEV_ALIGN) {
		snprintf(err, errsz, "%s: log offset and size must be multiples of 4 KiB", path);
		return NULL;
	}
	struct zil *z = calloc(1, sizeof(*z));
	if (!z) {
		snprintf(err, errsz, "out of memory");
		return NULL;
	}
	if (tierdev_open(&z->io, path, size ? offset + size : 0, err, errsz)) {
		free(z);
		return NULL;
	}
	uint64_t end = size ? offset + size : z->io.size;
	if (end > z->io.size || end <= offset || end - offset < TIERDEV_ALIGN + ZIL_MIN_RING) {
		snprintf(err, errsz, "%s: log region [%llu, %llu) does not fit the device (%llu bytes) or is under %u bytes",
			 path, (unsigned long long)offset, (unsigned long long)end,
			 (unsigned long long)z->io.size, TIERDEV_ALIGN + ZIL_MIN_RING);
		tierdev_close(&z->io);
		free(z);
		return NULL;
	}
	z->owner = owner;
	z->base = offset;
	z->ring_start = offset + TIERDEV_ALIGN;
	z->ring_end = end;
	z->ring_len = end - z->ring_start;
	pthread_mutex_init(&z->lock, NULL);
	pthread_mutex_init(&z->ckpt_lock, NULL);
	pthread_cond_init(&z->cv, NULL);
	if (getrandom(&z->rng, sizeof(z->rng), 0) != (ssize_t)sizeof(z->rng))
		z->rng = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
	if (!sb_load(z)) {
		z->guid = next_random(z);
		z->tail_lpos = 0;
		z->tail_seq = 1;
		z->tail_nonce = next_random(z);
		int rc = sb_write(z, 0, 1, z->tail_nonce);
		if (rc) {
			snprintf(err, errsz, "%s: cannot format the log: %s", path, strerror(-rc));
			zil_close(z);
			return NULL;
		}
	}
	scan(z);
	z->st.zil_log_size = z->ring_len;
	return z;
}

void zil_close(struct zil *z)
{
	if (!z)
		return;
	tierdev_close(&z->io);
	pthread_mutex_destroy(&z->lock);
	pthread_mutex_destroy(&z->ckpt_lock);
	pthread_cond_destroy(&z->cv);
	free(z->blks);
	free(z);
}

static void finish(struct zil_waiter *w, struct zil_waiter *stop, int err, uint32_t len)
{
	for (; w != stop; w = w->next) {
		w->err = err;
		w->blk_len = len;
		w->done = 1;
	}
}

/* The leader: writes the pending committers as one block.  Called and
 * returns with z->lock held; drops it for the I/O. */
static void write_pending(struct zil *z)
{
	struct zil_waiter *first = z->pend_head, *w = first;
	uint64_t payload = 0, max_txg = 0;
	uint32_t nrec = 0;
	do {
		payload += w->bytes;
		nrec += w->n;
		w = w->next;
	} while (w && payload + w->bytes <= ZIL_BATCH_MAX);
	struct zil_waiter *stop = w;
	z->pend_head = stop;
	if (!stop)
		z->pend_tail = NULL;
	uint32_t len = (uint32_t)tier_roundup(sizeof(struct zil_blkhdr) + payload, TIERDEV_ALIGN);
	if (z->failed || len > z->ring_len / 2) {
		finish(first, stop, z->failed ? z->failed : -ENOSPC, 0);
		z->st.zil_commit_errors++;
		return;
	}
	uint64_t L = z->hand_lpos;
	if (phys(z, L) + len > z->ring_end)
		L += z->ring_end - phys(z, L);
	if (L + len - z->tail_lpos > z->ring_len) {
		finish(first, stop, -ENOSPC, 0);
		z->st.zil_commit_errors++;
		return;
	}
	uint64_t seq = z->next_seq, nonce = z->next_nonce, next_nonce = next_random(z);
	pthread_mutex_unlock(&z->lock);

	uint8_t *buf = tierdev_alloc(len);
	uint8_t *p = buf + sizeof(struct zil_blkhdr);
	for (w = first; w != stop; w = w->next) {
		for (uint32_t i = 0; i < w->n; i++) {
			const struct zil_record *r = &w->recs[i];
			struct zil_lr lr = { r->objid, r->offset, r->txg, r->length, 0 };
			memcpy(p, &lr, sizeof(lr));
			if (r->length)
				memcpy(p + sizeof(lr), r->data, r->length);
			p += rec_bytes(r->length);
			if (r->txg > max_txg)
				max_txg = r->txg;
		}
	}
	struct zil_blkhdr h = { .magic = ZIL_BLK_MAGIC, .guid = z->guid, .seq = seq, .lpos = L,
				.len = len, .nrec = nrec, .payload = (uint32_t)payload, .max_txg = max_txg,
				.nonce = nonce, .next_nonce = next_nonce };
	memcpy(buf, &h, sizeof(h));
	fletcher4(buf, len, &h.ck);
	memcpy(buf, &h, sizeof(h));
	uint64_t t0 = clock_mono_ns();
	int err = tierdev_pwrite(&z->io, buf, len, phys(z, L));
	if (!err)
		err = tierdev_sync(&z->io);
	devmodel_service(z->model, DEVMODEL_WRITE, phys(z, L), len, clock_mono_ns() - t0);
	devmodel_service(z->model, DEVMODEL_FLUSH, 0, 0, 0);
	devmodel_delay(__atomic_load_n(&z->write_delay_ns, __ATOMIC_RELAXED));
	free(buf);

	pthread_mutex_lock(&z->lock);
	if (!err)
		err = blk_push(z, (struct zil_blk){ L, seq, nonce, max_txg, len, 0 });
	if (err) {
		z->failed = -EIO;
		z->st.zil_commit_errors++;
		finish(first, stop, -EIO, len);
		return;
	}
	z->hand_lpos = L + len;
	z->next_seq = seq + 1;
	z->next_nonce = next_nonce;
	z->st.zil_commit_writes++;
	z->st.zil_commit_bytes += len;
	finish(first, stop, 0, len);
}

int zil_commit(struct zil *z, const struct zil_record *recs, uint32_t n)
{
	uint64_t start = clock_mono_ns();
	struct zil_waiter w = { .recs = recs, .n = n };
	uint64_t bytes = 0, logical = 0;
	for (uint32_t i = 0; i < n; i++) {
		bytes += rec_bytes(recs[i].length);
		logical += recs[i].length;
	}
	pthread_mutex_lock(&z->lock);
	z->st.zil_commit_count++;
	z->st.zil_itx_count += n;
	if (!n) {
		pthread_mutex_unlock(&z->lock);
		return 0;
	}
	if (bytes > UINT32_MAX / 2) {
		z->st.zil_commit_errors++;
		pthread_mutex_unlock(&z->lock);
		return -ENOSPC;
	}
	w.bytes = (uint32_t)bytes;
	if (z->pend_tail)
		z->pend_tail->next = &w;
	else
		z->pend_head = &w;
	z->pend_tail = &w;
	while (!w.done) {
		if (!z->writing) {
			z->writing = 1;
			write_pending(z);
			z->writing = 0;
			pthread_cond_broadcast(&z->cv);
		} else {
			pthread_cond_wait(&z->cv, &z->lock);
		}
	}
	pthread_mutex_unlock(&z->lock);
	if (STRATA_PROBE_ENABLED(zil_commit)) {
		struct strata_tier_io io = { .start_ns = start, .file_id = recs[0].objid,
					     .bytes = (uint32_t)(logical > UINT32_MAX ? UINT32_MAX : logical),
					     .asize = w.blk_len, .error = w.err, .count = n };
		STRATA_PROBE(zil_commit, &io);
	}
	return w.err;
}

struct replay_ctx {
	struct zil *z;
	uint64_t synced_txg, replayed, skipped;
	zil_replay_fn fn;
	void *ctx;
};

static int replay_one(void *arg, const struct zil_record *r)
{
	struct replay_ctx *c = arg;
	if (r->txg <= c->synced_txg) {
		c->skipped++;
		return 0;
	}
	int rc = c->fn(c->ctx, r);
	if (!rc)
		c->replayed++;
	return rc;
}

int zil_replay(struct zil *z, uint64_t synced_txg, zil_replay_fn fn, void *ctx)
{
	struct replay_ctx c = { z, synced_txg, 0, 0, fn, ctx };
	pthread_mutex_lock(&z->lock);
	size_t n = z->nblks;
	struct zil_blk *list = malloc((n ? n : 1) * sizeof(*list));
	if (!list) {
		pthread_mutex_unlock(&z->lock);
		return -ENOMEM;
	}
	if (n)
		memcpy(list, z->blks + z->first, n * sizeof(*list));
	pthread_mutex_unlock(&z->lock);
	int rc = 0;
	for (size_t i = 0; i < n && !rc; i++) {
		if (!list[i].replay)
			continue;
		uint8_t *buf;
		rc = blk_read(z, list[i].lpos, list[i].seq, list[i].nonce, &buf);
		if (rc)
			break; /* the device changed under us */
		rc = blk_foreach(buf, replay_one, &c);
		free(buf);
	}
	free(list);
	pthread_mutex_lock(&z->lock);
	z->st.zil_replayed += c.replayed;
	z->st.zil_replay_skipped += c.skipped;
	if (!rc)
		z->replayed = 1;
	pthread_mutex_unlock(&z->lock);
	return rc ? (rc < 0 ? rc : -ECANCELED) : (int)c.replayed;
}

int zil_checkpoint(struct zil *z, uint64_t synced_txg)
{
	pthread_mutex_lock(&z->ckpt_lock);
	pthread_mutex_lock(&z->lock);
	size_t k = 0;
	for (; k < z->nblks; k++) {
		const struct zil_blk *b = &z->blks[z->first + k];
		if (b->replay ? !z->replayed : b->max_txg > synced_txg)
			break;
	}
	if (!k && !z->nblks && z->failed && !z->writing)
		z->failed = 0;
	uint64_t lpos = k < z->nblks ? z->blks[z->first + k].lpos : z->hand_lpos;
	uint64_t seq = k < z->nblks ? z->blks[z->first + k].seq : z->next_seq;
	uint64_t nonce = k < z->nblks ? z->blks[z->first + k].nonce : z->next_nonce;
	pthread_mutex_unlock(&z->lock);
	int rc = 0;
	if (k) {
		/* Durable first, reusable after: a crash still finds the tail. */
		rc = sb_write(z, lpos, seq, nonce);
		if (!rc) {
			pthread_mutex_lock(&z->lock);
			z->first += k;
			z->nblks -= k;
			z->tail_lpos = lpos;
			z->tail_seq = seq;
			z->tail_nonce = nonce;
			if (!z->nblks && z->failed && !z->writing)
				z->failed = 0;
			z->st.zil_checkpoints++;
			pthread_mutex_unlock(&z->lock);
		}
	}
	pthread_mutex_unlock(&z->ckpt_lock);
	return rc;
}

void zil_set_model(struct zil *z, struct devmodel *m)
{
	z->model = m;
}

void zil_set_write_delay(struct zil *z, uint64_t ns)
{
	__atomic_store_n(&z->write_delay_ns, ns, __ATOMIC_RELAXED);
}

void zil_get_stats(struct zil *z, struct zil_stats *out)
{
	pthread_mutex_lock(&z->lock);
	*out = z->st;
	out->zil_log_used = z->hand_lpos - z->tail_lpos;
	pthread_mutex_unlock(&z->lock);
}
