/* nfs_readers.h — which of the engine's two probes on a batch of operations
 * (engine/strata_probes.h) a dataset of the nfs layer reads: strata:nfs_keys when it reads
 * nothing of an operation but its counting key (nfs.ops without filter, without key or by
 * op or tier), else strata:nfs_ops. The two programs of bpf/nfs.bpf.c each count the slots
 * of theirs, and the collector attaches the probe each dataset reads
 * (collectors/layers/nfs.c): one rule for both. After bpf/aggregate.h. */
#ifndef STRATA_NFS_READERS_H
#define STRATA_NFS_READERS_H

static inline int nfs_reads_keys_only(__u32 stat, __u32 breakdown, __u32 nfilters)
{
	return stat == AGG_STAT_NFS_OPS && !nfilters &&
	       (breakdown == AGG_DIM_NONE || breakdown == AGG_DIM_OP || breakdown == AGG_DIM_TIER);
}

#endif
