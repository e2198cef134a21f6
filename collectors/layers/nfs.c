/* nfs.c — the nfs layer: bpf/nfs.bpf.c on the engine's strata:nfs_keys and strata:nfs_ops
 * USDT probes (engine/strata_probes.h), attached to the engine binary or to one engine
 * process: each dataset to the one it reads (bpf/nfs_readers.h). */
#include <string.h>
#include "usdt.h"
#include "nfs.skel.h"
#include "nfs_readers.h"

static bool nfs_reads(const struct agg_slot *cfg, const char *probe)
{
	bool keys = nfs_reads_keys_only(cfg->stat, cfg->breakdown, cfg->nfilters);

	return !strcmp(probe, keys ? "nfs_keys" : "nfs_ops");
}

ENGINE_USDT_LAYER(nfs, NFS, nfs_reads, "nfs_ops", "nfs_keys");
