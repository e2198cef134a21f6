/* vdev.c — the vdev layer: bpf/vdev.bpf.c on the engine's strata:vdev_io_done USDT probe
 * (engine/strata_probes.h), attached to the engine binary or to one engine process. */
#include "usdt.h"
#include "vdev.skel.h"

ENGINE_USDT_LAYER(vdev, VDEV, NULL, "vdev_io_done");
