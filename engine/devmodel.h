/* devmodel.h — device latency models for vdevs, L2ARC and log devices: an
 * EMULATION layered on top of the real I/O so that a laptop shows the
 * DRAM / flash / disk latency bands of real hardware.  After a real I/O that
 * took real_elapsed_ns, devmodel_service() sleeps (clock_nanosleep on an
 * absolute CLOCK_MONOTONIC deadline) whatever the modelled service time has
 * left, and returns the total latency the I/O saw.
 *
 * Specs (devmodel_parse):
 *   none                      the real device only (the model is NULL)
 *   hdd[:rpm=7200,seek=2.5ms,settle=1ms,rate=150m,span=SIZE]
 *       one I/O at a time per spindle (a mutex serialises service); a
 *       non-sequential I/O costs settle + k*sqrt(distance from the previous
 *       I/O's end) — k set so that the average over random I/O on `span`
 *       bytes is `seek`, full stroke = settle + (seek - settle) * 15/8 —
 *       plus a rotational delay uniform over one revolution; so does a
 *       sequential write after a FLUSH (a sync-write log: write, flush, next
 *       write; its sector has gone by); every I/O adds size / rate.  span defaults to the device size given by the caller.
 *       Defaults put random 8 KiB reads mostly in 2-10 ms (seed 003).
 *   ssd[:read=120us,write=140us,jitter=10%,rate=1000m,channels=8]
 *       service time read/write +- jitter (uniform) + size / rate, at most
 *       `channels` I/Os in service at once (a counting semaphore).
 *       Defaults: L2ARC reads ~100-300 us, SLOG writes ~100-200 us.
 * Durations take ns/us/ms/s; sizes and rates (bytes per second) k/m/g/t
 * (binary multiples). */
#ifndef ENGINE_DEVMODEL_H
#define ENGINE_DEVMODEL_H

#include <stddef.h>
#include <stdint.h>

#include "tierstats.h"

enum devmodel_op { DEVMODEL_READ = 0, DEVMODEL_WRITE = 1, DEVMODEL_FLUSH = 2 }; /* = STRATA_VDEV_* */

struct devmodel;

struct devmodel_stats {
	uint64_t dm_ios;        /* I/Os serviced */
	uint64_t dm_seeks;      /* hdd: non-sequential I/Os */
	uint64_t dm_modeled_ns; /* sum of modelled service times */
	uint64_t dm_slept_ns;   /* sum of sleeps added on top of the real I/O */
	uint64_t dm_queue_ns;   /* sum of waits for the spindle / a channel */
};
extern const struct tier_stat_field devmodel_stat_fields[];
extern const size_t devmodel_stat_nfields;

/* *out = NULL for "none".  span_hint: the device size (hdd default span).
 * 0, or -EINVAL with a one-line message in err. */
int devmodel_parse(const char *spec, uint64_t span_hint, struct devmodel **out, char *err, size_t errsz);
void devmodel_free(struct devmodel *m);
/* Canonical spec with every parameter, e.g. for the stats output. */
void devmodel_describe(const struct devmodel *m, char *buf, size_t len);

/* Call after the real I/O; m == NULL returns real_elapsed_ns at once.
 * Returns the total latency in ns (real + queueing + modelled remainder).
 * FLUSH costs its real time only (an HDD's next sequential write pays a
 * rotation). */
uint64_t devmodel_service(struct devmodel *m, enum devmodel_op op, uint64_t offset, uint32_t size,
			  uint64_t real_elapsed_ns);

void devmodel_get_stats(struct devmodel *m, struct devmodel_stats *out);

/* Sleeps ns nanoseconds (0: returns at once): the fault-injection delay
 * `strata-engine ctl inject-delay` adds to one tier's I/O. */
void devmodel_delay(uint64_t ns);

#endif
