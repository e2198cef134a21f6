/* wire.bpf.c — the wire layer: NFS (and MOUNT) seen from the network. TC clsact
 * programs on the server's interfaces follow ONC RPC over TCP (RFC 5531 record
 * marking) in both directions: calls arriving (ingress, to a server port) and
 * replies leaving (egress, from a server port). A call's header is remembered per
 * (connection, xid); its reply's header completes the operation, which feeds
 * wire.ops, wire.latency (reply leaving - call arriving) and wire.size (call record
 * + reply record bytes) through bpf/aggregate.h. Contracts: bpf/wire_rpc.h. On
 * loopback, which carries every packet out and back in, one program (wire_loopback, at
 * egress) sees both directions once and tells calls from replies by port.
 *
 * Each direction of a connection is a byte stream with its own state: the next
 * sequence number expected, where the current record fragment ends, and the first
 * header bytes of a record gathered across packets. Both directions and the calls
 * awaiting their reply share one entry per connection (LRU map), so a packet costs
 * one lookup. Several records in one packet, one record over many packets and
 * multi-fragment records all walk the same state machine (marker -> header -> body).
 * A stream that cannot be followed (a sequence gap, a record marker or header that is
 * not RPC, a stream joined mid-way) stops counting until a packet starts with a
 * plausible call header (or, for replies, the reply of a call still pending); both
 * events are counted in wire_counters, so a lost stretch is visible and never counted
 * as wrong data.
 * Reordering is tolerated without loss where it can be: bytes missing inside a
 * record's body need not be seen at all; a segment that arrives ahead of its
 * predecessor at a record boundary, starting with a plausible header, is walked at
 * once and leaves a hole, which the late segment fills when it holds whole records
 * (the common case: one call per send).
 *
 * The programs come in two trios from this one source (enum loop_kind), and the collector
 * loads the one the kernel allows (collectors/layers/wire.c): with bpf_loop (Linux 5.17+), or
 * bounded, for older kernels (5.10+), whose loops call global functions that keep the
 * walk's state in a per-CPU map (wire_walk_state) and find the connection again at each
 * step, as a global function before 5.12 takes no pointer but the context. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "llhist.h"
#define AGG_SLOTS_BY_BPF_LOOP /* the bpf_loop programs' aggregation (see emit) */
#include "aggregate.h"
#include "wire_rpc.h"
#include "wire_nfs4.h"

char LICENSE[] SEC("license") = "GPL";

#define TC_ACT_UNSPEC (-1) /* let the next filter decide: the wire view never drops */
#define ETH_P_IP   0x0800
#define ETH_P_IPV6 0x86DD
#define PROTO_TCP  6
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10

enum { DIR_CALL = 0, DIR_REPLY = 1 };
enum { PH_MARKER = 0, PH_HEADER, PH_BODY, PH_UNSYNCED };

struct wire_flow {
	__u8 client[16]; /* IPv4 as ::ffff:a.b.c.d */
	__u8 server[16];
	__u16 cport;     /* host order */
	__u16 sport;
	__u32 xid;       /* pending key: the call's xid; 0 in a connection's key */
};

/* A reply whose record continues in further fragments: counted at its last marker. */
struct wire_done {
	__u64 latency_ns;
	__u64 bytes;
	__u32 op, version, status, valid;
};

struct wire_call {
	__u64 start_ns;   /* first packet of the call arriving */
	__u64 bytes;      /* call record bytes (markers included) */
	__u32 op, version;
	__u32 has_status; /* the reply's result begins with a status word */
	__u32 xid;
};

/* One direction of a connection. */
struct wire_stream {
	__u32 next_seq;   /* sequence number of the next byte not yet walked */
	__u32 frag_left;  /* bytes of the current fragment still to walk */
	__u32 xid;        /* xid of the record in progress (once its header was read) */
	__u32 rec_bytes;  /* bytes of the record in progress, markers included */
	__u8 phase;       /* PH_* */
	__u8 have;        /* bytes gathered in buf (marker or header) */
	__u8 want;        /* header bytes wanted */
	__u8 last_frag;   /* the current fragment ends its record */
	__u8 rec_start;   /* the next marker starts a record (its header follows) */
	__u8 in_call;     /* calls: the record in progress is a followed call */
	__u8 has_hole;    /* bytes hole_seq..hole_end not seen yet (a reordered segment) */
	__u8 open;        /* followed: since its SYN or a packet joined mid-way, until its FIN */
	__u32 hole_seq, hole_end;
	struct wire_done done; /* replies: the operation of a reply whose record continues */
	__u8 buf[64];     /* gathering room: have < 32 and a read of at most 32 */
};

/* A connection: its two directions and the calls awaiting their reply. A call and a reply
 * of one connection may be walked at once on two CPUs, so the words both directions change
 * (npending and the slot bits) change by atomic adds only (a lost update would lose a
 * pending call, or keep a slot taken for good): the call side sets a bit that is clear,
 * after the call is written to its slot, and the reply side clears a bit that is set, the
 * moved bit first, so a slot is free only once both are clear. */
struct wire_conn {
	struct wire_stream dir[2]; /* DIR_CALL (client to server), DIR_REPLY */
	__u32 npending;    /* calls awaiting a reply in wire_pending */
	__u32 inline_used; /* bit i set while calls[i] awaits its reply */
	__u32 inline_moved; /* bit i set while calls[i] holds a call not in its own slot */
	/* calls awaiting a reply, in slot xid % WIRE_INLINE_CALLS (clients number their
	 * calls in sequence), so that a connection with few calls outstanding (the usual
	 * case) never touches wire_pending; a call whose slot is taken (an older call still
	 * unanswered) takes a free one, marked moved; with none free it goes to wire_pending */
	struct wire_call calls[WIRE_INLINE_CALLS];
};

/* Server ports followed, one bit per port (set by userspace): a load, not a map lookup,
 * for every packet the interface carries. */
__u8 wire_port_bits[65536 / 8];

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, WIRE_IFACES_MAX);
	__type(key, __u32);  /* ifindex */
	__type(value, __u32); /* bytes before the IP header (14 on Ethernet and lo, 0 on tun) */
} wire_l2len SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WIRE_CONNS_MAX);
	__type(key, struct wire_flow);
	__type(value, struct wire_conn);
} wire_conns SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, WIRE_PENDING_MAX);
	__type(key, struct wire_flow);
	__type(value, struct wire_call);
} wire_pending SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, WIRE_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} wire_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wire_conn);
} wire_new_conn SEC(".maps"); /* all zero between uses: a new connection's state, and scratch */

/* v added to *word in one atomic step (BPF_XADD: any kernel since 5.10; a negative v
 * subtracts). */
static __always_inline void add_atomic(__u32 *word, __u32 v)
{
	__sync_fetch_and_add(word, v);
}

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&wire_counters, &which);

	if (v)
		*v += 1;
}

/* The big-endian word at p: one load and a byte swap (x86 loads words at any alignment). */
static __always_inline __u32 be32(const __u8 *p)
{
	return bpf_ntohl(*(const __u32 *)p);
}

/* --- RPC headers (the bytes after a record marker) --- */

/* A call header's fields; 1 if NFS v3/v4 or MOUNT v1-v3, 0 for another program or
 * version, -1 if the bytes are not an RPC call at all. */
static __always_inline int parse_call(const __u8 *h, struct wire_call *c)
{
	__u32 prog = be32(h + 12), vers = be32(h + 16), proc = be32(h + 20);

	if (be32(h + 4) != 0 || be32(h + 8) != 2) /* msg_type CALL, rpcvers 2 */
		return -1;
	if (prog == WIRE_PROG_NFS && vers == 3 && proc <= 21) {
		c->op = proc;
		c->has_status = proc != 0;
	} else if (prog == WIRE_PROG_NFS && vers == 4 && proc <= 1) {
		c->op = proc ? WIRE_OP_V4 : 0;
		c->has_status = proc != 0;
	} else if (prog == WIRE_PROG_MOUNT && vers >= 1 && vers <= 3 && proc <= 5) {
		c->op = WIRE_OP_MOUNT | proc;
		c->has_status = proc == 1; /* only MNT's result starts with a status */
	} else {
		return 0;
	}
	c->version = (prog == WIRE_PROG_MOUNT ? WIRE_OP_MOUNT : 0) | vers;
	return 1;
}

/* Status of a reply header of len bytes (bpf/wire_rpc.h); -1 if not an RPC reply. */
static __always_inline int parse_reply(const __u8 *h, __u32 len, __u32 has_status, __u32 *status)
{
	__u32 astat;

	if (len < 16 || be32(h + 4) != 1) /* msg_type REPLY */
		return -1;
	if (be32(h + 8) == 1) { /* MSG_DENIED: reject_stat follows */
		*status = WIRE_STATUS_DENIED | (be32(h + 12) & 0xffff);
		return 0;
	}
	if (be32(h + 8) != 0 || len < 24)
		return -1;
	if (be32(h + 16) != 0) { /* a verifier body (RPCSEC_GSS): the status lies beyond what was read */
		*status = 0;
		return 0;
	}
	astat = be32(h + 20);
	if (astat) {
		*status = WIRE_STATUS_RPC | (astat & 0xffff);
		return 0;
	}
	*status = has_status && len >= 28 ? be32(h + 24) & 0xffff : 0;
	return 0;
}

/* --- one operation, counted --- */

static __always_inline void server_key(__u8 *key, const struct wire_flow *f)
{
	__builtin_memcpy(key, f->server, 16);
	if (f->server[10] == 0xff && f->server[11] == 0xff && !f->server[0] && !f->server[1]) {
		key[0] = f->sport >> 8;
		key[1] = f->sport & 0xff;
	}
}

/* How a program loops: an argument of the inlined walk, constant in each program. */
enum loop_kind {
	LOOP_BPF = 0, /* with bpf_loop (Linux 5.17+) */
	LOOP_BOUNDED, /* bounded loops over global functions (any kernel since 5.10) */
};

/* The operation d of connection f counted at now (its packet's bpf_ktime_get_ns(), the
 * clock of the interval boundaries: the aggregation does not read it again); with
 * LOOP_BOUNDED its event is returned for the caller to aggregate (walk_step_aggregate:
 * the step's stack holds no more frames), or NULL.
 * Every event sets the same fields, so the per-CPU event is reused without clearing it. */
static __always_inline struct agg_event *emit_event(const struct wire_flow *f, const struct wire_done *d,
						     __u64 now, int loop)
{
	struct agg_event *ev = agg_event_reuse();

	if (!ev)
		return NULL;
	*(__u32 *)ev->dims[AGG_DIM_OP] = d->op;
	*(__u32 *)ev->dims[AGG_DIM_VERSION] = d->version;
	*(__u32 *)ev->dims[AGG_DIM_STATUS] = d->status;
	__builtin_memcpy(ev->dims[AGG_DIM_CLIENT], f->client, 16);
	server_key(ev->dims[AGG_DIM_SERVER], f);
	ev->latency_ns = d->latency_ns;
	ev->bytes = d->bytes;
	ev->now_ns = now;
	ev->stats_mask = 1u << AGG_STAT_WIRE_OPS | 1u << AGG_STAT_WIRE_LATENCY | 1u << AGG_STAT_WIRE_SIZE;
	count(WIRE_REPLIES);
	if (loop == LOOP_BPF)
		agg_event_apply_by_bpf_loop(ev);
	return ev;
}

/* A global function: the verifier checks it (and the aggregation behind it) once, not
 * once for every place and state a reply is counted from. Before Linux 5.12 a global
 * function takes no pointer but the context: the bounded programs inline emit_event. */
__noinline int emit(const struct wire_flow *f, const struct wire_done *d, __u64 now)
{
	if (f && d)
		emit_event(f, d, now, LOOP_BPF);
	return 0;
}

/* --- the stream walk --- */

struct walk {
	struct __sk_buff *skb;
	struct wire_stream *st;
	struct wire_conn *conn; /* st's connection (its pending calls) */
	struct wire_flow *flow;
	__u32 pos, end;       /* skb offsets of the payload still to walk */
	__u64 now;
	__u8 lost;            /* the stream lost sync in this packet */
	__u8 emitted;         /* LOOP_BOUNDED: operations await their aggregation (wire_step_ops) */
	__u32 dir;            /* st's direction: DIR_* */
};

/* Records a bounded step walks at most: each step finds the connection again, so a packet
 * of several records costs a lookup per this many (a power of two). */
#define WIRE_STEP_RECORDS 4

/* The operations a bounded step counted (at most one a record), which its caller aggregates
 * (walk_step_aggregate), per CPU: n of them, empty between steps. */
struct wire_step_ops {
	__u32 n;
	struct wire_done done[WIRE_STEP_RECORDS];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct wire_step_ops);
} wire_step_ops SEC(".maps");

static __always_inline void emit_op(struct walk *w, const struct wire_done *d, int loop)
{
	struct wire_step_ops *ops;
	__u32 zero = 0;

	if (loop == LOOP_BPF) {
		emit(w->flow, d, w->now);
		return;
	}
	ops = bpf_map_lookup_elem(&wire_step_ops, &zero);
	if (!ops)
		return;
	ops->done[ops->n & (WIRE_STEP_RECORDS - 1)] = *d;
	ops->n++;
	w->emitted = 1;
}

static __always_inline void lose_sync(struct walk *w)
{
	w->st->phase = PH_UNSYNCED;
	w->lost = 1;
	count(WIRE_DESYNCS);
}

/* The pending call xid: one of the connection's inline slots (*slot = its index) or an
 * entry of wire_pending (*slot = -1); NULL if none. */
static __always_inline struct wire_call *call_find(struct walk *w, __u32 xid, int *slot)
{
	struct wire_conn *conn = w->conn;
	__u32 i = xid & (WIRE_INLINE_CALLS - 1);
	struct wire_flow key;

	*slot = -1;
	if ((conn->inline_used & (1u << i)) && conn->calls[i].xid == xid) {
		*slot = i;
		return &conn->calls[i];
	}
	if (conn->inline_moved) { /* moved slots are used ones: both bits clear together */
		for (int j = 0; j < WIRE_INLINE_CALLS; j++) {
			if ((conn->inline_moved & (1u << j)) && conn->calls[j].xid == xid) {
				*slot = j;
				return &conn->calls[j];
			}
		}
	}
	if (!conn->npending)
		return NULL;
	key = *w->flow;
	key.xid = xid;
	return bpf_map_lookup_elem(&wire_pending, &key);
}

/* The call found by call_find() answered: its slot or entry freed. */
static __always_inline void call_forget(struct walk *w, __u32 xid, int slot)
{
	struct wire_conn *conn = w->conn;
	struct wire_flow key;

	if (slot >= 0) {
		__u32 bit = 1u << (slot & (WIRE_INLINE_CALLS - 1));

		if (conn->inline_moved & bit)
			add_atomic(&conn->inline_moved, -bit);
		add_atomic(&conn->inline_used, -bit);
		return;
	}
	key = *w->flow;
	key.xid = xid;
	if (bpf_map_delete_elem(&wire_pending, &key) == 0)
		add_atomic(&conn->npending, -1);
}

/* Gathers up to `want` bytes into st->buf; 1 once all are there. */
static __always_inline int gather(struct walk *w, __u32 want)
{
	struct wire_stream *st = w->st;
	__u32 have = st->have & 31, n = want - have, left = w->end - w->pos;

	if (want > 32 || have >= want)
		return have >= want;
	if (n > left)
		n = left;
	n &= 31;
	if (n == 0)
		return 0;
	/* unchanged (1..31), but 1..32 whatever the verifier knows of n: Linux before 6.2
	 * refuses a length that may be 0 */
	barrier_var(n);
	n = ((n - 1) & 31) + 1;
	if (bpf_skb_load_bytes(w->skb, w->pos, &st->buf[have], n)) {
		w->pos = w->end;
		return 0;
	}
	w->pos += n;
	st->have = have + n;
	return have + n >= want;
}

/* A call's RPC header h (WIRE_HEADER_BYTES) was read: the call remembered until its reply. */
static __always_inline void call_header(struct walk *w, const __u8 *h, int loop)
{
	struct wire_stream *st = w->st;
	struct wire_conn *conn = w->conn;
	struct wire_call c = {}, *old;
	struct wire_flow key;
	int rc = parse_call(h, &c), slot, moved;

	st->in_call = 0;
	if (rc < 0) {
		lose_sync(w);
		return;
	}
	if (rc == 0) {
		count(WIRE_FOREIGN);
		return;
	}
	count(WIRE_CALLS);
	if (c.op == WIRE_OP_V4 && st->want == WIRE_HEADER_BYTES) /* a COMPOUND: its main op */
	{
		__u32 end = w->end - w->pos < st->frag_left ? w->end : w->pos + st->frag_left;

		c.op = loop != LOOP_BPF ? nfs4_main_op_bounded(w->skb, w->pos, end) : nfs4_main_op(w->skb, w->pos, end);
	}
	st->xid = be32(h);
	c.xid = st->xid;
	c.start_ns = w->now;
	c.bytes = st->rec_bytes;
	old = call_find(w, st->xid, &slot);
	if (old) { /* the same xid again on this connection: a retransmission */
		*old = c;
		st->in_call = 1;
		return;
	}
	slot = st->xid & (WIRE_INLINE_CALLS - 1);
	moved = 0;
	if (conn->inline_used & (1u << slot)) { /* taken: the first free slot, if any */
		slot = -1;
		for (int j = 0; j < WIRE_INLINE_CALLS; j++) {
			if (!(conn->inline_used & (1u << j))) {
				slot = j;
				moved = 1;
				break;
			}
		}
	}
	if (slot >= 0) {
		__u32 bit = 1u << (slot & (WIRE_INLINE_CALLS - 1));

		conn->calls[slot & (WIRE_INLINE_CALLS - 1)] = c;
		if (moved)
			add_atomic(&conn->inline_moved, bit);
		add_atomic(&conn->inline_used, bit);
		st->in_call = 1;
		return;
	}
	if (conn->npending >= WIRE_PENDING_PER_FLOW) {
		count(WIRE_PENDING_FULL);
		return;
	}
	key = *w->flow;
	key.xid = st->xid;
	if (bpf_map_update_elem(&wire_pending, &key, &c, BPF_NOEXIST) == 0) {
		add_atomic(&conn->npending, 1);
		st->in_call = 1;
	}
}

/* A reply's RPC header h (st->want bytes) was read: its call found, the operation
 * counted (or, for a reply in several fragments, kept in st->done until its last). */
static __always_inline void reply_header(struct walk *w, const __u8 *h, int loop)
{
	struct wire_stream *st = w->st;
	__u32 status = 0, xid = be32(h);
	struct wire_call *c;
	int slot;

	st->done.valid = 0;
	c = call_find(w, xid, &slot);
	if (parse_reply(h, st->want, c ? c->has_status : 0, &status) < 0) {
		lose_sync(w);
		return;
	}
	if (!c) {
		count(WIRE_UNMATCHED);
		return;
	}
	st->done.latency_ns = w->now > c->start_ns ? w->now - c->start_ns : 0;
	st->done.bytes = c->bytes + st->rec_bytes;
	st->done.op = c->op;
	st->done.version = c->version;
	st->done.status = status;
	st->done.valid = 1;
	call_forget(w, xid, slot);
	if (st->last_frag) {
		emit_op(w, &st->done, loop);
		st->done.valid = 0;
	}
}

/* A record marker m was read: the fragment that follows. */
static __always_inline void marker(struct walk *w, __u32 m, int loop)
{
	struct wire_stream *st = w->st;
	__u32 len = m & 0x7fffffff;

	st->have = 0;
	if (len > WIRE_FRAGMENT_MAX || (st->rec_start && len < 16)) {
		lose_sync(w);
		return;
	}
	st->last_frag = m >> 31;
	st->frag_left = len;
	if (st->rec_start) {
		st->rec_start = 0;
		st->rec_bytes = len + 4;
		st->want = len < WIRE_HEADER_BYTES ? len : WIRE_HEADER_BYTES;
		st->phase = PH_HEADER;
		return;
	}
	st->phase = PH_BODY;
	if (w->dir == DIR_CALL && st->in_call) {
		int slot;
		struct wire_call *c = call_find(w, st->xid, &slot);

		if (c)
			c->bytes += (__u64)len + 4;
	} else if (w->dir == DIR_REPLY && st->done.valid) {
		st->done.bytes += (__u64)len + 4;
		if (st->last_frag) {
			emit_op(w, &st->done, loop);
			st->done.valid = 0;
		}
	}
}

/* A record's header h is complete: the call or reply it starts. */
static __always_inline void header(struct walk *w, const __u8 *h, int loop)
{
	w->st->have = 0;
	w->st->phase = PH_BODY;
	if (w->dir == DIR_CALL)
		call_header(w, h, loop);
	else
		reply_header(w, h, loop);
}

/* The fragment's body in this packet, skipped (never read). */
static __always_inline void body(struct walk *w)
{
	struct wire_stream *st = w->st;
	__u32 n = w->end - w->pos;

	if (n > st->frag_left)
		n = st->frag_left;
	w->pos += n;
	st->frag_left -= n;
	if (st->frag_left == 0) {
		st->phase = PH_MARKER;
		st->have = 0;
		if (st->last_frag)
			st->rec_start = 1;
	}
}

/* One step of the state machine; 1 to stop. */
static __always_inline long walk_step(struct walk *w, int loop)
{
	struct wire_stream *st = w->st;
	__u32 n;
	int done;

	if (w->pos >= w->end || w->lost)
		return 1;
	switch (st->phase) {
	case PH_MARKER:
		if (gather(w, 4))
			marker(w, be32(st->buf), loop);
		return 0;
	case PH_HEADER:
		n = w->pos;
		done = gather(w, st->want);
		st->frag_left -= w->pos - n;
		if (done)
			header(w, st->buf, loop);
		return 0;
	case PH_BODY:
		body(w);
		return 0;
	default:
		return 1;
	}
}

/* The 4 + WIRE_HEADER_BYTES bytes at skb offset pos copied to b (8-byte aligned); 0 once
 * copied. With in_place, read in place where the skb's linear part holds them (a small
 * packet received, BPF_PROG_TEST_RUN's frames), without a helper call; else (payload in
 * page fragments, as TCP sends it) through bpf_skb_load_bytes. */
static __always_inline int load_record_start(struct __sk_buff *skb, __u32 pos, __u8 *b, int in_place)
{
	__u8 *data = (__u8 *)(long)skb->data, *data_end = (__u8 *)(long)skb->data_end;
	const __u64 *p;

	_Static_assert((4 + WIRE_HEADER_BYTES) % 8 == 0, "copied in words");
	if (in_place && pos < 0x8000) { /* the verifier bounds a packet pointer's offset below 64 KiB */
		p = (const __u64 *)(data + (pos & 0x7fff));
		if ((__u8 *)p + 4 + WIRE_HEADER_BYTES <= data_end) {
			for (int i = 0; i < (4 + WIRE_HEADER_BYTES) / 8; i++)
				((__u64 *)b)[i] = p[i];
			return 0;
		}
	}
	return bpf_skb_load_bytes(skb, pos, b, 4 + WIRE_HEADER_BYTES);
}

/* The common case in one go: a record that starts at w->pos, whose marker and whole
 * header the packet holds (one copy of both) and, mostly, the rest of the record. The
 * walk goes on in walk_step() only for what is left after the record's first fragment.
 * in_place: the copy may read the packet in place. Not in the bpf_loop callback: there
 * the branch takes the verifier past its 8192 pending branches, and a packet's later
 * records mostly lie beyond its linear part (a global function reading in place made
 * them dearer where the payload is in page fragments). */
static __always_inline void record_inline(struct walk *w, int loop, int in_place)
{
	struct wire_stream *st = w->st;
	__u8 *b = st->buf;

	if (st->phase != PH_MARKER || !st->rec_start || st->have || w->end - w->pos < 4 + WIRE_HEADER_BYTES)
		return;
	if (load_record_start(w->skb, w->pos, b, in_place))
		return;
	w->pos += 4;
	marker(w, be32(b), loop);
	if (st->phase != PH_HEADER || st->want != WIRE_HEADER_BYTES)
		return; /* lost, or a fragment shorter than a header: walk_step() reads it */
	w->pos += WIRE_HEADER_BYTES;
	st->frag_left -= WIRE_HEADER_BYTES;
	header(w, b + 4, loop);
	if (!w->lost)
		body(w);
}

/* A step of the bpf_loop walk: as the bounded one (walk_step_bounded), a record that
 * starts here and whose header this packet holds at once, else one step. */
static long walk_step_cb(__u32 i, void *ctx)
{
	struct walk *w = ctx;
	__u32 pos = w->pos;

	record_inline(w, LOOP_BPF, 0);
	if (w->pos == pos)
		return walk_step(w, LOOP_BPF);
	return w->pos >= w->end || w->lost; /* the packet's last record: no step more */
}

/* The bounded programs' walk in progress (per CPU): the walk's scalars, and what finds
 * its pointers again (a global function before Linux 5.12 takes no pointer but the
 * context). */
struct walk_state {
	struct wire_flow flow; /* the connection's key */
	__u64 now;
	__u32 pos, end, dir, lost;
	__u32 scratch;         /* the stream walked is wire_new_conn's (hole_fill), not the connection's */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk_state);
} wire_walk_state SEC(".maps");

/* One step of the walk in wire_walk_state: WALK_STOP, and WALK_EMITTED when it counted
 * operations (wire_step_ops) that the caller aggregates. A global function: the
 * verifier checks the step once, whatever the loop that calls it. */
enum { WALK_STOP = 1, WALK_EMITTED = 2 };

__noinline int walk_step_bounded(struct __sk_buff *skb)
{
	struct walk w = { .skb = skb };
	struct walk_state *s;
	struct wire_conn *scratch;
	__u32 zero = 0;
	long stop = 0;

	s = bpf_map_lookup_elem(&wire_walk_state, &zero);
	if (!s || s->pos >= s->end || s->lost)
		return WALK_STOP;
	w.conn = bpf_map_lookup_elem(&wire_conns, &s->flow);
	if (!w.conn)
		return WALK_STOP;
	if (s->scratch) {
		scratch = bpf_map_lookup_elem(&wire_new_conn, &zero);
		if (!scratch)
			return WALK_STOP;
		w.st = &scratch->dir[0];
	} else {
		w.st = &w.conn->dir[s->dir & 1];
	}
	w.flow = &s->flow;
	w.pos = s->pos;
	w.end = s->end;
	w.now = s->now;
	w.lost = s->lost;
	w.dir = s->dir;
	/* records that start here and whose header this packet holds: each at once, in one
	 * copy; else one step of the state machine */
	for (int k = 0; k < WIRE_STEP_RECORDS; k++) {
		__u32 pos = w.pos;

		record_inline(&w, LOOP_BOUNDED, 1);
		if (w.pos == pos) {
			stop = walk_step(&w, LOOP_BOUNDED);
			break;
		}
		stop = w.pos >= w.end || w.lost;
		if (stop)
			break;
	}
	s->pos = w.pos;
	s->lost = w.lost;
	return (stop ? WALK_STOP : 0) | (w.emitted ? WALK_EMITTED : 0);
}

/* The operations a step left (rc: walk_step_bounded's) aggregated; rc. A global function,
 * so that the loop over the steps branches once per step: the verifier follows at most
 * 8192 branches in a row. */
__noinline int walk_step_aggregate(int rc)
{
	struct wire_step_ops *ops;
	struct walk_state *s;
	__u32 zero = 0;

	if (!(rc & WALK_EMITTED))
		return rc;
	ops = bpf_map_lookup_elem(&wire_step_ops, &zero);
	s = bpf_map_lookup_elem(&wire_walk_state, &zero);
	if (!ops || !s)
		return rc;
	for (__u32 i = 0; i < WIRE_STEP_RECORDS; i++) {
		struct agg_event *ev;

		if (i >= ops->n)
			break;
		ev = emit_event(&s->flow, &ops->done[i], s->now, LOOP_BOUNDED);
		if (ev)
			agg_slots_run(ev, 0);
	}
	ops->n = 0;
	return rc;
}

/* The walk in wire_walk_state, up to WIRE_STEPS_MAX steps. A global function: the
 * verifier checks the loop once, not once per place that walks. */
__noinline int walk_steps_bounded(struct __sk_buff *skb)
{
	for (__u32 i = 0; i < WIRE_STEPS_MAX; i++)
		if (walk_step_aggregate(walk_step_bounded(skb)) & WALK_STOP)
			break;
	return 0;
}

/* Walks w (whose stream is wire_new_conn's if scratch) up to WIRE_STEPS_MAX steps. */
static __always_inline void walk_steps(struct walk *w, int scratch, int loop)
{
	struct walk_state *s;
	__u32 zero = 0;

	if (loop == LOOP_BPF) {
		bpf_loop(WIRE_STEPS_MAX, walk_step_cb, w, 0);
		return;
	}
	s = bpf_map_lookup_elem(&wire_walk_state, &zero);
	if (!s)
		return;
	s->flow = *w->flow;
	s->now = w->now;
	s->pos = w->pos;
	s->end = w->end;
	s->dir = w->dir;
	s->lost = w->lost;
	s->scratch = scratch;
	walk_steps_bounded(w->skb);
	w->pos = s->pos;
	w->lost = s->lost;
}

/* Walks the packet's payload from w->pos to w->end. */
static __always_inline void walk(struct walk *w, int loop)
{
	if (loop == LOOP_BPF)
		record_inline(w, loop, 1); /* each of the bounded walk's steps begins with it */
	if (w->pos < w->end && !w->lost)
		walk_steps(w, 0, loop);
}

/* --- resync: a packet that starts with a plausible record --- */

static __always_inline int plausible(struct walk *w)
{
	struct wire_stream *st = w->st;
	__u8 *h = st->buf;
	struct wire_call c = {};
	__u32 len;

	if (w->end - w->pos < 4 + 24 ||
	    bpf_skb_load_bytes(w->skb, w->pos, h, 4 + 24))
		return 0;
	len = be32(h) & 0x7fffffff;
	if (len < 24 || len > WIRE_FRAGMENT_MAX)
		return 0;
	if (w->dir == DIR_CALL)
		return len >= 40 && parse_call(h + 4, &c) == 1;
	{
		int slot;

		return be32(h + 8) == 1 && call_find(w, be32(h + 4), &slot) != NULL;
	}
}

/* --- packets --- */

enum { HOOK_EGRESS = 0, HOOK_INGRESS, HOOK_LOOPBACK };

struct pkt {
	struct wire_flow flow; /* the connection's key */
	__u32 seq, payload, end;
	__u8 flags;
	__u8 either;           /* on loopback, between two followed ports: a call or a reply */
};

/* Bytes before the IP header on an interface (set by userspace): l2 + 1 per ifindex
 * below WIRE_L2_TABLE, 0 for unknown (Ethernet's 14); larger ifindexes in wire_l2len. */
__u8 wire_l2_table[WIRE_L2_TABLE];

static __always_inline __u32 l2_length(__u32 ifindex)
{
	__u32 *l2;
	__u8 v;

	if (ifindex < WIRE_L2_TABLE) {
		v = wire_l2_table[ifindex];
		return v ? (__u32)(v - 1) : 14;
	}
	l2 = bpf_map_lookup_elem(&wire_l2len, &ifindex);
	return l2 ? *l2 & 0xff : 14;
}

static __always_inline int port_followed(__u16 port)
{
	return wire_port_bits[(port >> 3) & 8191] & (1u << (port & 7));
}

/* Fills p from the IPv4/IPv6 + TCP headers, read in place (no copy, no map lookup);
 * its direction (DIR_*) if this is a server's TCP packet worth walking: data, or SYN /
 * FIN / RST; -1 otherwise. Pure ACKs, other protocols and other ports leave here after
 * a few loads. hook: HOOK_INGRESS
 * (calls), HOOK_EGRESS (replies), or HOOK_LOOPBACK (either, told by the port). */
static __always_inline int parse_packet(struct __sk_buff *skb, int hook, struct pkt *p)
{
	__u32 off = l2_length(skb->ifindex), iplen, tcpoff, ihl;
	void *data = (void *)(long)skb->data, *data_end = (void *)(long)skb->data_end;
	__u8 *ip, *tcp, *src, *dst;
	__u16 sport, dport, server;
	int v4 = skb->protocol == bpf_htons(ETH_P_IP), ingress;

	if (!v4 && skb->protocol != bpf_htons(ETH_P_IPV6))
		return -1;
	ip = off ? data + 14 : data;
	if (off != 0 && off != 14)
		return -1;
	if (ip + (v4 ? 40 : 60) > (__u8 *)data_end && skb->len > (__u32)(data_end - data)) {
		/* the headers not in the linear part (rare: the payload usually is not, and
		 * pulling it would copy a cloned skb's head) */
		if (bpf_skb_pull_data(skb, skb->len < off + 100 ? skb->len : off + 100))
			return -1;
		data = (void *)(long)skb->data;
		data_end = (void *)(long)skb->data_end;
		ip = off ? data + 14 : data;
	}
	if (v4) {
		if (ip + 20 > (__u8 *)data_end || (ip[0] >> 4) != 4 || ip[9] != PROTO_TCP ||
		    (ip[6] & 0x3f) || ip[7]) /* fragments are not followed */
			return -1;
		ihl = (ip[0] & 0xf) * 4;
		iplen = (__u32)ip[2] << 8 | ip[3];
		src = ip + 12;
		dst = ip + 16;
	} else {
		if (ip + 40 > (__u8 *)data_end || ip[6] != PROTO_TCP) /* extension headers: not followed */
			return -1;
		ihl = 40;
		iplen = ((__u32)ip[4] << 8 | ip[5]) + 40;
		src = ip + 8;
		dst = ip + 24;
	}
	if (ihl < 20)
		return -1;
	tcp = ip + (ihl & 0x3c);
	if (tcp + 20 > (__u8 *)data_end)
		return -1;
	sport = (__u16)tcp[0] << 8 | tcp[1];
	dport = (__u16)tcp[2] << 8 | tcp[3];
	if (hook == HOOK_LOOPBACK)
		ingress = port_followed(dport) ? 1 : 0;
	else
		ingress = hook == HOOK_INGRESS;
	server = ingress ? dport : sport;
	if (!port_followed(server))
		return -1;
	tcpoff = off + ihl;
	p->flags = tcp[13];
	p->payload = tcpoff + (tcp[12] >> 4) * 4;
	p->end = iplen > (v4 ? 0 : 40) ? off + iplen : skb->len; /* 0: a GSO packet larger than 64 KiB */
	if (p->end > skb->len)
		p->end = skb->len;
	if (p->end <= p->payload && !(p->flags & (TCP_SYN | TCP_FIN | TCP_RST)))
		return -1; /* a pure ACK: nothing to walk */
	if (v4) {
		__builtin_memset(&p->flow, 0, 32);
		p->flow.client[10] = p->flow.client[11] = 0xff;
		p->flow.server[10] = p->flow.server[11] = 0xff;
		__builtin_memcpy(&p->flow.client[12], ingress ? src : dst, 4);
		__builtin_memcpy(&p->flow.server[12], ingress ? dst : src, 4);
	} else {
		__builtin_memcpy(p->flow.client, ingress ? src : dst, 16);
		__builtin_memcpy(p->flow.server, ingress ? dst : src, 16);
	}
	p->flow.cport = ingress ? sport : dport;
	p->flow.sport = server;
	p->flow.xid = 0;
	p->seq = be32(tcp + 4);
	p->either = hook == HOOK_LOOPBACK && ingress && port_followed(sport);
	return ingress ? DIR_CALL : DIR_REPLY;
}

/* The packet's connection state, looked up (NULL if none). On loopback, a packet between
 * two followed ports (a client whose port number is also a server's) reads either way:
 * a SYN without ACK is a call and a SYN-ACK a reply; other packets belong to the
 * connection that exists, as a call when neither does (*dir, p->flow set to match). */
static __always_inline struct wire_conn *conn_lookup(struct pkt *p, int *dir)
{
	struct wire_flow r = {};
	struct wire_conn *conn;

	if (!p->either || ((p->flags & TCP_SYN) && !(p->flags & TCP_ACK)))
		return bpf_map_lookup_elem(&wire_conns, &p->flow);
	if (!(p->flags & TCP_SYN)) {
		conn = bpf_map_lookup_elem(&wire_conns, &p->flow);
		if (conn)
			return conn;
	}
	__builtin_memcpy(r.client, p->flow.server, 16);
	__builtin_memcpy(r.server, p->flow.client, 16);
	r.cport = p->flow.sport;
	r.sport = p->flow.cport;
	conn = bpf_map_lookup_elem(&wire_conns, &r);
	if (!(p->flags & TCP_SYN) && !conn)
		return NULL;
	p->flow = r;
	*dir = DIR_REPLY;
	return conn;
}

/* The packet's connection (conn, as looked up) with its direction's stream followed:
 * the connection created for a SYN or a mid-stream packet with data, the direction
 * (re)started by its SYN (in sync; the client's SYN also forgets the calls pending) or
 * by a packet with data (not yet in sync). NULL for anything else without state (the
 * last ACK after a FIN); an RST gets its connection whatever the direction's state. */
static __always_inline struct wire_conn *conn_get(struct pkt *p, int dir, struct wire_conn *conn)
{
	int syn = p->flags & TCP_SYN;
	struct wire_stream *st;
	__u32 zero = 0;

	if (conn && (p->flags & TCP_RST))
		return conn;
	if (conn && !syn && conn->dir[dir & 1].open)
		return conn;
	if (!syn && (p->end <= p->payload || (p->flags & (TCP_RST | TCP_FIN))))
		return NULL;
	if (!conn) {
		struct wire_conn *fresh = bpf_map_lookup_elem(&wire_new_conn, &zero);

		if (!fresh)
			return NULL;
		bpf_map_update_elem(&wire_conns, &p->flow, fresh, BPF_NOEXIST);
		conn = bpf_map_lookup_elem(&wire_conns, &p->flow);
		if (!conn)
			return NULL;
	}
	st = &conn->dir[dir & 1];
	__builtin_memset(st, 0, sizeof(*st));
	st->open = 1;
	if (syn) { /* a new connection (or a reused port): in sync from the start */
		st->phase = PH_MARKER;
		st->rec_start = 1;
		st->next_seq = p->seq + 1;
		if (dir == DIR_CALL) {
			conn->inline_used = 0;
			conn->inline_moved = 0;
			conn->npending = 0;
		}
	} else {
		st->phase = PH_UNSYNCED;
		st->next_seq = p->seq;
		count(WIRE_JOINED);
	}
	return conn;
}

/* A FIN ends its direction's stream; the connection's state goes with the last. */
static __always_inline void stream_end(struct wire_conn *conn, struct pkt *p, int dir)
{
	conn->dir[dir & 1].open = 0;
	if (!conn->dir[(dir & 1) ^ 1].open)
		bpf_map_delete_elem(&wire_conns, &p->flow);
}

/* A segment ahead of the stream: bytes missing inside a record's body are skipped
 * (the body is never parsed); otherwise the segment is walked at once if the stream
 * sits at a record boundary, the gap is small and the segment starts with a plausible
 * record, leaving a hole for the late segment. */
static __always_inline int hole_open(struct walk *w, __u32 seq)
{
	struct wire_stream *st = w->st;
	__u32 gap = seq - st->next_seq;

	if (st->phase == PH_BODY && gap <= st->frag_left) {
		st->frag_left -= gap;
		return 1;
	}
	if (st->has_hole || st->phase != PH_MARKER || !st->rec_start || st->have || gap > WIRE_HOLE_MAX ||
	    !plausible(w))
		return 0;
	st->has_hole = 1;
	st->hole_seq = st->next_seq;
	st->hole_end = seq;
	return 1;
}

/* The late segment at the start of the hole: walked with a fresh state up to the hole's
 * end; it must end on a record boundary, else the rest of the hole is given up. */
static __always_inline void hole_fill(struct walk *w, __u32 seq, __u32 len, int loop)
{
	struct wire_stream *st = w->st, *tmp;
	struct wire_conn *scratch;
	__u32 zero = 0, room = st->hole_end - seq, walked;
	int whole;

	scratch = bpf_map_lookup_elem(&wire_new_conn, &zero);
	if (!scratch)
		return;
	tmp = &scratch->dir[0];
	if (len > room)
		w->end = w->pos + room; /* a retransmission spanning the hole: the rest was walked */
	w->st = tmp;
	whole = plausible(w);
	if (whole) {
		tmp->phase = PH_MARKER;
		tmp->rec_start = 1;
		tmp->have = 0;
		walk_steps(w, 1, loop);
		whole = !w->lost && w->pos >= w->end && tmp->phase == PH_MARKER && tmp->rec_start && !tmp->have;
	}
	__builtin_memset(tmp, 0, sizeof(*tmp));
	w->st = st;
	walked = len > room ? room : len;
	if (whole && walked < room) {
		st->hole_seq = seq + walked;
		return;
	}
	st->has_hole = 0;
	if (!whole)
		count(WIRE_DESYNCS);
}

static __always_inline int on_packet(struct __sk_buff *skb, int hook, int loop)
{
	struct pkt p;
	struct wire_conn *conn;
	struct wire_stream *st;
	struct walk w = { .skb = skb };
	__u32 len, skip = 0;
	int dir = parse_packet(skb, hook, &p);

	if (dir < 0)
		return TC_ACT_UNSPEC;
	conn = conn_lookup(&p, &dir);
	conn = conn_get(&p, dir, conn);
	if (!conn)
		return TC_ACT_UNSPEC;
	if (p.flags & TCP_RST) { /* either side's: the connection is over */
		bpf_map_delete_elem(&wire_conns, &p.flow);
		return TC_ACT_UNSPEC;
	}
	st = &conn->dir[dir & 1];
	len = p.end > p.payload ? p.end - p.payload : 0;
	if (len == 0)
		goto done;
	if (p.flags & TCP_SYN)
		p.seq++; /* data on a SYN (TCP fast open) follows the SYN's sequence number */
	w.st = st;
	w.conn = conn;
	w.flow = &p.flow;
	w.dir = dir;
	w.pos = p.payload;
	w.end = p.end;
	if (st->phase == PH_BODY && p.seq == st->next_seq && len <= st->frag_left) {
		/* in sequence, within a fragment's body (a large record's later segments):
		 * nothing to read, the clock neither */
		body(&w);
		goto advance;
	}
	w.now = bpf_ktime_get_ns(); /* CLOCK_MONOTONIC: the interval boundaries' clock (emit_event) */
	if (st->phase != PH_UNSYNCED) {
		__s32 ahead = (__s32)(p.seq - st->next_seq);

		if (ahead > 0 && !hole_open(&w, p.seq)) { /* bytes we never saw */
			st->phase = PH_UNSYNCED;
			st->has_hole = 0;
			count(WIRE_DESYNCS);
		} else if (ahead < 0) {
			if (st->has_hole && p.seq == st->hole_seq) { /* a reordered segment, late */
				hole_fill(&w, p.seq, len, loop);
				goto done;
			}
			if ((__u32)-ahead >= len) /* a retransmission: walk only what is new */
				goto done;
			skip = (__u32)-ahead;
			w.pos += skip;
		}
	}
	if (st->phase == PH_UNSYNCED) {
		if (skip || !plausible(&w))
			goto advance;
		st->phase = PH_MARKER;
		st->rec_start = 1;
		st->have = 0;
		st->in_call = 0;
		st->done.valid = 0;
		st->has_hole = 0;
		count(WIRE_RESYNCS);
	}
	walk(&w, loop);
	if (w.pos < w.end && !w.lost) /* more records in one packet than the walk allows */
		lose_sync(&w);
advance:
	st->next_seq = p.seq + len;
done:
	if (p.flags & TCP_FIN)
		stream_end(conn, &p, dir);
	return TC_ACT_UNSPEC;
}

/* The programs: the bpf_loop trio, then the bounded one. */
SEC("tc")
int wire_ingress(struct __sk_buff *skb)
{
	return on_packet(skb, HOOK_INGRESS, LOOP_BPF);
}

SEC("tc")
int wire_egress(struct __sk_buff *skb)
{
	return on_packet(skb, HOOK_EGRESS, LOOP_BPF);
}

/* Loopback carries every packet twice, out (egress) and back in (ingress): one hook,
 * egress, sees both directions once, in the order the sockets sent them (the backlog
 * of each CPU can reorder a flow's segments at ingress). A packet to a server port
 * is a call, one from a server port a reply. */
SEC("tc")
int wire_loopback(struct __sk_buff *skb)
{
	return on_packet(skb, HOOK_LOOPBACK, LOOP_BPF);
}

SEC("tc")
int wire_ingress_bounded(struct __sk_buff *skb)
{
	return on_packet(skb, HOOK_INGRESS, LOOP_BOUNDED);
}

SEC("tc")
int wire_egress_bounded(struct __sk_buff *skb)
{
	return on_packet(skb, HOOK_EGRESS, LOOP_BOUNDED);
}

SEC("tc")
int wire_loopback_bounded(struct __sk_buff *skb)
{
	return on_packet(skb, HOOK_LOOPBACK, LOOP_BOUNDED);
}
