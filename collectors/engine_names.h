/* engine_names.h — the paths of the engine's file keys (object ids), asked of the
 * engine's stats socket (engine/names.h) and cached, for keys.c (key_set_object_namer). */
#ifndef STRATA_COLLECT_ENGINE_NAMES_H
#define STRATA_COLLECT_ENGINE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Names objects of the engine running as pid from now on (-1: none); a new pid empties
 * the cache. Sets keys.c's object namer and finder. */
void engine_names_use(pid_t pid);
/* A new record is being written: names are checked again against the engine. */
void engine_names_tick(void);

/* "EXPORT:/path" of object id now into out: true, or false when the engine has no name
 * for it (gone, not running, not found). */
bool engine_object_name(uint64_t id, char *out, size_t n);
/* The object id that "EXPORT:/path" names now: 0, or -1 with a message in err. */
int engine_object_find(const char *path, uint64_t *id, char *err, size_t n);

#endif
