/* l2arc_log.c — the L2ARC's on-device metadata: the superblock at offset 0
 * (ring geometry, hand, evict position, newest log block) and the log blocks
 * written with every feed (headers of the buffers just written, each block
 * pointing to the previous one with its checksum), and the rebuild thread that
 * walks that chain from the newest block back to restore the headers. */
#include "l2arc_impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define L2_SB_MAGIC   0x3142533241525453ull /* "STRA2SB1" */
#define L2_LB_MAGIC   0x4b4c42324c525453ull  /* "STRL2BLK" */
#define L2_SB_VERSION 1

struct l2_sb {
	uint64_t magic, version, guid, dev_size, ring_start, ring_end;
	uint64_t hand_lpos, evict_lpos, filled;
	struct l2_lbptr head;
	struct cksum ck;        /* fletcher4 of the fields above */
};

int l2_sb_load(struct l2dev *d)
{
	uint8_t *buf = tierdev_alloc(TIERDEV_ALIGN);
	struct l2_sb sb;
	int ok = !tierdev_pread(&d->io, buf, TIERDEV_ALIGN, 0);
	memcpy(&sb, buf, sizeof(sb));
	free(buf);
	if (!ok || sb.magic != L2_SB_MAGIC || sb.version != L2_SB_VERSION)
		return 0;
	struct cksum ck;
	fletcher4(&sb, offsetof(struct l2_sb, ck), &ck);
	if (!cksum_equal(&ck, &sb.ck) || sb.dev_size != d->io.size || sb.ring_start != d->ring_start ||
	    sb.ring_end != d->ring_end || sb.hand_lpos < sb.evict_lpos ||
	    sb.hand_lpos - sb.evict_lpos > d->ring_len)
		return 0;
	/* A head outside the valid window names no block: the next feed would
	 * chain its log block to whatever gets written there later. */
	if (sb.head.lpos < sb.evict_lpos || sb.head.lpos > sb.hand_lpos ||
	    sb.head.size > sb.hand_lpos - sb.head.lpos)
		memset(&sb.head, 0, sizeof(sb.head));
	d->guid = sb.guid;
	d->hand_lpos = sb.hand_lpos;
	d->evict_lpos = sb.evict_lpos;
	d->filled = sb.filled != 0;
	d->head = sb.head;
	return 1;
}

void l2_sb_format(struct l2dev *d)
{
	uint64_t g = 0;
	if (getrandom(&g, sizeof(g), 0) != (ssize_t)sizeof(g))
		g = (uint64_t)time(NULL) * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid();
	d->guid = g;
	d->hand_lpos = d->evict_lpos = 0;
	d->filled = 0;
	memset(&d->head, 0, sizeof(d->head));
}

int l2_sb_write(struct l2dev *d, const struct l2dev *s)
{
	struct l2_sb sb = {
		.magic = L2_SB_MAGIC, .version = L2_SB_VERSION, .guid = s->guid,
		.dev_size = s->io.size, .ring_start = s->ring_start, .ring_end = s->ring_end,
		.hand_lpos = s->hand_lpos, .evict_lpos = s->evict_lpos, .filled = (uint64_t)s->filled,
		.head = s->head,
	};
	fletcher4(&sb, offsetof(struct l2_sb, ck), &sb.ck);
	uint8_t *buf = tierdev_alloc(TIERDEV_ALIGN);
	memcpy(buf, &sb, sizeof(sb));
	int rc = tierdev_pwrite(&d->io, buf, TIERDEV_ALIGN, 0);
	free(buf);
	return rc;
}

uint32_t l2_lb_encode(uint8_t *dst, const struct l2dev *d, uint64_t lpos,
		      const struct l2_lbent *ents, uint32_t n, struct l2_lbptr *chain)
{
	struct l2_lbhdr h = { .magic = L2_LB_MAGIC, .guid = d->guid, .lpos = lpos,
			      .prev = *chain, .nentries = n };
	uint32_t size = l2_lb_bytes(n);
	memset(dst, 0, size);
	memcpy(dst, &h, sizeof(h));
	memcpy(dst + sizeof(h), ents, n * sizeof(*ents));
	*chain = (struct l2_lbptr){ .lpos = lpos, .size = size };
	fletcher4(dst, size, &chain->ck);
	return size;
}

/* An entry of a log block living at lb_lpos is usable if it lies in the
 * device's valid window, before its log block, inside one lap of the ring. */
static int entry_valid(const struct l2dev *d, const struct l2_lbent *e, uint64_t lb_lpos, uint32_t max_buf)
{
	uint32_t psize = e->psize_flags & 0xffffff, flags = e->psize_flags >> 24;
	if (!e->lsize || e->lsize > max_buf || !psize || psize > e->lsize || (flags & ~L2F_COMPRESSED) ||
	    (!(flags & L2F_COMPRESSED) && psize != e->lsize))
		return 0;
	uint32_t asz = l2_asize(psize);
	if (e->lpos < d->evict_lpos || e->lpos + asz > lb_lpos || e->lpos % L2_SECTOR)
		return 0;
	return l2_phys(d, e->lpos) + asz <= d->ring_end;
}

/* Restores the entries of one verified log block, newest first, at the old
 * end of the device's list; 0 if the rebuild must stop. */
static int restore_block(struct l2arc *l2, struct l2dev *d, const uint8_t *p, const struct l2_lbhdr *h)
{
	pthread_mutex_lock(&l2->lock);
	if (l2->stop || l2->tomb_overflow) {
		l2->st.l2_rebuild_aborts++;
		pthread_mutex_unlock(&l2->lock);
		return 0;
	}
	for (uint32_t i = h->nentries; i-- > 0;) {
		struct l2_lbent e;
		memcpy(&e, p + sizeof(*h) + i * sizeof(e), sizeof(e));
		if (!entry_valid(d, &e, h->lpos, l2->cfg.max_buf) || l2_lookup(l2, e.key) != L2_NIL ||
		    l2_stage_find(l2, e.key) || l2_tomb_has(l2, e.key))
			continue;
		struct l2hdr hdr = { .key = e.key, .ck = e.ck,
				     .daddr = (uint32_t)(l2_phys(d, e.lpos) / L2_SECTOR),
				     .lsize = e.lsize, .psize = e.psize_flags & 0xffffff,
				     .flags = e.psize_flags >> 24 };
		l2_hdr_add(l2, d, &hdr, 1);
		l2->st.l2_rebuild_bufs++;
	}
	l2->st.l2_rebuild_log_blks++;
	pthread_mutex_unlock(&l2->lock);
	return 1;
}

void l2_rebuild_finish(struct l2arc *l2, struct l2dev *d, int ok)
{
	pthread_mutex_lock(&l2->lock);
	if (ok)
		l2->st.l2_rebuild_success++;
	d->rebuilding = 0;
	if (--l2->rebuilding == 0)
		l2_tombs_clear(l2);
	pthread_cond_broadcast(&l2->done_cv);
	pthread_mutex_unlock(&l2->lock);
}

void *l2_rebuild_main(void *arg)
{
	struct l2_rebuild_arg a = *(struct l2_rebuild_arg *)arg;
	free(arg);
	struct l2arc *l2 = a.l2;
	struct l2dev *d = a.dev;
	uint32_t maxlb = l2_lb_bytes(L2_LB_MAX_ENTRIES);
	uint8_t *buf = tierdev_alloc(maxlb + 2 * TIERDEV_ALIGN);
	struct l2_lbptr ptr = d->head;
	int ok = 1;
	/* The chain ends where a block falls out of the valid window. */
	while (ptr.size && ptr.lpos >= d->evict_lpos && ptr.lpos <= d->hand_lpos &&
	       ptr.size <= d->hand_lpos - ptr.lpos) {
		uint64_t phys = l2_phys(d, ptr.lpos);
		if (ptr.size < sizeof(struct l2_lbhdr) || ptr.size > maxlb || ptr.size % L2_SECTOR ||
		    phys + ptr.size > d->ring_end) {
			ok = 0;
			break;
		}
		uint64_t aoff = phys & ~(uint64_t)(TIERDEV_ALIGN - 1);
		size_t span = tier_roundup(phys + ptr.size - aoff, TIERDEV_ALIGN);
		if (tierdev_pread(&d->io, buf, span, aoff)) {
			__atomic_add_fetch(&l2->st.l2_rebuild_io_errors, 1, __ATOMIC_RELAXED);
			ok = 0;
			break;
		}
		const uint8_t *p = buf + (phys - aoff);
		struct cksum ck;
		struct l2_lbhdr h;
		fletcher4(p, ptr.size, &ck);
		memcpy(&h, p, sizeof(h));
		if (!cksum_equal(&ck, &ptr.ck) || h.magic != L2_LB_MAGIC || h.guid != d->guid ||
		    h.lpos != ptr.lpos || h.nentries > L2_LB_MAX_ENTRIES ||
		    sizeof(h) + (uint64_t)h.nentries * sizeof(struct l2_lbent) > ptr.size) {
			__atomic_add_fetch(&l2->st.l2_rebuild_lb_bad, 1, __ATOMIC_RELAXED);
			ok = 0;
			break;
		}
		if (!restore_block(l2, d, p, &h)) {
			ok = 0;
			break;
		}
		ptr = h.prev;
	}
	free(buf);
	l2_rebuild_finish(l2, d, ok);
	return NULL;
}
