/* ctl.h — `strata-engine ctl`'s run-time switches (ctl.c). */
#ifndef ENGINE_CTL_H
#define ENGINE_CTL_H

#include <stddef.h>

/* One `ctl` request ("l2arc on", "inject-delay l2arc 50us", "arc-max 64M"): 0
 * with a reply, or -1 with a one-line error, in out. */
int engine_ctl(const char *request, char *out, size_t outsz);

#endif
