/* privileges.h — does this process have what loading BPF and attaching probes needs? */
#ifndef STRATA_COLLECT_PRIVILEGES_H
#define STRATA_COLLECT_PRIVILEGES_H

#include <stdbool.h>
#include <stddef.h>

/* True with CAP_SYS_ADMIN, or CAP_BPF and CAP_PERFMON; else false and a one-line reason. */
bool privileges_ok(char *why, size_t n);

#endif
