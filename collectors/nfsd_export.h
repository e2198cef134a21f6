/* nfsd_export.h — nfsd.*'s export keys (bpf/nfsd.bpf.c: 1, the fsid type, the fsid's
 * first 12 bytes) <-> text: the export's path, from /proc/net/rpc/nfsd.fh, or
 * fsid:TYPE:HEX where nfsd lists no such fsid now. */
#ifndef STRATA_COLLECT_NFSD_EXPORT_H
#define STRATA_COLLECT_NFSD_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include "keys.h"

/* The export dimension's codec of the nfsd and nfsd_io layers. */
extern const struct key_codec nfsd_export_keys[];

#endif
