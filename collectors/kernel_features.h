/* kernel_features.h — what the running kernel offers beyond the attach types, asked
 * of the kernel itself (a probe program or map, or its BTF): the facts that decide
 * which layers load (collectors/catalogue_host.c), which program variant a layer loads
 * (collectors/layers.c), and what `strata doctor` shows (strata-features). */
#ifndef STRATA_COLLECT_KERNEL_FEATURES_H
#define STRATA_COLLECT_KERNEL_FEATURES_H

#include <stdbool.h>

/* The bpf_loop helper (Linux 5.17+): the wire layer loads its bpf_loop programs with it,
 * its bounded ones without. */
bool kernel_has_bpf_loop(void);
/* Task storage maps for tracing programs (Linux 5.11+): the fs layer needs them. */
bool kernel_has_task_storage(void);
/* BPF cookies (Linux 5.15+): libbpf attaches USDT probes to a position-independent
 * binary in every process (no pid) only with them. */
bool kernel_has_bpf_cookie(void);
/* A kfunc of this name in the kernel's BTF (bpf_rdonly_cast: Linux 6.2+). */
bool kernel_has_kfunc(const char *name);

#endif
