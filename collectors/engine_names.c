/* engine_names.c — engine file keys (object ids) to "EXPORT:/path" and back: the file
 * dimension's codec of the engine's layers.
 *
 * The engine answers "name ID" with the object's generation, its path inside its
 * export and R, the count of directory entries it has removed so far (engine/names.h).
 * A name stays right while R has not moved: only a removed entry (rename, remove,
 * rmdir) can take a name away from an object or give it to another. So a cached name
 * is printed only while the R the engine reports at the start of the record (one
 * "removed" request per record, made only when a file key is printed) equals the R it
 * was found under; otherwise it is asked again, and its generation compared: a cached
 * entry of another generation (an id reused by a new pool) is never printed. At most
 * ASKS_PER_RECORD names are asked per record (the engine searches its namespace under
 * its namespace lock); keys beyond them, and objects the engine cannot name, have no
 * name here for that record (they print as object:ID). */
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <errno.h>
#include "engine_process.h"
#include "engine_names.h"
#include "keys.h"

#define CACHE_SLOTS 4096 /* a power of two */
#define PATH_MAX_TEXT 4200
#define ASKS_PER_RECORD 64 /* name requests per record: each holds the engine's ns_lock a while */

struct name {
	uint64_t id, gen, removed;
	char *text; /* "EXPORT:/path" */
};

static struct name cache[CACHE_SLOTS];
static pid_t engine_pid = -1;
static uint64_t removed_now;
static bool removed_known, removed_asked;
static int asks_left;

static struct name *slot_of(uint64_t id)
{
	return &cache[(id * 0x9e3779b97f4a7c15ull) >> 52 & (CACHE_SLOTS - 1)];
}

static void forget_all(void)
{
	for (size_t i = 0; i < CACHE_SLOTS; i++) {
		free(cache[i].text);
		cache[i] = (struct name){ 0 };
	}
}

void engine_names_use(pid_t pid)
{
	if (pid != engine_pid)
		forget_all();
	engine_pid = pid;
	removed_asked = false;
	asks_left = ASKS_PER_RECORD;
}

static bool member_u64(struct json_object *answer, const char *key, uint64_t *v)
{
	struct json_object *m;

	if (!json_object_object_get_ex(answer, key, &m) || !json_object_is_type(m, json_type_int) ||
	    json_object_get_int64(m) < 0)
		return false;
	*v = json_object_get_uint64(m);
	return true;
}

/* The string member key of answer, or NULL. */
static const char *member_string(struct json_object *answer, const char *key)
{
	struct json_object *m;

	return json_object_object_get_ex(answer, key, &m) && json_object_is_type(m, json_type_string) ?
		       json_object_get_string(m) : NULL;
}

/* The engine's count of removed entries, asked once per record. */
static bool removed_count(uint64_t *r)
{
	char why[256];
	struct json_object *ans;

	if (!removed_asked) {
		removed_asked = true;
		ans = engine_ask(engine_pid, "removed", why, sizeof(why));
		removed_known = ans && member_u64(ans, "removed", &removed_now);
		json_object_put(ans);
	}
	*r = removed_now;
	return removed_known;
}

/* Asks the engine for the name of id and caches it. */
static struct name *ask(uint64_t id)
{
	char line[48], why[256];
	struct name *s = slot_of(id), fresh = { .id = id };
	struct json_object *ans;
	const char *export, *path;

	snprintf(line, sizeof(line), "name %" PRIu64, id);
	ans = engine_ask(engine_pid, line, why, sizeof(why));
	if (!ans)
		return NULL;
	if (member_u64(ans, "gen", &fresh.gen) && member_u64(ans, "removed", &fresh.removed) &&
	    (export = member_string(ans, "export")) && (path = member_string(ans, "path")) && path[0] == '/' &&
	    asprintf(&fresh.text, "%s:%s", export, path) < 0)
		fresh.text = NULL;
	json_object_put(ans);
	if (!fresh.text)
		return NULL;
	if (s->text && s->id == id && s->gen != fresh.gen) { /* the id names another object now */
		free(fresh.text);
		free(s->text);
		*s = (struct name){ 0 };
		return NULL;
	}
	free(s->text);
	*s = fresh;
	return s;
}

/* "EXPORT:/path" of object id now into out: true, or false when the engine has no name
 * for it (gone, not running, not found). */
static bool object_name(uint64_t id, char *out, size_t n)
{
	struct name *s = slot_of(id);
	uint64_t r;

	if (engine_pid <= 0 || !removed_count(&r))
		return false;
	if (!s->text || s->id != id || s->removed != r)
		s = asks_left-- > 0 ? ask(id) : NULL;
	if (!s || s->removed != r) /* a removal between the two answers: not sure of this name */
		return false;
	snprintf(out, n, "%s", s->text);
	return true;
}

/* The object id that "EXPORT:/path" names now: 0, or -1 with a message in err. */
static int object_find(const char *path, uint64_t *id, char *err, size_t n)
{
	char line[PATH_MAX_TEXT + 16], why[256];
	struct json_object *ans;
	const char *msg;
	int rc = -1;

	if (engine_pid <= 0) {
		snprintf(err, n, "file '%s': no running engine to find it in (object:ID works without one)", path);
		return -1;
	}
	if (strlen(path) > PATH_MAX_TEXT || strpbrk(path, "\r\n")) {
		snprintf(err, n, "file '%s' is not one line of at most %d bytes", path, PATH_MAX_TEXT);
		return -1;
	}
	snprintf(line, sizeof(line), "lookup %s", path);
	if (!(ans = engine_ask(engine_pid, line, why, sizeof(why)))) {
		snprintf(err, n, "file '%s': %s", path, why);
		return -1;
	}
	if (member_u64(ans, "id", id))
		rc = 0;
	else if ((msg = member_string(ans, "error")))
		snprintf(err, n, "file '%s': %s", path, msg);
	else
		snprintf(err, n, "file '%s': the engine's answer is not the expected JSON", path);
	json_object_put(ans);
	return rc;
}

/* engine file key (object id) -> "EXPORT:/path" (the engine's name now), else object:ID. */
static void file_format(const uint8_t key[AGG_KEY_BYTES], char *out, size_t n)
{
	uint64_t id;

	memcpy(&id, key, sizeof(id));
	if (!object_name(id, out, n))
		snprintf(out, n, "object:%" PRIu64, id);
}

/* object:ID, a bare ID, or EXPORT:/path (asked of the engine) -> engine file key. */
static int file_parse(const char *text, uint8_t key[AGG_KEY_BYTES], char *err, size_t n)
{
	const char *digits = strncmp(text, "object:", 7) == 0 ? text + 7 : text;
	const char *colon = strchr(text, ':');
	uint64_t id;
	char *end;

	errno = 0;
	id = strtoull(digits, &end, 10);
	if (!(isdigit((unsigned char)digits[0]) && !*end && !errno)) {
		if (!colon || colon == text || colon[1] != '/') {
			snprintf(err, n, "file '%s' is not EXPORT:/path or object:ID", text);
			return -1;
		}
		if (object_find(text, &id, err, n) < 0)
			return -1;
	}
	memcpy(key, &id, sizeof(id));
	return 0;
}

const struct key_codec engine_file_keys[] = { { AGG_DIM_FILE, file_format, file_parse }, { 0 } };
