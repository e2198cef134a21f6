/* pool.c — vdevs, labels, O_DIRECT aligned I/O with vdev_io probes, and the
 * bitmap allocator with deferred frees and its persisted space map. */
#include "pool.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "devlock.h"
#include "devmodel.h"
#include "strata_probes.h"
#include "util.h"

#define LABEL_MAGIC 0x5354524154414c31ull /* "STRATAL1" */
#define LABEL_VERSION 1
#define POOL_LOG_ROOM (8ull << 20) /* allocatable space an embedded log must leave */

struct label {
	uint64_t magic;
	uint32_t version;
	uint32_t index;
	uint32_t nvdevs;
	uint32_t recordsize;
	uint64_t guid;
	uint64_t size;
	struct cksum ck; /* fletcher4 of the fields above */
	/* Extension (zeros in labels written before it existed): vdev 0 keeps
	 * an embedded intent-log region of log_size bytes at its end, outside
	 * the allocator, for the ZIL when no separate log device is given. */
	uint64_t log_size;
	struct cksum log_ck; /* fletcher4 of log_size */
	/* Extension (zeros in labels written before it existed): the pool's
	 * secret, the key of the file-handle MAC, the same in every label. */
	uint8_t secret[SIPHASH_KEY_SIZE];
	struct cksum secret_ck; /* fletcher4 of secret */
};

/* The holder block, the 4 KiB after the label: which engine serves the pool from
 * this vdev (written by pool_claim; zeros in pools never served since).  The OFD
 * lock (devlock.h) is what excludes a second engine; this says who it is, also to
 * a reader on another host sharing the device. */
#define HOLDER_OFFSET POOL_BLOCK
#define HOLDER_MAGIC 0x5354524154414831ull /* "STRATAH1" */
struct holder {
	uint64_t magic;
	uint32_t pid;
	uint32_t pad;
	uint64_t since; /* unix seconds */
	char host[64];
	struct cksum ck; /* fletcher4 of the fields above */
};

/* "the label says: host H, pid N, since T" from fd's holder block ("" if it has none). */
static void holder_describe(int fd, char *who, size_t whosz)
{
	struct holder *h = xaligned(POOL_BLOCK);
	struct cksum ck;
	who[0] = 0;
	if (pread(fd, h, POOL_BLOCK, HOLDER_OFFSET) == POOL_BLOCK && h->magic == HOLDER_MAGIC) {
		fletcher4(h, offsetof(struct holder, ck), &ck);
		if (cksum_equal(&ck, &h->ck)) {
			char when[32];
			time_t t = (time_t)h->since;
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", gmtime(&t));
			h->host[sizeof(h->host) - 1] = 0;
			snprintf(who, whosz, "the label says: host %s, pid %u, since %s", h->host, h->pid, when);
		}
	}
	free(h);
}

/* Lock the vdev open on fd; -1 with err naming the holder when another engine has it. */
static int vdev_lock(int fd, const char *path, char *err, size_t errsz)
{
	if (!devlock_held(fd))
		return devlock_take(fd, path, NULL, err, errsz);
	char who[160];
	holder_describe(fd, who, sizeof(who));
	return devlock_take(fd, path, who, err, errsz);
}

/* The label's secret: 0 when absent (an older label) or not intact. */
static int label_secret(const struct label *l, uint8_t *out)
{
	static const uint8_t zero[SIPHASH_KEY_SIZE];
	struct cksum ck;
	fletcher4(l->secret, sizeof(l->secret), &ck);
	if (!memcmp(l->secret, zero, sizeof(zero)) || !cksum_equal(&ck, &l->secret_ck))
		return 0;
	memcpy(out, l->secret, sizeof(l->secret));
	return 1;
}

static void label_set_secret(struct label *l, const uint8_t *secret)
{
	memcpy(l->secret, secret, sizeof(l->secret));
	fletcher4(l->secret, sizeof(l->secret), &l->secret_ck);
}

static void fail(char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
}

static void label_sum(struct label *l)
{
	fletcher4(l, offsetof(struct label, ck), &l->ck);
}

static int dev_size(int fd, uint64_t *size)
{
	struct stat st;
	if (fstat(fd, &st))
		return -1;
	if (S_ISBLK(st.st_mode))
		return ioctl(fd, BLKGETSIZE64, size);
	*size = (uint64_t)st.st_size;
	return 0;
}

/* Opens O_DIRECT; falls back to buffered I/O where the filesystem refuses it. */
static int open_vdev(const char *path, int flags, int *direct)
{
	int fd = open(path, flags | O_DIRECT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		*direct = 1;
		return fd;
	}
	if (errno != EINVAL)
		return -1;
	*direct = 0;
	return open(path, flags | O_CLOEXEC, 0644);
}

/* The embedded log of a vdev-0 label: 0 when absent or not intact. */
static uint64_t label_log_size(const struct label *l)
{
	struct cksum ck;
	fletcher4(&l->log_size, sizeof(l->log_size), &ck);
	if (l->index != 0 || !l->log_size || !cksum_equal(&ck, &l->log_ck) || l->log_size % POOL_BLOCK ||
	    l->size < POOL_DATA_START + POOL_LOG_ROOM || l->log_size > l->size - POOL_DATA_START - POOL_LOG_ROOM)
		return 0;
	return l->log_size;
}

uint64_t pool_default_log_size(uint64_t vdev_size)
{
	uint64_t s = vdev_size / 16;
	s = s < (4ull << 20) ? 4ull << 20 : s > (64ull << 20) ? 64ull << 20 : s;
	return s & ~(uint64_t)(POOL_BLOCK - 1);
}

int pool_create(char **paths, uint32_t n, uint64_t size, uint32_t recordsize, uint64_t log_size,
		char *err, size_t errsz)
{
	uint64_t guid;
	uint8_t secret[SIPHASH_KEY_SIZE];
	xrandom(&guid, sizeof(guid));
	xrandom(secret, sizeof(secret));
	uint8_t *blk = xaligned(POOL_DATA_START);
	int rc = -1;
	for (uint32_t i = 0; i < n; i++) {
		int direct, created = access(paths[i], F_OK) != 0;
		int fd = open_vdev(paths[i], O_RDWR | O_CREAT, &direct);
		if (fd < 0) {
			fail(err, errsz, "cannot open vdev %s: %s", paths[i], strerror(errno));
			goto out;
		}
		if (vdev_lock(fd, paths[i], err, errsz)) {
			close(fd);
			goto out;
		}
		uint64_t sz;
		if (created && ftruncate(fd, (off_t)size)) {
			fail(err, errsz, "cannot size vdev %s: %s", paths[i], strerror(errno));
			close(fd);
			goto out;
		}
		if (dev_size(fd, &sz) || sz < 16ull << 20) {
			fail(err, errsz, "vdev %s is smaller than 16 MiB (use --size)", paths[i]);
			close(fd);
			goto out;
		}
		memset(blk, 0, POOL_DATA_START);
		struct label *l = (struct label *)blk;
		l->magic = LABEL_MAGIC;
		l->version = LABEL_VERSION;
		l->index = i;
		l->nvdevs = n;
		l->recordsize = recordsize;
		l->guid = guid;
		l->size = sz & ~(uint64_t)(POOL_BLOCK - 1);
		label_sum(l);
		label_set_secret(l, secret);
		if (i == 0 && log_size) {
			l->log_size = log_size == POOL_LOG_DEFAULT ? pool_default_log_size(l->size)
								   : log_size & ~(uint64_t)(POOL_BLOCK - 1);
			if (l->size < POOL_DATA_START + POOL_LOG_ROOM ||
			    l->log_size > l->size - POOL_DATA_START - POOL_LOG_ROOM) {
				fail(err, errsz, "the log region (%llu bytes) leaves no room on %s",
				     (unsigned long long)l->log_size, paths[i]);
				close(fd);
				goto out;
			}
			fletcher4(&l->log_size, sizeof(l->log_size), &l->log_ck);
			/* a fresh log: no earlier pool's records may be replayed into this one */
			memset(blk + POOL_BLOCK, 0, POOL_BLOCK);
			if (pwrite(fd, blk + POOL_BLOCK, POOL_BLOCK, (off_t)(l->size - l->log_size)) != POOL_BLOCK) {
				fail(err, errsz, "cannot clear the log region of %s: %s", paths[i], strerror(errno));
				close(fd);
				goto out;
			}
		}
		ssize_t w = pwrite(fd, blk, POOL_DATA_START, 0);
		if (w != (ssize_t)POOL_DATA_START || fsync(fd)) {
			fail(err, errsz, "cannot write label on %s: %s", paths[i], strerror(errno));
			close(fd);
			goto out;
		}
		close(fd);
	}
	rc = 0;
out:
	free(blk);
	return rc;
}

struct pool *pool_open(char **paths, uint32_t n, char *err, size_t errsz)
{
	struct pool *p = xcalloc(1, sizeof(*p));
	p->nvdevs = n;
	p->vdevs = xcalloc(n, sizeof(struct vdev));
	p->direct = 1;
	pthread_mutex_init(&p->lock, NULL);
	for (uint32_t i = 0; i < n; i++)
		p->vdevs[i].fd = -1;
	struct label *lab = xaligned(POOL_BLOCK);
	for (uint32_t i = 0; i < n; i++) {
		int direct;
		int fd = open_vdev(paths[i], O_RDWR, &direct);
		if (fd < 0) {
			fail(err, errsz, "cannot open vdev %s: %s", paths[i], strerror(errno));
			goto bad;
		}
		if (vdev_lock(fd, paths[i], err, errsz)) {
			close(fd);
			goto bad;
		}
		if (pread(fd, lab, POOL_BLOCK, 0) != POOL_BLOCK) {
			fail(err, errsz, "cannot read label of %s", paths[i]);
			close(fd);
			goto bad;
		}
		struct cksum ck;
		fletcher4(lab, offsetof(struct label, ck), &ck);
		if (lab->magic != LABEL_MAGIC || !cksum_equal(&ck, &lab->ck)) {
			fail(err, errsz, "%s is not a strata pool vdev (run `strata-engine mkpool`)", paths[i]);
			close(fd);
			goto bad;
		}
		if (i == 0) {
			p->guid = lab->guid;
			p->recordsize = lab->recordsize;
		}
		if (lab->index == 0)
			p->has_secret = label_secret(lab, p->secret);
		if (lab->guid != p->guid || lab->nvdevs != n || lab->index >= n ||
		    p->vdevs[lab->index].fd >= 0) {
			fail(err, errsz, "vdev %s does not belong with the others (pool has %u vdevs)",
			     paths[i], lab->nvdevs);
			close(fd);
			goto bad;
		}
		struct vdev *v = &p->vdevs[lab->index];
		v->fd = fd;
		v->path = xstrdup(paths[i]);
		v->size = lab->size;
		uint64_t log = label_log_size(lab);
		if (log) {
			p->log_offset = lab->size - log;
			p->log_size = log;
		}
		v->nblocks = (lab->size - log) / POOL_BLOCK;
		v->bitmap = xcalloc((v->nblocks + 7) / 8, 1);
		v->rotor = POOL_DATA_START / POOL_BLOCK;
		for (uint64_t b = 0; b < v->rotor; b++)
			v->bitmap[b / 8] |= 1u << (b % 8);
		v->free_blocks = v->nblocks - v->rotor;
		p->direct &= direct;
	}
	free(lab);
	return p;
bad:
	free(lab);
	pool_close(p);
	return NULL;
}

void pool_close(struct pool *p)
{
	if (!p)
		return;
	for (uint32_t i = 0; i < p->nvdevs; i++) {
		if (p->vdevs[i].fd >= 0)
			close(p->vdevs[i].fd);
		free(p->vdevs[i].path);
		free(p->vdevs[i].bitmap);
	}
	free(p->vdevs);
	free(p->deferred);
	free(p->committing);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int pool_claim(struct pool *p, char *err, size_t errsz)
{
	struct holder *h = xaligned(POOL_BLOCK);
	memset(h, 0, POOL_BLOCK);
	h->magic = HOLDER_MAGIC;
	h->pid = (uint32_t)getpid();
	h->since = (uint64_t)time(NULL);
	if (gethostname(h->host, sizeof(h->host) - 1))
		snprintf(h->host, sizeof(h->host), "?");
	fletcher4(h, offsetof(struct holder, ck), &h->ck);
	int rc = 0;
	for (uint32_t i = 0; i < p->nvdevs && !rc; i++) {
		if (pwrite(p->vdevs[i].fd, h, POOL_BLOCK, HOLDER_OFFSET) != POOL_BLOCK ||
		    fdatasync(p->vdevs[i].fd)) {
			fail(err, errsz, "cannot write the holder block of %s: %s", p->vdevs[i].path, strerror(errno));
			rc = -1;
		}
	}
	free(h);
	return rc;
}

int pool_ensure_secret(struct pool *p, char *err, size_t errsz)
{
	if (p->has_secret)
		return 0;
	xrandom(p->secret, sizeof(p->secret));
	struct label *lab = xaligned(POOL_BLOCK);
	int rc = 1;
	for (uint32_t i = 0; i < p->nvdevs && rc == 1; i++) {
		int fd = p->vdevs[i].fd;
		if (pread(fd, lab, POOL_BLOCK, 0) != POOL_BLOCK) {
			fail(err, errsz, "cannot read the label of %s", p->vdevs[i].path);
			rc = -1;
			break;
		}
		label_set_secret(lab, p->secret);
		if (pwrite(fd, lab, POOL_BLOCK, 0) != POOL_BLOCK || fdatasync(fd)) {
			fail(err, errsz, "cannot write the label of %s: %s", p->vdevs[i].path, strerror(errno));
			rc = -1;
		}
	}
	free(lab);
	p->has_secret = rc == 1;
	return rc;
}

static int vdev_io(struct pool *p, uint32_t vdev, uint64_t off, void *buf, uint32_t len, int op)
{
	struct strata_vdev_io io;
	int traced = STRATA_PROBE_ENABLED(vdev_io_done);
	if (vdev >= p->nvdevs || off + len > p->vdevs[vdev].size)
		return -EINVAL;
	if (traced)
		io = (struct strata_vdev_io){ .start_ns = clock_mono_ns(), .offset = off,
			.size = len, .vdev = vdev, .op = (uint32_t)op };
	int fd = p->vdevs[vdev].fd, err = 0;
	size_t done = 0;
	struct devmodel *model = p->vdevs[vdev].model;
	uint64_t t0 = traced ? io.start_ns : model ? clock_mono_ns() : 0;
	while (done < len) {
		ssize_t r = op == STRATA_VDEV_READ
			? pread(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done))
			: pwrite(fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : -EIO;
			break;
		}
		done += (size_t)r;
	}
	__atomic_add_fetch(op == STRATA_VDEV_READ ? &p->vdevs[vdev].reads : &p->vdevs[vdev].writes, 1,
			   __ATOMIC_RELAXED);
	if (op == STRATA_VDEV_READ) {
		__atomic_add_fetch(&p->reads, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&p->bytes_read, done, __ATOMIC_RELAXED);
	} else {
		__atomic_add_fetch(&p->writes, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&p->bytes_written, done, __ATOMIC_RELAXED);
	}
	if (model && !err)
		devmodel_service(model, op == STRATA_VDEV_READ ? DEVMODEL_READ : DEVMODEL_WRITE,
				 off, len, clock_mono_ns() - t0);
	if (op == STRATA_VDEV_READ)
		devmodel_delay(__atomic_load_n(&p->read_delay_ns, __ATOMIC_RELAXED));
	if (traced) {
		io.latency_ns = clock_mono_ns() - io.start_ns;
		io.error = err;
		STRATA_PROBE(vdev_io_done, &io);
	}
	return err;
}

int pool_read(struct pool *p, uint32_t vdev, uint64_t off, void *buf, uint32_t len)
{
	return vdev_io(p, vdev, off, buf, len, STRATA_VDEV_READ);
}

int pool_write(struct pool *p, uint32_t vdev, uint64_t off, const void *buf, uint32_t len)
{
	return vdev_io(p, vdev, off, (void *)buf, len, STRATA_VDEV_WRITE);
}

int pool_flush(struct pool *p)
{
	int err = 0;
	for (uint32_t i = 0; i < p->nvdevs; i++) {
		struct strata_vdev_io io;
		int traced = STRATA_PROBE_ENABLED(vdev_io_done);
		if (traced)
			io = (struct strata_vdev_io){ .start_ns = clock_mono_ns(), .vdev = i,
				.op = STRATA_VDEV_FLUSH };
		int e = fdatasync(p->vdevs[i].fd) ? -errno : 0;
		__atomic_add_fetch(&p->vdevs[i].flushes, 1, __ATOMIC_RELAXED);
		devmodel_service(p->vdevs[i].model, DEVMODEL_FLUSH, 0, 0, 0);
		if (traced) {
			io.latency_ns = clock_mono_ns() - io.start_ns;
			io.error = e;
			STRATA_PROBE(vdev_io_done, &io);
		}
		if (e)
			err = e;
	}
	return err;
}

static int bit_get(const uint8_t *bm, uint64_t b)
{
	return bm[b / 8] >> (b % 8) & 1;
}

static void bits_set(struct vdev *v, uint64_t first, uint64_t n, int on)
{
	for (uint64_t b = first; b < first + n && b < v->nblocks; b++) {
		if (bit_get(v->bitmap, b) == on)
			continue;
		if (on) {
			v->bitmap[b / 8] |= 1u << (b % 8);
			v->free_blocks--;
		} else {
			v->bitmap[b / 8] &= ~(1u << (b % 8));
			v->free_blocks++;
		}
	}
}

/* Next-fit search for n free blocks in one vdev; UINT64_MAX when none. */
static uint64_t find_run(struct vdev *v, uint64_t n)
{
	uint64_t start = POOL_DATA_START / POOL_BLOCK;
	for (int pass = 0; pass < 2; pass++) {
		uint64_t b = pass ? start : v->rotor, end = pass ? v->rotor + n : v->nblocks;
		if (end > v->nblocks)
			end = v->nblocks;
		uint64_t run = 0;
		while (b < end) {
			if (b % 8 == 0 && run == 0 && v->bitmap[b / 8] == 0xff) {
				b += 8;
				continue;
			}
			if (bit_get(v->bitmap, b)) {
				run = 0;
			} else if (++run == n) {
				return b + 1 - n;
			}
			b++;
		}
	}
	return UINT64_MAX;
}

int pool_alloc(struct pool *p, uint64_t size, uint32_t *vdev, uint64_t *off)
{
	uint64_t n = (size + POOL_BLOCK - 1) / POOL_BLOCK;
	pthread_mutex_lock(&p->lock);
	for (uint32_t k = 0; k < p->nvdevs; k++) {
		uint32_t i = (p->next_vdev + k) % p->nvdevs;
		struct vdev *v = &p->vdevs[i];
		if (v->free_blocks < n)
			continue;
		uint64_t b = find_run(v, n);
		if (b == UINT64_MAX)
			continue;
		bits_set(v, b, n, 1);
		v->rotor = b + n;
		p->next_vdev = (i + 1) % p->nvdevs;
		pthread_mutex_unlock(&p->lock);
		*vdev = i;
		*off = b * POOL_BLOCK;
		return 0;
	}
	pthread_mutex_unlock(&p->lock);
	return -ENOSPC;
}

void pool_free_deferred(struct pool *p, uint32_t vdev, uint64_t off, uint64_t size)
{
	if (!size)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->ndeferred == p->capdeferred) {
		p->capdeferred = p->capdeferred ? p->capdeferred * 2 : 64;
		p->deferred = xrealloc(p->deferred, p->capdeferred * sizeof(*p->deferred));
	}
	p->deferred[p->ndeferred++] = (struct pool_extent){ vdev, off, size };
	pthread_mutex_unlock(&p->lock);
}

void pool_deferred_cut(struct pool *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->ncommitting + p->ndeferred > p->capcommitting) {
		p->capcommitting = p->ncommitting + p->ndeferred + 64;
		p->committing = xrealloc(p->committing, p->capcommitting * sizeof(*p->committing));
	}
	if (p->ndeferred)
		memcpy(p->committing + p->ncommitting, p->deferred, p->ndeferred * sizeof(*p->deferred));
	p->ncommitting += p->ndeferred;
	p->ndeferred = 0;
	pthread_mutex_unlock(&p->lock);
}

void pool_apply_deferred(struct pool *p)
{
	pthread_mutex_lock(&p->lock);
	for (size_t i = 0; i < p->ncommitting; i++) {
		struct pool_extent *e = &p->committing[i];
		if (e->vdev < p->nvdevs)
			bits_set(&p->vdevs[e->vdev], e->offset / POOL_BLOCK,
				 (e->size + POOL_BLOCK - 1) / POOL_BLOCK, 0);
	}
	p->ncommitting = 0;
	pthread_mutex_unlock(&p->lock);
}

void pool_mark_allocated(struct pool *p, uint32_t vdev, uint64_t off, uint64_t size)
{
	if (vdev >= p->nvdevs || !size)
		return;
	pthread_mutex_lock(&p->lock);
	bits_set(&p->vdevs[vdev], off / POOL_BLOCK, (size + POOL_BLOCK - 1) / POOL_BLOCK, 1);
	pthread_mutex_unlock(&p->lock);
}

uint64_t pool_total_bytes(const struct pool *p)
{
	uint64_t t = 0;
	for (uint32_t i = 0; i < p->nvdevs; i++)
		t += (p->vdevs[i].nblocks - POOL_DATA_START / POOL_BLOCK) * POOL_BLOCK;
	return t;
}

uint64_t pool_free_bytes(struct pool *p)
{
	uint64_t f = 0;
	pthread_mutex_lock(&p->lock);
	for (uint32_t i = 0; i < p->nvdevs; i++)
		f += p->vdevs[i].free_blocks * POOL_BLOCK;
	pthread_mutex_unlock(&p->lock);
	return f;
}

/* Encoding: per vdev, a count of extents then (first block, block count) pairs. */
void pool_spacemap_encode(struct pool *p, struct xdr_out *o, const struct pool_extent *skip)
{
	pthread_mutex_lock(&p->lock);
	xdr_put_u32(o, p->nvdevs);
	for (uint32_t i = 0; i < p->nvdevs; i++) {
		struct vdev *v = &p->vdevs[i];
		size_t bytes = (v->nblocks + 7) / 8;
		uint8_t *bm = xmalloc(bytes);
		memcpy(bm, v->bitmap, bytes);
		for (size_t k = 0; k < p->ncommitting + 1; k++) {
			const struct pool_extent *e = k < p->ncommitting ? &p->committing[k] : skip;
			if (!e || e->vdev != i)
				continue;
			for (uint64_t b = e->offset / POOL_BLOCK;
			     b < (e->offset + e->size + POOL_BLOCK - 1) / POOL_BLOCK && b < v->nblocks; b++)
				bm[b / 8] &= ~(1u << (b % 8));
		}
		size_t count_pos = o->pos;
		uint32_t count = 0;
		xdr_put_u32(o, 0);
		uint64_t first = POOL_DATA_START / POOL_BLOCK;
		for (uint64_t b = first; b < v->nblocks;) {
			if (!bit_get(bm, b)) {
				b++;
				continue;
			}
			uint64_t s = b;
			while (b < v->nblocks && bit_get(bm, b))
				b++;
			xdr_put_u64(o, s);
			xdr_put_u64(o, b - s);
			count++;
		}
		if (!o->err) {
			uint8_t *c = o->buf + count_pos;
			c[0] = count >> 24, c[1] = count >> 16, c[2] = count >> 8, c[3] = count;
		}
		free(bm);
	}
	pthread_mutex_unlock(&p->lock);
}

int pool_spacemap_decode(struct pool *p, struct xdr_in *x)
{
	if (xdr_get_u32(x) != p->nvdevs)
		return -1;
	for (uint32_t i = 0; i < p->nvdevs && !x->err; i++) {
		uint32_t count = xdr_get_u32(x);
		for (uint32_t k = 0; k < count && !x->err; k++) {
			uint64_t s = xdr_get_u64(x), n = xdr_get_u64(x);
			if (s > p->vdevs[i].nblocks || n > p->vdevs[i].nblocks - s)
				return -1;
			pool_mark_allocated(p, i, s * POOL_BLOCK, n * POOL_BLOCK);
		}
	}
	return x->err ? -1 : 0;
}
