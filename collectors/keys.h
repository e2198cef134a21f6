/* keys.h — breakdown keys: names of dimensions, key bytes <-> text (op names,
 * client addresses, tiers, files, devices, hit/miss, processes), from catalogue/statistics.def. */
#ifndef STRATA_COLLECT_KEYS_H
#define STRATA_COLLECT_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "aggregate.h"

/* The closed key sets of statistics.def; a statistic's "op" dimension uses one. */
enum keyset {
#define STAT_KEYSET(ID, name, doc) KEYSET_##ID,
#include "statistics.def"
	KEYSET_COUNT
};

/* One text of a closed key set and the key value it stands for. */
struct key_text {
	enum keyset set;
	uint32_t value;
	const char *text;
};

extern const struct key_text key_texts[];
extern const size_t nkey_texts;

/* "op", "client", ...; NULL for AGG_DIM_NONE. */
const char *dim_name(int dim);
/* Which texts dim takes: "op", a key set's name, "address", "u64", "device" (statistics.def). */
const char *dim_values(int dim);
const char *dim_doc(int dim);
/* Dimension of a breakdown/filter name ("-" is AGG_DIM_NONE, "hit/miss" AGG_DIM_HITMISS); -1 if unknown. */
int dim_parse(const char *name);

/* "nfs_op", "tier", ... and a sentence on the set. */
const char *keyset_name(enum keyset set);
const char *keyset_doc(enum keyset set);

/* Names an fs file key: true with a path that names that inode now in out. The
 * collector's fs layer sets one (collectors/fs_names.c); without it (or when it knows
 * no path) an fs file prints as inode:MAJ,MIN:INO. */
typedef bool key_file_namer(const struct agg_fs_file *f, char *out, size_t n);
void key_set_file_namer(key_file_namer *namer);

/* Names an engine file key (object id): true with "EXPORT:/path", the object's name in
 * the engine now, in out. collectors/engine_names.c sets one while an engine runs;
 * without it (or when the engine has no name) the key prints as object:ID. */
typedef bool key_object_namer(uint64_t id, char *out, size_t n);
void key_set_object_namer(key_object_namer *namer);
/* The object id "EXPORT:/path" names now (a filter value): 0, or -1 with a message. */
typedef int key_object_finder(const char *path, uint64_t *id, char *err, size_t n);
void key_set_object_finder(key_object_finder *finder);

/* Text of key bytes for dimension dim into out (size n). "" without breakdown, "other" for the overflow key. */
void key_format(int dim, enum keyset ops, const uint8_t key[AGG_KEY_BYTES], char *out, size_t n);
/* Key bytes of a filter value; 0 on success, -1 (with a message in err) if the value is not valid. */
int key_parse(int dim, enum keyset ops, const char *text, uint8_t key[AGG_KEY_BYTES], char *err, size_t errlen);

#endif
