/* meta.h — the metadata block: datasets, every object (attributes, block
 * pointers, directory entries, symlink targets) and the space map, encoded
 * in XDR order.  Written whole by each txg sync, copy-on-write. */
#ifndef ENGINE_META_H
#define ENGINE_META_H

#include "objset.h"

/* Encodes the objset (caller excludes mutators) plus the space map, leaving
 * `skip` (where this block will live) out of the space map. */
void meta_encode(struct objset *os, uint64_t txg, struct xdr_out *o, const struct pool_extent *skip);
/* Loads a block written by meta_encode into an empty objset; -1 if corrupt. */
int meta_decode(struct objset *os, const uint8_t *buf, size_t len, uint64_t *txg);

#endif
