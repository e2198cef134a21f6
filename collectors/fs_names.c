/* fs_names.c — file keys (device, inode) to paths, and process keys to comm:pid.
 *
 * A path is only ever printed for an inode after stat(path) showed that very inode,
 * at the time it is printed: a cache entry whose path now names another inode (the
 * file was renamed or deleted, another took its name) is dropped. Paths come from the
 * open files of the followed processes: /proc/PID/fd/N is opened (O_PATH, our own
 * reference to the same file), and the path readlink gives for our descriptor is kept
 * only if it stats to the inode fstat shows. An inode no followed process holds open
 * any more, and never seen under a name, prints as inode:MAJ,MIN:INO. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "fs.h"
#include "fs_names.h"

#define CACHE_SLOTS 4096 /* a power of two */
#define SCAN_EVERY_NS 500000000LL
#define SCAN_PIDS 1024

struct name {
	uint64_t ino;
	uint32_t dev; /* kernel dev_t, as in the key */
	char *path;
};

static struct name cache[CACHE_SLOTS];
static struct ring_buffer *names_rb;
static long long last_scan_ns = -SCAN_EVERY_NS;

static dev_t user_dev(uint32_t kdev)
{
	return makedev(kdev >> 20, kdev & 0xfffff);
}

static uint32_t kernel_dev(dev_t dev)
{
	return major(dev) << 20 | minor(dev);
}

static struct name *slot_of(uint64_t ino, uint32_t dev)
{
	return &cache[(ino * 0x9e3779b97f4a7c15ull ^ dev) & (CACHE_SLOTS - 1)];
}

static bool names_inode(const char *path, uint64_t ino, uint32_t dev)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == ino && st.st_dev == user_dev(dev);
}

static void remember(uint64_t ino, uint32_t dev, const char *path)
{
	struct name *s = slot_of(ino, dev);
	char *copy = strdup(path);

	if (!copy)
		return;
	free(s->path);
	*s = (struct name){ ino, dev, copy };
}

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Learns the path of one open file of pid, if it still names that file. */
static void learn_fd(pid_t pid, const char *fdname)
{
	char link[64], self[64], path[PATH_MAX];
	struct stat st;
	ssize_t len;
	int fd;

	snprintf(link, sizeof(link), "/proc/%d/fd/%s", (int)pid, fdname);
	if ((fd = open(link, O_PATH | O_CLOEXEC)) < 0)
		return;
	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (len = readlink(self, path, sizeof(path) - 1)) > 0) {
		uint32_t dev = kernel_dev(st.st_dev);

		path[len] = 0;
		if (path[0] == '/' && names_inode(path, st.st_ino, dev))
			remember(st.st_ino, dev, path);
	}
	close(fd);
}

/* Learns the path an openat was given, if it names the inode opened. */
static int learn_open(void *ctx, void *data, size_t size)
{
	const struct agg_fs_name *e = data;
	char base[64], dir[PATH_MAX], joined[2 * PATH_MAX + 2], real[PATH_MAX];
	const char *path = e->path;
	ssize_t len;

	(void)ctx;
	if (size < sizeof(*e) || !e->path[0] || memchr(e->path, 0, sizeof(e->path)) == NULL)
		return 0;
	if (path[0] != '/') {
		if (e->dirfd == AT_FDCWD)
			snprintf(base, sizeof(base), "/proc/%u/cwd", e->tgid);
		else
			snprintf(base, sizeof(base), "/proc/%u/fd/%d", e->tgid, e->dirfd);
		if ((len = readlink(base, dir, sizeof(dir) - 1)) <= 0)
			return 0;
		dir[len] = 0;
		snprintf(joined, sizeof(joined), "%s/%s", dir, path);
		path = joined;
	}
	if (realpath(path, real) && names_inode(real, e->file.ino, e->file.dev))
		remember(e->file.ino, e->file.dev, real);
	return 0;
}

int fs_names_bind(int ringbuf_fd)
{
	fs_names_unbind();
	names_rb = ring_buffer__new(ringbuf_fd, learn_open, NULL, NULL);
	return names_rb ? 0 : -1;
}

void fs_names_drain(void)
{
	if (names_rb)
		ring_buffer__consume(names_rb);
}

void fs_names_unbind(void)
{
	ring_buffer__free(names_rb);
	names_rb = NULL;
}

/* Learns the paths of every open regular file of the followed processes. */
static void scan_open_files(void)
{
	static pid_t pids[SCAN_PIDS];
	size_t npids = fs_chosen_pids(pids, SCAN_PIDS);
	char dir[64];

	last_scan_ns = now_ns();
	for (size_t i = 0; i < npids; i++) {
		struct dirent *e;
		DIR *d;

		snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pids[i]);
		if (!(d = opendir(dir)))
			continue;
		while ((e = readdir(d)))
			if (e->d_name[0] != '.')
				learn_fd(pids[i], e->d_name);
		closedir(d);
	}
}

/* The cached path of the inode if it still names it. */
static const char *cached(uint64_t ino, uint32_t dev)
{
	struct name *s = slot_of(ino, dev);

	if (!s->path || s->ino != ino || s->dev != dev)
		return NULL;
	if (names_inode(s->path, ino, dev))
		return s->path;
	free(s->path);
	s->path = NULL;
	return NULL;
}

void fs_file_name(const struct agg_fs_file *f, char *out, size_t n)
{
	const char *path = cached(f->ino, f->dev);

	if (!path && now_ns() - last_scan_ns >= SCAN_EVERY_NS) {
		scan_open_files();
		path = cached(f->ino, f->dev);
	}
	if (path)
		snprintf(out, n, "%s", path);
	else
		snprintf(out, n, "inode:%u,%u:%" PRIu64, f->dev >> 20, f->dev & 0xfffff, (uint64_t)f->ino);
}

void fs_process_name(const struct agg_fs_process *p, char *out, size_t n)
{
	char comm[AGG_FS_COMM_BYTES + 1], full[32] = "", path[64];
	FILE *f;

	memcpy(comm, p->comm, AGG_FS_COMM_BYTES);
	comm[AGG_FS_COMM_BYTES] = 0;
	snprintf(path, sizeof(path), "/proc/%u/comm", p->tgid);
	if ((f = fopen(path, "r"))) {
		if (fgets(full, sizeof(full), f))
			full[strcspn(full, "\n")] = 0;
		fclose(f);
	}
	/* the full name (the key holds its first bytes) while the same-named process lives */
	snprintf(out, n, "%s:%u", full[0] && strncmp(full, comm, AGG_FS_COMM_BYTES) == 0 ? full : comm, p->tgid);
}

int fs_file_parse(const char *text, uint8_t key[AGG_KEY_BYTES])
{
	struct agg_fs_file f = { 0 };
	unsigned major, minor;
	uint64_t ino;
	struct stat st;
	int used = 0;

	if (sscanf(text, "inode:%u,%u:%" SCNu64 "%n", &major, &minor, &ino, &used) == 3 && !text[used]) {
		f.ino = ino;
		f.dev = major << 20 | (minor & 0xfffff);
	} else if (text[0] == '/' && stat(text, &st) == 0 && S_ISREG(st.st_mode)) {
		f.ino = st.st_ino;
		f.dev = kernel_dev(st.st_dev);
	} else {
		return -1;
	}
	memset(key, 0, AGG_KEY_BYTES);
	memcpy(key, &f, sizeof(f));
	return 0;
}

int fs_process_parse(const char *text, uint8_t key[AGG_KEY_BYTES])
{
	struct agg_fs_process p = { 0 };
	const char *colon = strrchr(text, ':');
	char *end;
	unsigned long pid;

	if (!colon || colon == text || (size_t)(colon - text) > 15)
		return -1;
	pid = strtoul(colon + 1, &end, 10);
	if (end == colon + 1 || *end || pid == 0 || pid > INT_MAX)
		return -1;
	p.tgid = (uint32_t)pid;
	memcpy(p.comm, text, (size_t)(colon - text) < AGG_FS_COMM_BYTES ? (size_t)(colon - text) : AGG_FS_COMM_BYTES);
	memcpy(key, &p, sizeof(p));
	return 0;
}
