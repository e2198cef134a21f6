/* tier_links.h — the tier programs of a layer (bpf/tier.h: block I/O and iowait of its
 * threads) attached exactly while a dataset of the layer needs the tier: fs, nfsd, nfsd_io. */
#ifndef STRATA_TIER_LINKS_H
#define STRATA_TIER_LINKS_H

#include <stdbool.h>
#include "layers.h"

struct bpf_link;
struct bpf_program;

#define TIER_FENTRY 3 /* io_schedule, io_schedule_timeout, io_schedule_prepare */

/* The tier programs a layer loaded and their links: PREFIX_bio_X and PREFIX_wait_X (every
 * context switch); and, where the layer loaded them (else NULL), fentry programs on the
 * functions a thread calls to sleep for I/O, attached instead of the wait program unless the
 * kernel refuses one (then the wait program, from then on). */
struct tier_links {
	struct bpf_program *prog[2];
	struct bpf_program *fentry[TIER_FENTRY];
	struct bpf_link *link[2 + TIER_FENTRY];
	bool fentry_refused;
};

/* Whether layer L is attached and a slot of it breaks down or filters by tier. */
bool tier_wanted(const struct layer *L, bool attached);

/* Attaches or detaches the programs as want says; a failed attach goes to report (if any) as
 * one sentence naming the layer. Whether the block I/O and a wait program are attached. */
bool tier_links_sync(struct tier_links *t, bool want, const char *layer, layer_report_fn *report, void *ctx);

#endif
