/* probes.c — the one translation unit that defines the USDT semaphores
 * declared by strata_probes.h. */
#define STRATA_PROBES_DEFINE_SEMAPHORES
#include "strata_probes.h"
