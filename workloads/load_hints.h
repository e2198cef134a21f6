/* load_hints.h — what to do next, appended to strata-load's one-line refusals: the
 * server-side setting behind a refused MOUNT or CREATE, and the ports to give when
 * the host has no portmapper. */
#ifndef STRATA_LOAD_HINTS_H
#define STRATA_LOAD_HINTS_H

#include <stdbool.h>

/* "; <what to do>" for an error status of procedure proc (LOAD_PROC_MNT or an NFSv3
 * procedure number), or "" when there is no advice; netns: the client is a --netns one. */
const char *load_hint_status(int proc, int status, bool netns);

/* "; <what to do>" when the portmapper could not give the ports. */
const char *load_hint_portmap(void);

#endif
