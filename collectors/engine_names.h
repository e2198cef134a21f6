/* engine_names.h — the paths of the engine's file keys (object ids), asked of the
 * engine's stats socket (engine/names.h) and cached: the file dimension's codec of the
 * engine's layers. */
#ifndef STRATA_COLLECT_ENGINE_NAMES_H
#define STRATA_COLLECT_ENGINE_NAMES_H

#include <sys/types.h>
#include "keys.h"

/* Names objects of the engine running as pid from now on (-1: none), for one record: a
 * new pid empties the cache. */
void engine_names_use(pid_t pid);

/* "EXPORT:/path" <-> object id (object:ID where the engine has no name for it). */
extern const struct key_codec engine_file_keys[];

#endif
