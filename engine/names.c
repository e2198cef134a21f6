/* names.c — object ids to paths inside their export and back, for the stats
 * socket's "name" and "lookup" requests (see names.h).
 *
 * Both run under ns_lock, which every namespace change holds, so the entries
 * read are consistent.  A name is found breadth-first from the export's root,
 * entries in cookie order: a file with hard links is named by its shallowest,
 * oldest link.  The search visits at most NAMES_SEARCH_MAX entries, so a huge
 * namespace bounds the time ns_lock is held (such an object has no name). */
#include "names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dir.h"
#include "engine.h"
#include "siphash.h"
#include "util.h"

#define NAMES_SEARCH_MAX 200000
#define NAMES_PATH_MAX 4096

/* The object's generation as the socket shows it: a keyed digest of (id, gen), equal for
 * the same object and different for another, which does not disclose the generation
 * (part of every file handle). */
static uint8_t tag_key[SIPHASH_KEY_SIZE];
static pthread_once_t tag_key_once = PTHREAD_ONCE_INIT;

static void tag_keygen(void)
{
	xrandom(tag_key, sizeof(tag_key));
}

static uint64_t gen_tag(const struct object *o)
{
	uint64_t msg[2] = { o->id, o->gen };

	pthread_once(&tag_key_once, tag_keygen);
	return siphash24(tag_key, msg, sizeof(msg));
}

/* The name of child `id` in directory `dir` (caller holds ns_lock), or NULL. */
static const char *entry_name(const struct object *dir, uint64_t id)
{
	for (uint32_t i = 0; i < dir->nents; i++)
		if (dir->ents[i].objid == id)
			return dir->ents[i].name;
	return NULL;
}

/* The directory holding the first link of `id` breadth-first from root, or 0. */
static uint64_t find_parent(struct objset *os, uint64_t root, uint64_t id)
{
	uint64_t *queue = xmalloc(64 * sizeof(*queue)), found = 0;
	size_t head = 0, tail = 0, cap = 64, visited = 0;

	queue[tail++] = root;
	while (head < tail && !found && visited < NAMES_SEARCH_MAX) {
		struct object *dir = obj_get(os, queue[head++]);
		if (!dir)
			continue;
		for (uint32_t i = 0; i < dir->nents && visited < NAMES_SEARCH_MAX; i++, visited++) {
			if (dir->ents[i].objid == id) {
				found = dir->id;
				break;
			}
			struct object *child = obj_get(os, dir->ents[i].objid);
			if (child && child->type == OBJ_DIR) {
				if (tail == cap)
					queue = xrealloc(queue, (cap *= 2) * sizeof(*queue));
				queue[tail++] = child->id;
			}
			if (child)
				obj_put(child);
		}
		obj_put(dir);
	}
	free(queue);
	return found;
}

/* Prepends "/name" to the path being built backwards in buf[*at..]; -1 if it does not
 * fit or holds a control character (such a path is not printed). */
static int prepend(char *buf, size_t *at, const char *name)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return -1;
	if (len + 1 > *at)
		return -1;
	*at -= len;
	memcpy(buf + *at, name, len);
	buf[--*at] = '/';
	return 0;
}

/* Path of `o` inside its dataset into buf (caller holds ns_lock); 0, or -1 if it has none. */
static int path_of(struct objset *os, const struct dataset *ds, struct object *o, char *buf, size_t n)
{
	size_t at = n - 1;
	uint64_t id = o->id, parent = o->type == OBJ_DIR ? o->parent : find_parent(os, ds->root, o->id);
	int depth = 0;

	buf[at] = 0;
	if (id == ds->root) {
		snprintf(buf, n, "/");
		return 0;
	}
	while (id != ds->root) {
		struct object *dir = parent ? obj_get(os, parent) : NULL;
		const char *name = dir ? entry_name(dir, id) : NULL;
		int rc = name && ++depth < 4096 ? prepend(buf, &at, name) : -1;
		id = parent;
		parent = dir ? dir->parent : 0;
		if (dir)
			obj_put(dir);
		if (rc < 0)
			return -1;
	}
	memmove(buf, buf + at, n - at);
	return 0;
}

char *names_name_json(const char *arg)
{
	struct objset *os = g_engine.os;
	char *end, *out = xmalloc(256);
	unsigned long long id = strtoull(arg, &end, 10);
	char path[NAMES_PATH_MAX];

	if (end == arg || *end) {
		snprintf(out, 256, "{\"error\":\"name: give an object id\"}\n");
		return out;
	}
	pthread_mutex_lock(&os->ns_lock);
	uint64_t removed = dir_entries_removed();
	struct object *o = obj_get(os, id);
	struct dataset *ds = o ? objset_dataset_by_id(os, o->dsid) : NULL;
	int rc = ds && !o->removed ? path_of(os, ds, o, path, sizeof(path)) : -1;
	if (rc == 0) {
		char *esc = json_escaped(path), *dsname = json_escaped(ds->name);
		size_t cap = strlen(esc) + strlen(dsname) + 256;
		out = xrealloc(out, cap);
		snprintf(out, cap,
			 "{\"id\":%llu,\"gen\":%llu,\"export\":\"%s\",\"path\":\"%s\",\"links\":%u,\"removed\":%llu}\n",
			 id, (unsigned long long)gen_tag(o), dsname, esc, o->nlink, (unsigned long long)removed);
		free(esc);
		free(dsname);
	} else {
		snprintf(out, 256, "{\"id\":%llu,\"removed\":%llu}\n", id, (unsigned long long)removed);
	}
	if (o)
		obj_put(o);
	pthread_mutex_unlock(&os->ns_lock);
	return out;
}

char *names_lookup_json(const char *arg)
{
	struct objset *os = g_engine.os;
	char *out = xmalloc(256), spec[NAMES_PATH_MAX];
	const char *colon = strchr(arg, ':');

	if (!colon || colon == arg || (size_t)(colon - arg) >= DATASET_NAME_MAX || colon[1] != '/' ||
	    strlen(colon) >= sizeof(spec)) {
		snprintf(out, 256, "{\"error\":\"lookup: give EXPORT:/PATH\"}\n");
		return out;
	}
	char dsname[DATASET_NAME_MAX];
	memcpy(dsname, arg, (size_t)(colon - arg));
	dsname[colon - arg] = 0;
	snprintf(spec, sizeof(spec), "%s", colon + 1);
	pthread_mutex_lock(&os->ns_lock);
	struct dataset *ds = NULL;
	for (uint32_t i = 0; i < os->ndatasets && !ds; i++)
		if (!strcmp(os->datasets[i]->name, dsname))
			ds = os->datasets[i];
	uint64_t id = ds ? ds->root : 0, gen = 0;
	char *save = NULL;
	for (char *name = strtok_r(spec, "/", &save); name && id; name = strtok_r(NULL, "/", &save)) {
		struct object *dir = obj_get(os, id);
		id = dir && dir->type == OBJ_DIR ? dir_lookup(dir, name) : 0;
		if (dir)
			obj_put(dir);
	}
	struct object *o = id ? obj_get(os, id) : NULL;
	if (o) {
		gen = gen_tag(o);
		obj_put(o);
	}
	pthread_mutex_unlock(&os->ns_lock);
	char *esc = json_escaped(dsname);
	size_t cap = strlen(esc) + 64;
	out = xrealloc(out, cap);
	if (!ds)
		snprintf(out, cap, "{\"error\":\"no export named %s\"}\n", esc);
	else if (!o)
		snprintf(out, cap, "{\"error\":\"no such file in export %s\"}\n", esc);
	else
		snprintf(out, cap, "{\"id\":%llu,\"gen\":%llu}\n", (unsigned long long)id, (unsigned long long)gen);
	free(esc);
	return out;
}

char *names_removed_json(void)
{
	char *out = xmalloc(64);
	snprintf(out, 64, "{\"removed\":%llu}\n",
		 (unsigned long long)dir_entries_removed());
	return out;
}
