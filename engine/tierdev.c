/* tierdev.c — cache/log device access for the L2ARC and the ZIL (see tierdev.h). */
#include "tierdev.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devlock.h"

static int open_rw(const char *path, int extra, int *direct)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | O_DIRECT | extra, 0644);
	*direct = fd >= 0;
	if (fd < 0 && errno == EINVAL) /* e.g. tmpfs: no O_DIRECT */
		fd = open(path, O_RDWR | O_CLOEXEC | extra, 0644);
	return fd;
}

int tierdev_open(struct tierdev *d, const char *path, uint64_t create_size, char *err, size_t errsz)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	if (strlen(path) >= sizeof(d->path)) {
		snprintf(err, errsz, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	snprintf(d->path, sizeof(d->path), "%s", path);
	int fd = open_rw(path, 0, &d->direct);
	if (fd < 0 && errno == ENOENT && create_size) {
		fd = open_rw(path, O_CREAT | O_EXCL, &d->direct);
		if (fd >= 0) {
			int e = posix_fallocate(fd, 0, (off_t)create_size);
			if (e == EOPNOTSUPP || e == EINVAL)
				e = ftruncate(fd, (off_t)create_size) ? errno : 0;
			if (e) {
				snprintf(err, errsz, "%s: cannot size to %llu bytes: %s", path,
					 (unsigned long long)create_size, strerror(e));
				close(fd);
				unlink(path);
				return -e;
			}
		}
	}
	if (fd < 0) {
		int e = errno;
		snprintf(err, errsz, "%s: %s", path, strerror(e));
		return -e;
	}
	if (devlock_take(fd, path, NULL, err, errsz)) {
		close(fd);
		return -EBUSY;
	}
	struct stat st;
	if (fstat(fd, &st)) {
		int e = errno;
		snprintf(err, errsz, "%s: %s", path, strerror(e));
		close(fd);
		return -e;
	}
	if (S_ISBLK(st.st_mode)) {
		uint64_t sz;
		if (ioctl(fd, BLKGETSIZE64, &sz)) {
			int e = errno;
			snprintf(err, errsz, "%s: cannot get the device size: %s", path, strerror(e));
			close(fd);
			return -e;
		}
		d->size = sz;
	} else if (S_ISREG(st.st_mode)) {
		d->size = (uint64_t)st.st_size;
	} else {
		snprintf(err, errsz, "%s: not a regular file or block device", path);
		close(fd);
		return -EINVAL;
	}
	d->size -= d->size % TIERDEV_ALIGN;
	d->fd = fd;
	return 0;
}

void tierdev_close(struct tierdev *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

/* Whole transfer, retried after EINTR and short counts. */
static int xfer(struct tierdev *d, void *buf, size_t len, uint64_t off, int write)
{
	size_t done = 0;
	while (done < len) {
		char *p = (char *)buf + done;
		ssize_t n = write ? pwrite(d->fd, p, len - done, (off_t)(off + done))
				  : pread(d->fd, p, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;
		done += (size_t)n;
	}
	return 0;
}

int tierdev_pread(struct tierdev *d, void *buf, size_t len, uint64_t off)
{
	return xfer(d, buf, len, off, 0);
}

int tierdev_pwrite(struct tierdev *d, const void *buf, size_t len, uint64_t off)
{
	return xfer(d, (void *)buf, len, off, 1);
}

int tierdev_sync(struct tierdev *d)
{
	return fdatasync(d->fd) ? -errno : 0;
}

void *tierdev_alloc(size_t len)
{
	void *p;
	if (posix_memalign(&p, TIERDEV_ALIGN, len ? len : TIERDEV_ALIGN)) {
		fprintf(stderr, "strata-engine: out of memory (%zu bytes)\n", len);
		abort();
	}
	memset(p, 0, len);
	return p;
}
