/* devlock.c — one engine per device (devlock.h): the OFD lock, and finding which
 * process holds it (an OFD lock's owner is an open file, not a pid: /proc/PID/fd). */
#include "devlock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int same_file(const struct stat *a, const struct stat *b)
{
	if (S_ISBLK(a->st_mode) && S_ISBLK(b->st_mode))
		return a->st_rdev == b->st_rdev;
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* The pid of another process with the file of fd open (0: none found), its name in comm. */
static int opener(int fd, char *comm, size_t commsz)
{
	struct stat want, st;
	if (fstat(fd, &want))
		return 0;
	DIR *procs = opendir("/proc");
	if (!procs)
		return 0;
	int found = 0;
	struct dirent *p;
	while (!found && (p = readdir(procs))) {
		int pid = atoi(p->d_name);
		if (pid <= 0 || pid == getpid())
			continue;
		char dir[64];
		snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
		DIR *fds = opendir(dir);
		if (!fds)
			continue;
		struct dirent *f;
		while (!found && (f = readdir(fds))) {
			char link[320];
			snprintf(link, sizeof(link), "%s/%s", dir, f->d_name);
			if (f->d_name[0] != '.' && !stat(link, &st) && same_file(&want, &st))
				found = pid;
		}
		closedir(fds);
	}
	closedir(procs);
	snprintf(comm, commsz, "process");
	if (found) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/comm", found);
		FILE *f = fopen(path, "r");
		if (f) {
			if (fgets(comm, (int)commsz, f))
				comm[strcspn(comm, "\n")] = 0;
			fclose(f);
		}
	}
	return found;
}

int devlock_held(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	return !fcntl(fd, F_OFD_GETLK, &fl) && fl.l_type != F_UNLCK;
}

int devlock_take(int fd, const char *path, const char *who, char *err, size_t errsz)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET }; /* l_len 0: the whole file */
	if (!fcntl(fd, F_OFD_SETLK, &fl))
		return 0;
	if (errno != EAGAIN && errno != EACCES) {
		snprintf(err, errsz, "cannot lock %s: %s", path, strerror(errno));
		return -1;
	}
	char comm[32], pid[48] = "";
	int holder = opener(fd, comm, sizeof(comm));
	if (!holder) /* no other process has it open: the lock is this one's, on another
		      * descriptor (the pool's embedded log region is read through vdev 0 again) */
		return 0;
	snprintf(pid, sizeof(pid), " pid %d", holder);
	snprintf(err, errsz, "%s is in use by %s%s%s%s (one engine per pool: stop it first)", path,
		 comm, pid, who && *who ? ", " : "", who ? who : "");
	return -1;
}
