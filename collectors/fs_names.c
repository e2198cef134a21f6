/* fs_names.c — the fs layer's keys as text: files (device, inode) as paths, processes as
 * comm:pid (fs_keys, its codec).
 *
 * A path is only ever printed for an inode after stat(path) showed that very inode,
 * at the time it is printed: a cache entry whose path now names another inode (the
 * file was renamed or deleted, another took its name) is dropped. Paths come from the
 * open files of the followed processes: /proc/PID/fd/N is opened (O_PATH, our own
 * reference to the same file), and the path readlink gives for our descriptor is kept
 * only if it stats to the inode fstat shows. An inode no followed process holds open
 * any more, and never seen under a name, has no path (it prints as inode:MAJ,MIN:INO).
 * On an overlayfs whose layers lie on several file systems (without xino), stat shows a
 * file on its layer's device while the kernel's inode is the overlay's: such a file is
 * matched by the device of its directory, which stat shows as the overlay's. */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/libbpf.h>
#include <ctype.h>
#include <errno.h>
#include "clock.h"
#include "fs_processes.h"
#include "fs_names.h"
#include "keys.h"

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

static uint32_t kernel_dev(dev_t dev)
{
	return major(dev) << 20 | minor(dev);
}

static struct name *slot_of(uint64_t ino, uint32_t dev)
{
	return &cache[(ino * 0x9e3779b97f4a7c15ull ^ dev) & (CACHE_SLOTS - 1)];
}

/* The kernel dev_t of the inode behind path, which stat described as st. */
static uint32_t inode_dev(const char *path, const struct stat *st)
{
	char dir[PATH_MAX], *slash;
	struct stat parent;
	struct statfs fs;

	if (statfs(path, &fs) != 0 || fs.f_type != OVERLAYFS_SUPER_MAGIC)
		return kernel_dev(st->st_dev);
	snprintf(dir, sizeof(dir), "%s", path);
	if (!(slash = strrchr(dir, '/')))
		return kernel_dev(st->st_dev);
	slash[slash == dir] = 0; /* "/name" -> "/" */
	return stat(dir, &parent) == 0 ? kernel_dev(parent.st_dev) : kernel_dev(st->st_dev);
}

static bool names_inode(const char *path, uint64_t ino, uint32_t dev)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_ino == ino && inode_dev(path, &st) == dev;
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
		path[len] = 0;
		if (path[0] == '/') {
			uint32_t dev = inode_dev(path, &st);

			if (names_inode(path, st.st_ino, dev))
				remember(st.st_ino, dev, path);
		}
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

	last_scan_ns = (long long)clock_mono_ns();
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

/* A path whose stat() shows this inode now into out: true, or false when none is known. */
static bool file_name(const struct agg_fs_file *f, char *out, size_t n)
{
	const char *path = cached(f->ino, f->dev);

	if (!path && (long long)clock_mono_ns() - last_scan_ns >= SCAN_EVERY_NS) {
		scan_open_files();
		path = cached(f->ino, f->dev);
	}
	if (path)
		snprintf(out, n, "%s", path);
	return path != NULL;
}

/* fs file key -> a path that names that inode now, else inode:MAJ,MIN:INO. */
static void file_format(const uint8_t key[AGG_KEY_BYTES], char *out, size_t n)
{
	struct agg_fs_file f;

	memcpy(&f, key, sizeof(f));
	if (!names_rb || !file_name(&f, out, n)) /* paths only while the layer is loaded */
		snprintf(out, n, "inode:%u,%u:%" PRIu64, f.dev >> 20, f.dev & 0xfffff, (uint64_t)f.ino);
}

/* An existing regular file's path (its inode) or inode:MAJ,MIN:INO -> fs file key. */
static int file_parse(const char *text, uint8_t key[AGG_KEY_BYTES], char *err, size_t n)
{
	struct agg_fs_file f = { 0 };
	unsigned maj, min;
	uint64_t ino;
	struct stat st;
	int used = 0;

	if (sscanf(text, "inode:%u,%u:%" SCNu64 "%n", &maj, &min, &ino, &used) == 3 && !text[used]) {
		f.ino = ino;
		f.dev = maj << 20 | (min & 0xfffff);
	} else if (text[0] == '/' && stat(text, &st) == 0 && S_ISREG(st.st_mode)) {
		f.ino = st.st_ino;
		f.dev = major(st.st_dev) << 20 | minor(st.st_dev);
	} else {
		snprintf(err, n, "'%s' is not a regular file's path or inode:MAJ,MIN:INO", text);
		return -1;
	}
	memcpy(key, &f, sizeof(f));
	return 0;
}

/* fs process key -> "comm:pid", with the full comm while the same-named process runs. */
static void process_format(const uint8_t key[AGG_KEY_BYTES], char *out, size_t n)
{
	char comm[AGG_FS_COMM_BYTES + 1], full[32] = "", path[64];
	struct agg_fs_process p;
	FILE *f;

	memcpy(&p, key, sizeof(p));
	memcpy(comm, p.comm, AGG_FS_COMM_BYTES);
	comm[AGG_FS_COMM_BYTES] = 0;
	snprintf(path, sizeof(path), "/proc/%u/comm", p.tgid);
	if ((f = fopen(path, "r"))) {
		if (fgets(full, sizeof(full), f))
			full[strcspn(full, "\n")] = 0;
		fclose(f);
	}
	snprintf(out, n, "%s:%u", full[0] && strncmp(full, comm, AGG_FS_COMM_BYTES) == 0 ? full : comm, p.tgid);
}

/* "comm:pid" -> fs process key (the comm's first AGG_FS_COMM_BYTES bytes). */
static int process_parse(const char *text, uint8_t key[AGG_KEY_BYTES], char *err, size_t n)
{
	struct agg_fs_process p = { 0 };
	const char *colon = strrchr(text, ':');
	char *end;
	unsigned long pid;

	errno = 0;
	pid = colon ? strtoul(colon + 1, &end, 10) : 0;
	if (!colon || colon == text || colon - text > 15 || errno || !isdigit((unsigned char)colon[1]) || *end ||
	    pid == 0 || pid > INT32_MAX) {
		snprintf(err, n, "'%s' is not a valid process", text);
		return -1;
	}
	p.tgid = (uint32_t)pid;
	memcpy(p.comm, text, (size_t)(colon - text) < AGG_FS_COMM_BYTES ? (size_t)(colon - text) : AGG_FS_COMM_BYTES);
	memcpy(key, &p, sizeof(p));
	return 0;
}

const struct key_codec fs_keys[] = {
	{ AGG_DIM_FILE, file_format, file_parse },
	{ AGG_DIM_PROCESS, process_format, process_parse },
	{ 0 },
};
