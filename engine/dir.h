/* dir.h — directory entries of a directory object: lookup by name, add,
 * remove, and stable READDIR cookies (entries stay ordered by cookie). */
#ifndef ENGINE_DIR_H
#define ENGINE_DIR_H

#include "objset.h"

/* Object id of `name` in dir, 0 when absent ("." and ".." are not stored). */
uint64_t dir_lookup(const struct object *dir, const char *name);
void dir_add(struct object *dir, const char *name, uint64_t objid);
/* Removes `name`; returns its object id or 0. */
uint64_t dir_remove(struct object *dir, const char *name);
/* Entries removed so far by any directory (a rename, remove or rmdir): a
 * path found before is still right while this count has not moved. */
uint64_t dir_entries_removed(void);
/* Index of the first entry whose cookie is greater than `cookie`. */
uint32_t dir_seek(const struct object *dir, uint64_t cookie);
/* Name is acceptable for a new entry (not empty, ".", "..", no '/'). */
int dir_name_ok(const char *name);

#endif
