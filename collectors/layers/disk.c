/* disk.c — the disk layer: bpf/disk.bpf.c on the block tracepoints, tp_btf first and
 * raw_tp (the same code, untyped arguments) when the kernel refuses it; the request
 * argument's position, and whether requests carry the start time disk.queue reads, come
 * from the kernel's BTF (disk_btf.c). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "catalogue.h"
#include "disk_btf.h"
#include "layers.h"
#include "disk.skel.h"

static bool supported(const struct statistic *s, char *why, size_t n)
{
	if (!disk_btf_supported(why, n))
		return false;
	if (s->agg_stat == AGG_STAT_DISK_QUEUE && !disk_btf_request_start()) {
		snprintf(why, n, "the kernel's struct request has no start_time_ns, where disk.queue starts");
		return false;
	}
	return true;
}

/* The requeue program (it only forgets requeued requests) is attached while the disk
 * layer is; once no disk probe is, the issues whose completions came meanwhile are
 * forgotten (they would count as missed completions when re-attached). */
static int active(struct layer *L, bool on)
{
	struct disk_bpf *s = L->skel;
	struct bpf_program *requeue = s->progs.disk_requeue_btf;
	int fd = bpf_map__fd(s->maps.starts);
	__u64 key;

	if (!bpf_program__autoload(requeue))
		requeue = s->progs.disk_requeue_raw;
	if (on) {
		s->links.disk_requeue_btf = bpf_program__attach(requeue);
		return s->links.disk_requeue_btf ? 0 : -errno;
	}
	bpf_link__destroy(s->links.disk_requeue_btf);
	s->links.disk_requeue_btf = NULL;
	while (bpf_map_get_next_key(fd, NULL, &key) == 0)
		bpf_map_delete_elem(fd, &key);
	return 0;
}

static int load(struct layer *L, const struct layer_config *cfg, char *why, size_t n)
{
	int issue_arg = disk_btf_request_arg("block_rq_issue", why, n);
	int complete_arg = disk_btf_request_arg("block_rq_complete", why, n);
	int requeue_arg = disk_btf_request_arg("block_rq_requeue", why, n);
	int err = -ENOENT;

	if (issue_arg < 0 || complete_arg < 0 || requeue_arg < 0)
		return -ENOTSUP;
	for (int raw = 0; raw < 2; raw++) {
		struct disk_bpf *s = disk_bpf__open();

		if (!s)
			return -errno;
		s->rodata->agg_max_keys = cfg->max_keys;
		s->rodata->issue_rq_arg = (__u32)issue_arg;
		s->rodata->complete_rq_arg = (__u32)complete_arg;
		s->rodata->requeue_rq_arg = (__u32)requeue_arg;
		bpf_map__set_max_entries(s->maps.agg_keyset, AGG_MAX_SLOTS * cfg->max_keys);
		bpf_program__set_autoload(s->progs.disk_issue_btf, !raw);
		bpf_program__set_autoload(s->progs.disk_complete_btf, !raw);
		bpf_program__set_autoload(s->progs.disk_issue_raw, raw);
		bpf_program__set_autoload(s->progs.disk_complete_raw, raw);
		bpf_program__set_autoload(s->progs.disk_requeue_btf, !raw);
		bpf_program__set_autoload(s->progs.disk_requeue_raw, raw);
		if ((err = disk_bpf__load(s))) {
			disk_bpf__destroy(s);
			continue;
		}
		L->skel = s;
		LAYER_BIND_COMMON(L, s);
		layer_add_probe(L, "block_rq_issue", raw ? s->progs.disk_issue_raw : s->progs.disk_issue_btf,
				PROBE_TRACEPOINT);
		layer_add_probe(L, "block_rq_complete", raw ? s->progs.disk_complete_raw : s->progs.disk_complete_btf,
				PROBE_TRACEPOINT);
		return 0;
	}
	snprintf(why, n, "the kernel refused the block tracepoint programs (%s)", strerror(-err));
	return err;
}

static void unload(struct layer *L)
{
	disk_bpf__destroy(L->skel);
}

const struct layer_ops LAYER_OPS(DISK) = { .supported = supported, .load = load, .unload = unload, .active = active };
