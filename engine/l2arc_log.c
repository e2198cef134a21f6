/* l2arc_log.c — the L2ARC's on-device metadata: the superblock at offset 0
 * (ring geometry, hand, evict position, newest log block) and the log blocks
 * written with every feed (headers of the buffers just written, each block
 * pointing to the previous one with its checksum), and the walk of that chain
 * from the newest block back that the rebuild (l2arc.c) restores headers from.
 * It calls nothing of the cache above it. */
#include "l2arc_log.h"

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

int l2_lbent_valid(const struct l2dev *d, const struct l2_lbent *e, uint64_t lb_lpos, uint32_t max_buf)
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

enum l2_walk l2_log_walk(struct l2dev *d, int (*visit)(void *ctx, const uint8_t *p, const struct l2_lbhdr *h),
			 void *ctx)
{
	uint32_t maxlb = l2_lb_bytes(L2_LB_MAX_ENTRIES);
	uint8_t *buf = tierdev_alloc(maxlb + 2 * TIERDEV_ALIGN);
	struct l2_lbptr ptr = d->head;
	enum l2_walk end = L2_WALK_END;
	/* The chain ends where a block falls out of the valid window. */
	while (ptr.size && ptr.lpos >= d->evict_lpos && ptr.lpos <= d->hand_lpos &&
	       ptr.size <= d->hand_lpos - ptr.lpos) {
		uint64_t phys = l2_phys(d, ptr.lpos);
		if (ptr.size < sizeof(struct l2_lbhdr) || ptr.size > maxlb || ptr.size % L2_SECTOR ||
		    phys + ptr.size > d->ring_end) {
			end = L2_WALK_ASTRAY;
			break;
		}
		uint64_t aoff = phys & ~(uint64_t)(TIERDEV_ALIGN - 1);
		size_t span = tier_roundup(phys + ptr.size - aoff, TIERDEV_ALIGN);
		if (tierdev_pread(&d->io, buf, span, aoff)) {
			end = L2_WALK_IO_ERROR;
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
			end = L2_WALK_BAD_BLOCK;
			break;
		}
		if (!visit(ctx, p, &h)) {
			end = L2_WALK_STOPPED;
			break;
		}
		ptr = h.prev;
	}
	free(buf);
	return end;
}
