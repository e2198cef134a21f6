/* names.h — object ids to paths inside their export ("name ID") and paths to
 * object ids ("lookup EXPORT:/PATH"), answered on the stats socket so the
 * collector can print file keys as paths (collectors/engine_names.c).
 *
 * "name ID"   -> {"id":ID,"gen":G,"export":"data","path":"/dir/f","links":N,"removed":R}
 *                or {"id":ID,"removed":R} when the object has no name (gone, or not
 *                found within the search bound).  A file with hard links is named by
 *                its first link breadth-first from the root (entries in creation order).
 * "lookup data:/dir/f" -> {"id":ID,"gen":G} or {"error":"..."}
 * "removed"   -> {"removed":R}
 * G is a keyed digest of the object's (id, generation): the same for the same object,
 * another for another, without disclosing the generation the file handles carry.
 * R counts directory entries removed since the engine started (dir_entries_removed):
 * a name found while R had a value is still the object's name while R keeps it. */
#ifndef ENGINE_NAMES_H
#define ENGINE_NAMES_H

/* The JSON answers (malloc'd); arg is the rest of the request line. */
char *names_name_json(const char *arg);
char *names_lookup_json(const char *arg);
char *names_removed_json(void);

#endif
