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

static void unlink_at(struct tier_links *t, int i)
{
	bpf_link__destroy(t->link[i]);
	t->link[i] = NULL;
}

static bool link_at(struct tier_links *t, int i, struct bpf_program *prog, const char *layer,
		    layer_report_fn *report, void *ctx)
{
	char msg[160];

	if (t->link[i] || (t->link[i] = bpf_program__attach(prog)))
		return true;
	if (report) {
		snprintf(msg, sizeof(msg), "%s tier: cannot attach %s: %s", layer, bpf_program__section_name(prog),
			 strerror(errno));
		report(ctx, msg);
	}
	return false;
}

bool tier_links_sync(struct tier_links *t, bool want, const char *layer, layer_report_fn *report, void *ctx)
{
	bool bio, wait = true;

	if (!want) {
		for (int i = 0; i < 2 + TIER_FENTRY; i++)
			unlink_at(t, i);
		return false;
	}
	bio = link_at(t, 0, t->prog[0], layer, report, ctx);
	if (t->fentry[0] && !t->fentry_refused) {
		for (int i = 0; i < TIER_FENTRY && wait; i++)
			wait = link_at(t, 2 + i, t->fentry[i], layer, NULL, NULL);
		if (wait)
			return bio;
		t->fentry_refused = true; /* the kernel's ftrace refused one: every context switch instead */
		for (int i = 0; i < TIER_FENTRY; i++)
			unlink_at(t, 2 + i);
	}
	return link_at(t, 1, t->prog[1], layer, report, ctx) && bio;
}
