/* nfs.c — the nfs layer: bpf/nfs.bpf.c on the engine's strata:nfs_ops USDT probe
 * (engine/strata_probes.h), attached to the engine binary or to one engine process. */
#include "usdt.h"
#include "nfs.skel.h"

ENGINE_USDT_LAYER(nfs, NFS, "nfs_ops");
