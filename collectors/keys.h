/* keys.h — breakdown keys: names of dimensions, key bytes <-> text for the dimensions
 * every layer shares (op names, addresses, tiers, devices, hit/miss, RPC versions and
 * statuses), from catalogue/statistics.def; struct key_codec, a layer's own. */
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

/* The text of key value value in set, or NULL. */
const char *key_text_of(enum keyset set, uint32_t value);

/* "nfs_op", "tier", ... and a sentence on the set. */
const char *keyset_name(enum keyset set);
const char *keyset_doc(enum keyset set);

/* How a layer names the keys of one dimension its own way (struct layer_ops keys): bytes to
 * text, and a filter value's text to bytes (zeroed before): 0, or -1 with a message. */
struct key_codec {
	int dim;
	void (*format)(const uint8_t key[AGG_KEY_BYTES], char *out, size_t n);
	int (*parse)(const char *text, uint8_t key[AGG_KEY_BYTES], char *err, size_t n);
};

/* Whether key is the overflow key ("other"). */
bool key_is_other(const uint8_t key[AGG_KEY_BYTES]);

/* Text of key bytes for dimension dim into out (size n). "" without breakdown, "other" for the overflow key. */
void key_format(int dim, enum keyset ops, const uint8_t key[AGG_KEY_BYTES], char *out, size_t n);
/* Key bytes of a filter value; 0 on success, -1 (with a message in err) if the value is not valid. */
int key_parse(int dim, enum keyset ops, const char *text, uint8_t key[AGG_KEY_BYTES], char *err, size_t errlen);

#endif
