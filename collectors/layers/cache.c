/* cache.c — the cache layer: bpf/cache.bpf.c on the engine's L2ARC and ZIL USDT probes
 * (engine/strata_probes.h), attached to the engine binary or to one engine process. */
#include "usdt.h"
#include "cache.skel.h"

ENGINE_USDT_LAYER(cache, CACHE, NULL, "l2arc_read", "l2arc_write", "zil_commit");
