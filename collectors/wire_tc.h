/* wire_tc.h — how the wire layer's programs hook an interface (collectors/wire_tc.c):
 * tcx links, and the TC filters strata marks as its own. */
#ifndef STRATA_COLLECT_WIRE_TC_H
#define STRATA_COLLECT_WIRE_TC_H

#include <stdbool.h>

#define WIRE_TC_PRIORITY 0xc057 /* strata's TC filters: this priority, handle = collector pid */

/* Removes the wire filters on ifindex left by strata collectors no longer running
 * (collectors/wire_tc.c); the number removed. */
int wire_tc_reap(int ifindex);

/* A tcx link of prog_fd at ifindex's ingress or egress: its fd, or a negative errno
 * (-EINVAL before Linux 6.6). */
int wire_tcx_attach(int prog_fd, int ifindex, bool egress);

#endif
