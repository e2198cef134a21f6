/* strata_probes.h — the engine's USDT probes and the argument structs bpf/ reads.
 *
 * This header is the single source of truth for probe layouts (DESIGN.md,
 * "Probes"). It compiles in three places:
 *   - the engine (userspace C): defines the probe macros, with semaphores, so an
 *     unobserved probe costs one predictable branch;
 *   - the BPF programs in bpf/ (after vmlinux.h): only the structs and constants;
 *   - collectors/ and tests: the structs and constants.
 *
 * Provider name: "strata".  Probes:
 *   nfs_ops(struct strata_nfs_batch *)    a batch of 1..STRATA_NFS_BATCH completed
 *                                         NFS/MOUNT operations (see below)
 *   nfs_keys(struct strata_nfs_batch *)   the same batch, for readers of its counting
 *                                         keys alone (see below)
 *   vdev_io_done(struct strata_vdev_io *)  after a vdev pread/pwrite/fdatasync
 *   l2arc_read(struct strata_tier_io *)    after an L2ARC device read
 *   l2arc_write(struct strata_tier_io *)   after an L2ARC feed write
 *   zil_commit(struct strata_tier_io *)    after a ZIL commit is durable
 * Every struct starts with start_ns (CLOCK_MONOTONIC, the clock
 * bpf_ktime_get_ns() reads); the probe fires at completion, so
 * latency = now - start_ns, except where latency_ns or end_ns is given explicitly.
 *
 * Why nfs_ops is batched: a uprobe hit costs a trap, about 0.6 us on the VMs this is
 * built on, against about 0.1 us of BPF per operation (bench/collect_probe.sh). At
 * 70k ops/s on two cores one trap per operation alone is 2 % of the machine. So the
 * worker threads collect their completed operations in one shared batch, and the event
 * loop those it ran itself in its own (engine/net.c), each with its own start and end
 * time, and fire once per batch: when the batch is full, or when it comes due,
 * STRATA_NFS_EDGE_NS before the end of the wall-clock second its first operation ended
 * in (an operation that ends later than that starts the next second's batch); an idle
 * worker, or the loop, wakes up for that, the loop also when every worker is busy; a
 * stopping engine fires what is left. So an operation is counted in the second it ended
 * in (a collector's intervals are whole wall-clock seconds, bpf/aggregate.h), unless it
 * ended in the last STRATA_NFS_EDGE_NS of it or its batch fired late, and a busy engine
 * pays the trap once per up to STRATA_NFS_BATCH operations.
 * Why 2048 and the second's edge: a hit between the engine's own work runs cold, about
 * 17 us for its trap and BPF against 0.8 us in a tight loop. At 20,000 ops/s batches of
 * 256 fired 15 ms after their first operation cost 69 ns an operation in hits (27 of them
 * BPF); batches of up to 2048 fill in about 100 ms and cost 16-18 ns (10 of them BPF), by
 * the engine's clock across its hits (bench/collect_engine.sh). A reader copies the
 * operations STRATA_NFS_CHUNK at a time, a per-CPU map value holding at most 32 KiB
 * (bpf/nfs.bpf.c), and the keys whole.
 * Why two probes on one batch: most datasets of operations count them by procedure or
 * tier (nfs.ops[op]), which needs 4 bytes of each, its counting key. A batch fires
 * nfs_keys for the readers of keys and nfs_ops for the readers of whole operations
 * (bpf/nfs_readers.h says which a dataset is), each while someone listens; and while no
 * one listens to nfs_ops the engine puts each operation's key alone: 8 KiB a batch that
 * stays in the cache, against 136 KiB written cold (the engine's own part of nfs.ops[op]
 * fell from +99..+277 ns an operation to -3 [-90, +87], bench/collect_engine.sh "sem").
 * An operation put while nfs_ops had no reader has no record in ops[] (those before
 * ops_from): a reader of operations that has just attached counts from there on.
 */
#ifndef STRATA_PROBES_H
#define STRATA_PROBES_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* Tiers that served an operation (bitmask in strata_nfs_op.tiers). */
#define STRATA_TIER_ARC   0x01 /* DRAM cache */
#define STRATA_TIER_L2ARC 0x02 /* flash read cache */
#define STRATA_TIER_POOL  0x04 /* pool vdevs (disks) */
#define STRATA_TIER_ZIL   0x08 /* intent log (sync writes, COMMIT) */
#define STRATA_TIER_DIRTY 0x10 /* served from not-yet-synced dirty data */

/* Program numbers carried in strata_nfs_op.prog. */
#define STRATA_PROG_NFS   100003
#define STRATA_PROG_MOUNT 100005

struct strata_nfs_op {
	__u64 start_ns;   /* request decoded (CLOCK_MONOTONIC ns) */
	__u64 end_ns;     /* reply handed to the socket (read just before its send) */
	__u64 file_id;    /* object id of the file handle operated on (0: none) */
	__u32 bytes;      /* payload bytes read or written (0 for metadata ops) */
	__u32 status;     /* nfsstat3 of the reply (0 = NFS3_OK) */
	__u32 prog;       /* STRATA_PROG_NFS or STRATA_PROG_MOUNT */
	__u16 proc;       /* procedure number (NFSv3: 0..21) */
	__u8  tiers;      /* STRATA_TIER_* bitmask of what served it */
	__u8  family;     /* 2 = AF_INET (client[0..3]), 10 = AF_INET6 */
	__u8  client[16]; /* client address, network byte order */
	__u16 client_port;/* client port, host byte order */
	__u16 arc_hits;   /* records of this op found in the ARC */
	__u16 arc_misses; /* records of this op not in the ARC */
	__u16 l2arc_hits; /* of the misses, records served by the L2ARC */
};

#define STRATA_NFS_BATCH    2048 /* a power of two: BPF readers mask indices with it - 1 */
#define STRATA_NFS_CHUNK    256  /* operations a reader copies at once (a power of two) */
#define STRATA_NFS_EDGE_NS  15000000 /* 15 ms */

/* An operation's counting key (strata_nfs_batch.keys): all a count by op or by tier reads
 * of it, so a reader with only such counts copies 4 bytes an operation instead of 64.
 * Bits 0-15: its procedure; bit 16: a MOUNT procedure (else NFS), which makes bits 0-16
 * the nfs_op key value (catalogue/statistics.def); bits 24-31: its tiers (STRATA_TIER_*). */
#define STRATA_NFS_KEY_MOUNT 0x10000u
static inline __u32 strata_nfs_key(const struct strata_nfs_op *op)
{
	return op->proc | (op->prog == STRATA_PROG_MOUNT ? STRATA_NFS_KEY_MOUNT : 0) | (__u32)op->tiers << 24;
}

struct strata_nfs_batch {
	__u32 count;      /* operations in the batch, 1..STRATA_NFS_BATCH */
	__u32 ops_from;   /* ops[ops_from..count) hold theirs whole; those before, keys only */
	__u32 keys[STRATA_NFS_BATCH];               /* strata_nfs_key(&ops[i]) */
	/* each operation on a cache line of its own: a put stores to one line, not two, and two
	 * workers filling a batch never write the same line of ops */
	struct strata_nfs_op ops[STRATA_NFS_BATCH] __attribute__((aligned(64)));
};
_Static_assert((STRATA_NFS_BATCH & (STRATA_NFS_BATCH - 1)) == 0, "STRATA_NFS_BATCH is a power of two");
_Static_assert(sizeof(struct strata_nfs_op) == 64, "an operation fills one cache line");
_Static_assert(STRATA_NFS_CHUNK * sizeof(struct strata_nfs_op) <= 32768 &&
	       STRATA_NFS_BATCH % STRATA_NFS_CHUNK == 0, "a batch's chunk of operations fits a per-CPU map value");
_Static_assert(sizeof(((struct strata_nfs_batch *)0)->keys) + 8 <= 32768, "a batch's keys fit a per-CPU map value");

/* Appends op's counting key to b (which has room), and with whole op itself: how every
 * writer fills a batch (whole: while nfs_ops has a reader, STRATA_NFS_WHOLE). The next
 * operation's line is fetched now, while the engine serves that operation: a batch
 * (136 KiB) is cold again by the time it is reused, and a store that misses holds up the
 * stores behind it. */
static inline void strata_nfs_batch_put(struct strata_nfs_batch *b, const struct strata_nfs_op *op, int whole)
{
	b->keys[b->count] = strata_nfs_key(op);
	if (!whole) {
		b->ops_from = ++b->count;
		return;
	}
	b->ops[b->count++] = *op;
	if (b->count < STRATA_NFS_BATCH)
		__builtin_prefetch(&b->ops[b->count], 1);
}

/* Empties b for reuse. */
static inline void strata_nfs_batch_empty(struct strata_nfs_batch *b)
{
	b->count = 0;
	b->ops_from = 0;
}

#define STRATA_VDEV_READ  0
#define STRATA_VDEV_WRITE 1
#define STRATA_VDEV_FLUSH 2

struct strata_vdev_io {
	__u64 start_ns;
	__u64 offset;     /* bytes */
	__u64 latency_ns; /* the whole I/O, the device model's delay included */
	__u32 size;       /* bytes */
	__u32 vdev;       /* vdev index in the pool */
	__u32 op;         /* STRATA_VDEV_* */
	__s32 error;      /* 0 or -errno (done only) */
};

struct strata_tier_io {
	__u64 start_ns;
	__u64 latency_ns; /* explicit latency, or 0: use now - start_ns */
	__u64 file_id;
	__u32 bytes;      /* logical bytes */
	__u32 asize;      /* bytes on device (compressed) */
	__s32 error;      /* 0, -EIO, or -EBADMSG for a checksum mismatch */
	__u32 count;      /* zil_commit: records in this commit; else 1 */
};

/* The probe layout: the structs above as every reader must see them. A collector reads its
 * number from the engine binary's note (owner "strata", type STRATA_PROBE_LAYOUT_NOTE) and
 * refuses a binary of another layout, an engine of another revision (`strata check ab
 * --a-rev`), rather than read its structs wrong. A change to any struct above bumps it,
 * and the sizes pinned here with it. */
#define STRATA_PROBE_LAYOUT      1
#define STRATA_PROBE_LAYOUT_NOTE 0x5354
_Static_assert(sizeof(struct strata_nfs_batch) == 139328 && sizeof(struct strata_vdev_io) == 40 &&
	       sizeof(struct strata_tier_io) == 40,
	       "a probe struct changed: bump STRATA_PROBE_LAYOUT, and these sizes");

#ifndef __bpf__
/* Engine side: USDT probes with semaphores (sys/sdt.h from systemtap-sdt-dev).
 * Define STRATA_PROBES_DEFINE_SEMAPHORES in exactly one .c file. */
#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#ifdef STRATA_PROBES_DEFINE_SEMAPHORES
#define STRATA_SEM(name) \
	unsigned short strata_##name##_semaphore __attribute__((section(".probes"), used)) = 0
/* The note that names the probe layout (a section named .note.* is an ELF note). */
__attribute__((section(".note.strata"), used, aligned(4))) static const struct {
	__u32 namesz, descsz, type;
	char name[8];
	__u32 layout;
} strata_layout_note = { 7, 4, STRATA_PROBE_LAYOUT_NOTE, "strata", STRATA_PROBE_LAYOUT };
#else
#define STRATA_SEM(name) extern unsigned short strata_##name##_semaphore
#endif
STRATA_SEM(nfs_ops);
STRATA_SEM(nfs_keys);
STRATA_SEM(vdev_io_done);
STRATA_SEM(l2arc_read);
STRATA_SEM(l2arc_write);
STRATA_SEM(zil_commit);
#undef STRATA_SEM

/* True when a tracer has attached to the probe: build the struct only then. */
#define STRATA_PROBE_ENABLED(name) __builtin_expect(strata_##name##_semaphore != 0, 0)
#define STRATA_PROBE(name, argp) STAP_PROBE1(strata, name, argp)

/* Whether an operation is put whole (strata_nfs_batch_put), and whether a batch has anyone
 * to fire to; firing it: to the readers of its keys, then to those of its operations. */
#define STRATA_NFS_WHOLE() STRATA_PROBE_ENABLED(nfs_ops)
#define STRATA_NFS_TRACED() (STRATA_PROBE_ENABLED(nfs_ops) || STRATA_PROBE_ENABLED(nfs_keys))
#define STRATA_NFS_FIRE(b)                              \
	do {                                            \
		if (STRATA_PROBE_ENABLED(nfs_keys))     \
			STRATA_PROBE(nfs_keys, (b));    \
		if (STRATA_PROBE_ENABLED(nfs_ops))      \
			STRATA_PROBE(nfs_ops, (b));     \
	} while (0)
#endif /* !__bpf__ */

#endif /* STRATA_PROBES_H */
