/* engine.c — engine discovery (/proc scan by executable), USDT note lookup (libelf)
 * and the stats-socket client, its JSON answers parsed by json-c. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <json-c/json.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>
#include "engine_process.h"
#include "strata_probes.h"

#define STATS_MAX_BYTES (256 * 1024)
#define STATS_TIMEOUT_MS 300

bool engine_binary_usable(const char *path, char *why, size_t n)
{
	if (!path) {
		snprintf(why, n, "engine binary not found (give --engine PATH or --engine-pid PID)");
		return false;
	}
	if (access(path, R_OK) != 0) {
		snprintf(why, n, "engine binary %s is not readable", path);
		return false;
	}
	return true;
}

/* A note of an ELF file. */
struct note {
	const char *name;  /* NUL-terminated */
	GElf_Word type;
	const char *desc;
	size_t size;       /* of desc */
	size_t addr;       /* bytes of an address in the file: 4 or 8 */
};

/* Calls fn(note, ctx) for each note of the ELF file at path until fn returns non-zero;
 * returns that value, 0 after the last note, -1 if the file is no readable ELF. */
static int each_note(const char *path, int (*fn)(const struct note *, void *), void *ctx)
{
	int fd, found = 0;
	Elf *elf;
	Elf_Scn *scn = NULL;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return -1;
	}
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off, next;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE || !(data = elf_getdata(scn, NULL)))
			continue;
		while (!found && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
			struct note note = { (const char *)data->d_buf + name_off, nh.n_type,
					     (const char *)data->d_buf + desc_off, nh.n_descsz,
					     gelf_getclass(elf) == ELFCLASS32 ? 4 : 8 };

			off = next;
			if (nh.n_namesz && !note.name[nh.n_namesz - 1])  /* a name, NUL-terminated */
				found = fn(&note, ctx);
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

/* A stapsdt note of provider strata and probe name ctx. desc: pc, base, semaphore, then
 * "provider\0name\0args\0". */
static int is_probe(const struct note *n, void *ctx)
{
	const char *probe = ctx, *desc = n->desc;
	size_t addrs = 3 * n->addr, size = n->size, prov_len;

	if (n->type != 3 || strcmp(n->name, "stapsdt") || size <= addrs)
		return 0;
	prov_len = strnlen(desc + addrs, size - addrs);
	if (prov_len + 1 >= size - addrs || strcmp(desc + addrs, "strata"))
		return 0;
	return strnlen(desc + addrs + prov_len + 1, size - addrs - prov_len - 1) == strlen(probe) &&
	       !strncmp(desc + addrs + prov_len + 1, probe, strlen(probe));
}

int engine_has_probe(const char *path, const char *probe)
{
	return each_note(path, is_probe, (void *)probe);
}

/* The note of the probe layout (engine/strata_probes.h): its number. */
static int layout_of(const struct note *n, void *ctx)
{
	__u32 layout;

	(void)ctx;
	if (n->type != STRATA_PROBE_LAYOUT_NOTE || strcmp(n->name, "strata") || n->size != sizeof(layout))
		return 0;
	memcpy(&layout, n->desc, sizeof(layout));
	return layout <= INT_MAX ? (int)layout : 0; /* 0: none this collector could read */
}

int engine_probe_layout(const char *path)
{
	return each_note(path, layout_of, NULL);
}

char *engine_exe_of(pid_t pid)
{
	char link[64], target[PATH_MAX];
	ssize_t len;

	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	len = readlink(link, target, sizeof(target) - 1);
	if (len <= 0)
		return NULL;
	target[len] = 0;
	return strdup(target);
}

/* Start time (clock ticks since boot) of pid, field 22 of /proc/PID/stat; 0 if unknown. */
static unsigned long long start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long t = 0;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = 0;
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			  &t) != 1)
		return 0;
	return t;
}

pid_t engine_find_pid(const char *exe)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	pid_t best = -1;
	unsigned long long best_start = 0;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char *end, *target;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0 || pid == getpid())
			continue;
		target = engine_exe_of((pid_t)pid);
		if (target && strcmp(target, exe) == 0) {
			unsigned long long st = start_time((pid_t)pid);

			if (best < 0 || st >= best_start) {
				best = (pid_t)pid;
				best_start = st;
			}
		}
		free(target);
	}
	closedir(d);
	return best;
}

static const char *socket_given; /* --stats-socket: the engine's socket, not /run/strata/engine-PID.sock */

void engine_stats_socket_use(const char *path)
{
	socket_given = path;
}

/* One request line to the stats socket of pid; the whole answer (malloc'ed, *len bytes, not
 * NUL-terminated), or NULL with a reason in why. */
static char *request(pid_t pid, const char *line, size_t *len, char *why, size_t n)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = 0, .tv_usec = STATS_TIMEOUT_MS * 1000 };
	size_t want = strlen(line);
	char *buf = NULL;
	ssize_t got = 0;
	int fd;

	*len = 0;
	if (socket_given)
		snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", socket_given);
	else
		snprintf(addr.sun_path, sizeof(addr.sun_path), "/run/strata/engine-%d.sock", (int)pid);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int e = errno;

		if (e == EAGAIN || e == EWOULDBLOCK)
			snprintf(why, n, "engine stats socket %s: not accepted within %d ms (a busy engine or machine)",
				 addr.sun_path, STATS_TIMEOUT_MS);
		else
			snprintf(why, n, "engine stats socket %s: %s%s", addr.sun_path, strerror(e),
				 e == ENOENT && !socket_given ? " (an engine serving with --stats-socket PATH: give "
								"strata collect --stats-socket PATH)" : "");
		goto fail;
	}
	/* one writev: a server that answers its first read and closes must not see a second write */
	if (writev(fd, (struct iovec[]){ { (void *)line, want }, { "\n", 1 } }, 2) != (ssize_t)(want + 1)) {
		snprintf(why, n, "engine stats socket %s: write failed", addr.sun_path);
		goto fail;
	}
	if (!(buf = malloc(STATS_MAX_BYTES))) {
		snprintf(why, n, "out of memory");
		goto fail;
	}
	while (*len < STATS_MAX_BYTES && (got = read(fd, buf + *len, STATS_MAX_BYTES - *len)) > 0)
		*len += (size_t)got;
	if (*len == 0) {
		int e = errno;

		if (got < 0 && (e == EAGAIN || e == EWOULDBLOCK))
			snprintf(why, n, "engine stats socket %s: no answer within %d ms (a busy engine or machine)",
				 addr.sun_path, STATS_TIMEOUT_MS);
		else
			snprintf(why, n, "engine stats socket %s: %s", addr.sun_path, got < 0 ? strerror(e) : "empty reply");
		goto fail;
	}
	close(fd);
	return buf;
fail:
	free(buf);
	if (fd >= 0)
		close(fd);
	return NULL;
}

struct json_object *engine_ask(pid_t pid, const char *line, char *why, size_t n)
{
	size_t len, end;
	char *buf = request(pid, line, &len, why, n);
	struct json_tokener *tok;
	struct json_object *answer = NULL;

	if (!buf)
		return NULL;
	if ((tok = json_tokener_new())) {
		answer = json_tokener_parse_ex(tok, buf, len < INT_MAX ? (int)len : INT_MAX);
		for (end = json_tokener_get_parse_end(tok); end < len && isspace((unsigned char)buf[end]); end++)
			;
		if (!json_object_is_type(answer, json_type_object) || end < len) {
			json_object_put(answer);
			answer = NULL;
		}
		json_tokener_free(tok);
	}
	if (!answer)
		snprintf(why, n, "engine stats socket of pid %d: the answer to '%s' is not one JSON object", (int)pid,
			 line);
	free(buf);
	return answer;
}

int engine_stats_sample(pid_t pid, struct gauges *out, char *why, size_t n)
{
	struct json_object *stats = engine_ask(pid, "stats", why, n);

	out->n = 0;
	if (!stats)
		return -1;
	json_object_object_foreach(stats, group, members) {
		if (!json_object_is_type(members, json_type_object))
			continue;
		json_object_object_foreach(members, leaf, v) {
			if (out->n < GAUGES_MAX &&
			    (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))) {
				snprintf(out->names[out->n], GAUGE_NAME_MAX, "%s.%s", group, leaf);
				out->values[out->n++] = json_object_get_double(v);
			}
		}
	}
	json_object_put(stats);
	return 0;
}

int gauges_find(const struct gauges *g, const char *name, double *value)
{
	for (size_t i = 0; i < g->n; i++) {
		if (strcmp(g->names[i], name) == 0) {
			*value = g->values[i];
			return 0;
		}
	}
	return -1;
}
