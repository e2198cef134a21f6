/* tier_links.c — the tier programs of a layer attached exactly while a dataset needs the
 * tier (tier_links.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "tier_links.h"

bool tier_wanted(const struct layer *L, bool attached)
{
	return attached && (__atomic_load_n(L->dims, __ATOMIC_ACQUIRE) >> AGG_DIM_TIER & 1);
}

void tier_links_sync(struct tier_links *t, bool want, const char *layer, layer_report_fn *report, void *ctx)
{
	char msg[160];

	for (int i = 0; i < 2; i++) {
		if (want && !t->link[i] && !(t->link[i] = bpf_program__attach(t->prog[i])) && report) {
			snprintf(msg, sizeof(msg), "%s tier: cannot attach %s: %s", layer,
				 bpf_program__section_name(t->prog[i]), strerror(errno));
			report(ctx, msg);
		} else if (!want && t->link[i]) {
			bpf_link__destroy(t->link[i]);
			t->link[i] = NULL;
		}
	}
}
