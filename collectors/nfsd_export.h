/* nfsd_export.h — nfsd.*'s export keys (bpf/nfsd.bpf.c: 1, the fsid type, the fsid's
 * first 12 bytes) <-> text: the export's path, from /proc/net/rpc/nfsd.fh, or
 * fsid:TYPE:HEX where nfsd lists no such fsid now. */
#ifndef STRATA_COLLECT_NFSD_EXPORT_H
#define STRATA_COLLECT_NFSD_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include "aggregate.h"

void nfsd_export_format(const uint8_t key[AGG_KEY_BYTES], char *out, size_t n);
/* 0, or -1: text is neither an exported path nfsd lists nor fsid:TYPE:HEX. */
int nfsd_export_parse(const char *text, uint8_t key[AGG_KEY_BYTES]);

#endif
