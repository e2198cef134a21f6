/* keys.h — breakdown keys: names of dimensions, key bytes <-> text (op names,
 * client addresses, tiers, files, devices, hit/miss, processes), as FORMAT.md defines them. */
#ifndef STRATA_COLLECT_KEYS_H
#define STRATA_COLLECT_KEYS_H

#include <stddef.h>
#include <stdint.h>
#include "aggregate.h"

/* Which family of op names a statistic's "op" dimension uses. */
enum op_family { OPS_NFS, OPS_DISK, OPS_TIER, OPS_FS };

/* "op", "client", ...; NULL for AGG_DIM_NONE. */
const char *dim_name(int dim);
/* Dimension of a breakdown/filter name ("-" is AGG_DIM_NONE, "hit/miss" AGG_DIM_HITMISS); -1 if unknown. */
int dim_parse(const char *name);

/* Text of key bytes for dimension dim into out (size n). "" without breakdown, "other" for the overflow key. */
void key_format(int dim, enum op_family ops, const uint8_t key[AGG_KEY_BYTES], char *out, size_t n);
/* Key bytes of a filter value; 0 on success, -1 (with a message in err) if the value is not valid. */
int key_parse(int dim, enum op_family ops, const char *text, uint8_t key[AGG_KEY_BYTES], char *err, size_t errlen);

#endif
