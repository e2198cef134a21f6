/* wire_rpc.h — the contract between bpf/wire.bpf.c (ONC RPC over TCP, followed by TC
 * clsact programs) and the collector's wire layer: map bounds, the counters the
 * program keeps about the streams it follows, and the key bytes of its dimensions.
 *
 * Key bytes (AGG_KEY_BYTES = 16) of the wire dimensions:
 * - op:      as nfs.ops: (MOUNT ? 0x10000 : 0) | procedure for NFSv3 and MOUNT;
 *            NFSv4: null is 0; a COMPOUND counts as its main op (bpf/wire_nfs4.h):
 *            the NFSv3 key of a v4 op that means the same procedure, else
 *            WIRE_OP_V4 | opcode; WIRE_OP_V4 alone ("compound") when the ops
 *            could not be read.
 * - version: __u32 (MOUNT ? 0x10000 : 0) | program version ("nfs3", "mount3").
 * - status:  __u32: the NFS / MOUNT status word of an accepted, successful call
 *            (0 = ok; procedures without one count as ok), WIRE_STATUS_RPC |
 *            accept_stat for RPC-level errors, WIRE_STATUS_DENIED | reject_stat.
 * - client:  IPv6 address, IPv4 as ::ffff:a.b.c.d (as nfs.*).
 * - server:  IPv4: the mapped address ::ffff:a.b.c.d with the server port (big
 *            endian) in bytes 0-1, which the mapped form leaves zero. IPv6: the
 *            16 address bytes only; an IPv6 server's ports share one key (there is
 *            no room left for the port, and hashing would make keys unreadable).
 */
#ifndef STRATA_WIRE_RPC_H
#define STRATA_WIRE_RPC_H

#define WIRE_PORTS_MAX        64      /* --wire-port options */
#define WIRE_IFACES_MAX       1024    /* interfaces with an L2 header length set */
#define WIRE_L2_TABLE         4096    /* ifindexes whose L2 length is a table load, not a lookup */
#define WIRE_CONNS_MAX        16384   /* TCP connections followed: both directions' streams (LRU) */
#define WIRE_PENDING_MAX      65536   /* calls awaiting their reply (LRU) */
#define WIRE_INLINE_CALLS     16      /* calls awaiting a reply kept in their connection's state (a power of two, at most 32) */
#define WIRE_PENDING_PER_FLOW 4096    /* more calls awaiting a reply on one connection (wire_pending) */
#define WIRE_STEPS_MAX        4096    /* parser steps per packet (3 per record) */
#define WIRE_FRAGMENT_MAX     (64u << 20) /* a larger record marker is garbage */
#define WIRE_HEADER_BYTES     28      /* RPC header bytes read after a record marker */
#define WIRE_HOLE_MAX         (1u << 20) /* the largest reordering gap bridged */

#define WIRE_PROG_NFS   100003
#define WIRE_PROG_MOUNT 100005

#define WIRE_OP_MOUNT 0x10000u
#define WIRE_OP_V4    0x40000u
#define WIRE_STATUS_RPC    0x10000u
#define WIRE_STATUS_DENIED 0x20000u

/* Indexes of the per-CPU wire_counters array. */
enum wire_counter {
	WIRE_CALLS = 0,     /* call headers parsed */
	WIRE_REPLIES,       /* replies matched to their call (operations counted) */
	WIRE_JOINED,        /* streams first seen without their SYN (collector started mid-stream) */
	WIRE_DESYNCS,       /* streams that lost the record boundaries: a gap in sequence numbers,
	                       an implausible record marker or header, too many records in one packet */
	WIRE_RESYNCS,       /* streams that found a plausible call (or a pending reply) again */
	WIRE_UNMATCHED,     /* replies with no pending call (call not seen, or evicted) */
	WIRE_FOREIGN,       /* well-framed calls of other RPC programs or versions (skipped) */
	WIRE_PENDING_FULL,  /* calls not followed: their connection had too many unanswered */
	WIRE_COUNTERS
};

#endif
