/* dir.c — directory entries kept in cookie order (see dir.h). */
#include "dir.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static uint64_t entries_removed; /* atomic */

uint64_t dir_entries_removed(void)
{
	return __atomic_load_n(&entries_removed, __ATOMIC_RELAXED);
}

uint64_t dir_lookup(const struct object *dir, const char *name)
{
	for (uint32_t i = 0; i < dir->nents; i++)
		if (!strcmp(dir->ents[i].name, name))
			return dir->ents[i].objid;
	return 0;
}

void dir_add(struct object *dir, const char *name, uint64_t objid)
{
	if (dir->nents == dir->capents) {
		dir->capents = dir->capents ? dir->capents * 2 : 8;
		dir->ents = xrealloc(dir->ents, dir->capents * sizeof(*dir->ents));
	}
	dir->ents[dir->nents++] = (struct dir_entry){ xstrdup(name), objid, dir->next_cookie++ };
}

uint64_t dir_remove(struct object *dir, const char *name)
{
	for (uint32_t i = 0; i < dir->nents; i++) {
		if (strcmp(dir->ents[i].name, name))
			continue;
		uint64_t id = dir->ents[i].objid;
		free(dir->ents[i].name);
		memmove(&dir->ents[i], &dir->ents[i + 1], (dir->nents - i - 1) * sizeof(*dir->ents));
		dir->nents--;
		__atomic_add_fetch(&entries_removed, 1, __ATOMIC_RELAXED);
		return id;
	}
	return 0;
}

uint32_t dir_seek(const struct object *dir, uint64_t cookie)
{
	uint32_t lo = 0, hi = dir->nents;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (dir->ents[mid].cookie <= cookie)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int dir_name_ok(const char *name)
{
	return name[0] && strcmp(name, ".") && strcmp(name, "..") && !strchr(name, '/');
}
