/* wire_nfs4.h — the main operation of an NFSv4.x COMPOUND call (RFC 7530, 5661, 7862),
 * read from the packet by bpf/wire.bpf.c once a COMPOUND's RPC header is known.
 *
 * The main op follows bpf/nfs4_ops.h, the rule the nfsd layer shares.
 * Untrusted bytes: every length is bounded before it moves the cursor, and every
 * word is read from a copy of the call's fragment in this packet, [pos, end), cut
 * to NFS4_WINDOW bytes, after checking it lies inside. A compound that cannot be
 * walked to its main op within those bounds (credentials over 400 bytes, a tag over NFS4_TAG_MAX, a name over
 * NFS4_NAME_MAX, a GETATTR bitmap over NFS4_BITMAP_MAX words, more than
 * NFS4_OPS_SCANNED prefix and lookup ops, an unknown opcode, ops beyond the
 * NFS4_WINDOW bytes that follow the call's header in its packet)
 * keeps WIRE_OP_V4 ("compound"). Key values: bpf/aggregate.h's AGG_NFS_OP_* (from
 * catalogue/statistics.def) and bpf/wire_rpc.h. */
#ifndef STRATA_WIRE_NFS4_H
#define STRATA_WIRE_NFS4_H

#include "nfs4_ops.h"

#define NFS4_AUTH_MAX     400 /* RFC 5531: opaque_auth bodies are at most 400 bytes */
#define NFS4_TAG_MAX      256 /* COMPOUND tags are short ("" from Linux, a name from libnfs) */
#define NFS4_FHSIZE       128
#define NFS4_NAME_MAX     1024 /* a LOOKUP's component (255 UTF-8 characters at most 1020 bytes) */
#define NFS4_BITMAP_MAX   8    /* GETATTR's bitmap4 words (3 are defined, RFC 8276) */
/* The call's first bytes after its header, copied once (a word read from the copy costs
 * less than a helper call, and one path per read keeps the verifier's states few). */
#define NFS4_WINDOW 512

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[2 * NFS4_WINDOW]);
} wire_nfs4_window SEC(".maps");

struct nfs4_reader {
	__u8 *win;      /* the packet's bytes base..base+have */
	__u32 base, have;
};

/* The big-endian word at packet offset pos, if it lies within the window. */
static __always_inline int nfs4_load(const struct nfs4_reader *r, __u32 pos, __u32 *v)
{
	__u32 rel = pos - r->base;
	__u8 *p;

	if (pos < r->base || rel > r->have || r->have - rel < 4)
		return -1;
	p = &r->win[rel & (NFS4_WINDOW - 1)];
	*v = (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
	return 0;
}

struct nfs4_walk {
	struct nfs4_reader r;
	__u32 pos, numops, first, lookup, key, ended;
};

/* Op i of the compound; 1 once w->key is decided. One step of a loop that the verifier
 * checks once whatever the op count: a bpf_loop callback, or a global function. */
static __always_inline long nfs4_op_step(__u32 i, struct nfs4_walk *w, const struct nfs4_reader *r)
{
	__u32 opcode, len, arg = 0;

	if (i == w->numops) { /* prefix and lookup ops only: keyed by nfs4_main_op */
		w->ended = 1;
		return 1;
	}
	if (nfs4_load(r, w->pos, &opcode))
		return 1;
	if (i == 0)
		w->first = opcode;
	switch (opcode) {
	case OP4_SEQUENCE: /* sessionid, sequenceid, slotid, highest_slotid, cachethis */
		w->pos += 4 + 16 + 16;
		return 0;
	case OP4_PUTFH:
	case OP4_LOOKUP: /* nfs_fh4, component4 */
		if (nfs4_load(r, w->pos + 4, &len) || len > (opcode == OP4_PUTFH ? NFS4_FHSIZE : NFS4_NAME_MAX))
			return 1;
		w->pos += 8 + ((len + 3) & ~3u);
		break;
	case OP4_GETATTR: /* bitmap4 */
		if (nfs4_load(r, w->pos + 4, &len) || len > NFS4_BITMAP_MAX)
			return 1;
		w->pos += 8 + 4 * len;
		break;
	case OP4_ACCESS: /* access mask */
		w->pos += 8;
		break;
	case OP4_PUTROOTFH:
	case OP4_PUTPUBFH:
	case OP4_SAVEFH:
	case OP4_RESTOREFH:
	case OP4_LOOKUPP:
	case OP4_GETFH:
		w->pos += 4;
		break;
	default: /* the main op */
		if (opcode == OP4_CREATE && nfs4_load(r, w->pos + 4, &arg))
			return 1;
		w->key = nfs4_op_key(opcode, arg);
		return 1;
	}
	if (!w->lookup && nfs4_role(opcode) == NFS4_LOOKUP_OP)
		w->lookup = opcode;
	return 0;
}

static long nfs4_op_step_cb(__u32 i, void *ctx)
{
	struct nfs4_walk *w = ctx;

	return nfs4_op_step(i, w, &w->r);
}

/* The bounded programs' walk (before Linux 5.17, no bpf_loop): per CPU, as a global
 * function before 5.12 takes no pointer but the context. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct nfs4_walk); /* r.win unused: the window is looked up again */
} wire_nfs4_walk SEC(".maps");

__noinline int nfs4_op_step_bounded(__u32 i)
{
	__u32 zero = 0;
	struct nfs4_walk *w = bpf_map_lookup_elem(&wire_nfs4_walk, &zero);
	struct nfs4_reader r;

	if (!w)
		return 1;
	r.win = bpf_map_lookup_elem(&wire_nfs4_window, &zero);
	if (!r.win)
		return 1;
	r.base = w->r.base;
	r.have = w->r.have;
	return nfs4_op_step(i, w, &r);
}

/* The op key of the COMPOUND call whose credentials start at pos (the call header's
 * 24 fixed bytes and the credential flavor read already); end bounds the fragment.
 * bounded: without bpf_loop. */
static __always_inline __u32 nfs4_main_op_in(struct __sk_buff *skb, __u32 pos, __u32 end, int bounded)
{
	struct nfs4_walk w = { .r.base = pos, .key = WIRE_OP_V4 }, *s;
	__u32 len, zero = 0, n;

	w.r.win = bpf_map_lookup_elem(&wire_nfs4_window, &zero);
	n = end > pos ? end - pos : 0;
	if (!w.r.win || !n)
		return WIRE_OP_V4;
	if (n > NFS4_WINDOW)
		n = NFS4_WINDOW;
	n = ((n - 1) & (NFS4_WINDOW - 1)) + 1; /* unchanged: 1..NFS4_WINDOW, as the verifier sees it */
	if (bpf_skb_load_bytes(skb, pos, w.r.win, n))
		return WIRE_OP_V4;
	w.r.have = n;
	if (nfs4_load(&w.r, pos, &len) || len > NFS4_AUTH_MAX) /* credential body */
		return WIRE_OP_V4;
	pos += 4 + ((len + 3) & ~3u);
	if (nfs4_load(&w.r, pos + 4, &len) || len > NFS4_AUTH_MAX) /* verifier: flavor, body */
		return WIRE_OP_V4;
	pos += 8 + ((len + 3) & ~3u);
	if (nfs4_load(&w.r, pos, &len) || len > NFS4_TAG_MAX) /* tag */
		return WIRE_OP_V4;
	pos += 4 + ((len + 3) & ~3u);
	if (nfs4_load(&w.r, pos + 4, &w.numops) || w.numops == 0) /* minorversion, numops */
		return WIRE_OP_V4;
	w.pos = pos + 8;
	if (!bounded) {
		bpf_loop(NFS4_OPS_SCANNED, nfs4_op_step_cb, &w, 0);
		/* keyed here, not in the step: a verifier that checks the step once (6.1) saw
		 * first and lookup still zero there, and cut the branches of the other opcodes */
		if (w.ended)
			w.key = nfs4_op_key(w.lookup ? w.lookup : w.first, 0);
		return w.key;
	}
	s = bpf_map_lookup_elem(&wire_nfs4_walk, &zero);
	if (!s)
		return WIRE_OP_V4;
	s->r.base = w.r.base;
	s->r.have = w.r.have;
	s->pos = w.pos;
	s->numops = w.numops;
	s->first = s->lookup = s->ended = 0;
	s->key = WIRE_OP_V4;
	for (__u32 i = 0; i < NFS4_OPS_SCANNED; i++)
		if (nfs4_op_step_bounded(i))
			break;
	if (s->ended)
		s->key = nfs4_op_key(s->lookup ? s->lookup : s->first, 0);
	return s->key;
}

/* Global functions: the verifier checks them once, not once per path that calls them. */
__noinline __u32 nfs4_main_op(struct __sk_buff *skb, __u32 pos, __u32 end)
{
	return nfs4_main_op_in(skb, pos, end, 0);
}

__noinline __u32 nfs4_main_op_bounded(struct __sk_buff *skb, __u32 pos, __u32 end)
{
	return nfs4_main_op_in(skb, pos, end, 1);
}

#endif
