/* nfsd.h — the kernel nfsd layer (bpf/nfsd.bpf.c): whether nfsd runs here, and loading its
 * program, typed (tp_btf) where the sunrpc module has BTF. */
#ifndef STRATA_COLLECT_NFSD_H
#define STRATA_COLLECT_NFSD_H

#include <stdbool.h>
#include <stddef.h>

struct layer;

/* Whether nfsd.* can be collected now: nfsd and sunrpc loaded. Why not in why. */
bool nfsd_supported(char *why, size_t n);
/* Loads the program and adds its probe to L. 0, or a negative errno with why set. */
int nfsd_load(struct layer *L, unsigned max_keys, char *why, size_t n);

#endif
