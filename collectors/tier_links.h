/* tier_links.h — the tier programs of a layer (bpf/tier.h: block I/O and iowait of its
 * threads) attached exactly while a dataset of the layer needs the tier: fs, nfsd, nfsd_io. */
#ifndef STRATA_TIER_LINKS_H
#define STRATA_TIER_LINKS_H

#include <stdbool.h>
#include "layers.h"

struct bpf_link;
struct bpf_program;

/* The pair of a layer's tier programs it loaded (PREFIX_bio_X, PREFIX_wait_X) and their links. */
struct tier_links {
	struct bpf_program *prog[2];
	struct bpf_link *link[2];
};

/* Whether layer L is attached and a slot of it breaks down or filters by tier. */
bool tier_wanted(const struct layer *L, bool attached);

/* Attaches or detaches the pair as want says; a failed attach goes to report (if any) as one
 * sentence naming the layer. */
void tier_links_sync(struct tier_links *t, bool want, const char *layer, layer_report_fn *report, void *ctx);

#endif
