/* l2arc.h — the second-level ARC: records evicted from the ARC, copied at a
 * bounded rate to one or more cache devices (files or block devices, O_DIRECT),
 * LZ4-compressed, checksummed, and found again after a restart.
 *
 * Flow: the ARC's eviction hook (l2arc_arc_evict_hook) hands each evicted
 * record to l2arc_feed_offer(), which stages a copy in a bounded list (full:
 * dropped and counted).  A feed thread wakes every feed_interval_ms (every
 * feed_min_ms after a feed that wrote more than half its target), takes at
 * most write_max bytes (+ write_boost until the device has filled once) and
 * writes them in one I/O at the device's hand, a log-structured ring that
 * wraps: the region about to be overwritten is evicted first.  Each feed also
 * writes log blocks (every log_entries buffers and at its end) listing the
 * buffers' headers, chained newest to oldest from the device's superblock, so
 * l2arc_add_device() on an existing device rebuilds the headers in a
 * background thread; reads miss (the pool serves them) until a header is back.
 *
 * The L2ARC holds clean data only: whoever changes a record calls
 * l2arc_invalidate(key).  Every read is checked against the checksum taken
 * when the buffer was written; a mismatch or an I/O error drops the header and
 * tells the caller to read the pool instead — never bad data.  Note: across a
 * restart a rebuilt buffer is self-consistent but may be older than the pool's
 * record; the caller checks L2 data against its block pointer (see the wiring
 * notes in the report / l2arc_read below).
 *
 * Header memory: one 72-byte header per cached buffer plus a 4-byte hash
 * bucket per 1..4 headers (l2_hdr_size). */
#ifndef ENGINE_L2ARC_H
#define ENGINE_L2ARC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arc.h"
#include "tierstats.h"

#define L2ARC_MAX_DEVS 8

struct l2arc_config {
	uint64_t write_max;        /* bytes per feed (8 MiB) */
	uint64_t write_boost;      /* extra bytes per feed until a device has filled once (8 MiB) */
	uint32_t headroom;         /* staging list holds headroom x (write_max + boost) bytes (2) */
	uint32_t feed_interval_ms; /* 1000 */
	uint32_t feed_min_ms;      /* 200: after a feed that wrote > half its target */
	uint32_t log_entries;      /* buffers per log block (64) */
	uint32_t max_buf;          /* largest buffer cached (1 MiB, at most 8 MiB) */
	bool compress;             /* LZ4 per buffer (on) */
	bool rebuild;              /* rebuild headers from an existing device (on) */
};

struct l2arc_stats {
	uint64_t l2_hits, l2_misses;
	uint64_t l2_feeds;          /* feed writes issued */
	uint64_t l2_writes_sent;    /* buffers written */
	uint64_t l2_write_bytes;    /* bytes written to the devices (data + log blocks) */
	uint64_t l2_writes_error;   /* failed feed writes */
	uint64_t l2_read_bytes;     /* logical bytes served */
	uint64_t l2_size;           /* logical bytes cached */
	uint64_t l2_asize;          /* bytes allocated on the devices for them */
	uint64_t l2_hdr_size;       /* header + hash table bytes in DRAM */
	uint64_t l2_bufs;           /* headers (buffers cached) */
	uint64_t l2_hdr_sizeof;     /* bytes of one header */
	uint64_t l2_cksum_bad, l2_io_error;
	uint64_t l2_read_races;     /* reads that lost to the feed overwriting their region */
	uint64_t l2_evict_bufs;     /* headers dropped as the ring wrapped */
	uint64_t l2_invalidated;    /* headers dropped by l2arc_invalidate */
	uint64_t l2_feed_drops;     /* offers refused: staging list full */
	uint64_t l2_stage_bufs, l2_stage_bytes;
	uint64_t l2_log_blk_writes;
	uint64_t l2_rebuild_success, l2_rebuild_bufs, l2_rebuild_log_blks;
	uint64_t l2_rebuild_lb_bad, l2_rebuild_io_errors, l2_rebuild_aborts;
	uint64_t l2_dev_bytes;      /* ring bytes over all devices */
	uint64_t l2_enabled, l2_compress;
};
extern const struct tier_stat_field l2arc_stat_fields[];
extern const size_t l2arc_stat_nfields;

struct l2arc;

void l2arc_config_defaults(struct l2arc_config *cfg);
/* Starts the feed thread (idle until a device is added). */
struct l2arc *l2arc_create(const struct l2arc_config *cfg);
/* Stops the threads (staged buffers are discarded), closes the devices. */
void l2arc_destroy(struct l2arc *l2);

/* Adds a cache device (a missing file is created with create_size bytes).
 * An existing device with a valid superblock is rebuilt in the background
 * (cfg.rebuild); anything else is formatted.  0 or -errno with err set.
 * Call before reads start (devices are never removed while running). */
int l2arc_add_device(struct l2arc *l2, const char *path, uint64_t create_size,
		     char *err, size_t errsz);

/* Run-time switch: disabled = no staging, no feeding, every read misses;
 * cached headers are kept (and still invalidated) for when it is re-enabled. */
void l2arc_set_enabled(struct l2arc *l2, bool on);
bool l2arc_enabled(struct l2arc *l2);
void l2arc_set_compress(struct l2arc *l2, bool on);
/* Latency model applied to every cache-device read and feed write (devmodel.h;
 * NULL: none).  Set before use; the caller keeps it alive until destroy. */
struct devmodel;
void l2arc_set_model(struct l2arc *l2, struct devmodel *m);
/* Fault injection: ns added to every cache-device read (0: none). */
void l2arc_set_read_delay(struct l2arc *l2, uint64_t ns);

/* Stages a copy of an evicted clean record; false if refused (disabled,
 * already cached or staged, too big, staging full). */
bool l2arc_feed_offer(struct l2arc *l2, struct arc_key key, const void *data, uint32_t size);
/* arc_evict_fn adapter: arc_set_evict_hook(arc, l2arc_arc_evict_hook, l2). */
void l2arc_arc_evict_hook(void *l2, struct arc_key key, const void *data, uint32_t size);

/* On an ARC miss.  Returns the record's size (> 0) with the data in buf,
 * 0 on a miss, or -EBADMSG (checksum mismatch) / -EIO (device error) /
 * -ENOSPC (bufsize too small): in every case <= 0 the caller reads the pool. */
int l2arc_read(struct l2arc *l2, struct arc_key key, void *buf, uint32_t bufsize);
/* The record changed or went away: drop its L2 copy (cached or staged). */
void l2arc_invalidate(struct l2arc *l2, struct arc_key key);

/* Kicks feeds until nothing staged is left to write (tests, shutdown). */
void l2arc_flush(struct l2arc *l2);
/* Waits for the background rebuilds to finish. */
void l2arc_wait_rebuild(struct l2arc *l2);

void l2arc_get_stats(struct l2arc *l2, struct l2arc_stats *out);

#endif
