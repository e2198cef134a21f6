/* l2arc_test.c — unit test of the L2ARC on real cache-device files: feed and
 * read back byte-exact, LZ4 savings, header size, invalidation, run-time
 * disable, ring wrap-around, corruption of the device while in use (never
 * bad data), and persistence (rebuild after close and reopen). */
#define STRATA_PROBES_DEFINE_SEMAPHORES
#include "strata_probes.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <time.h>

#include "devmodel.h"
#include "l2arc.h"
#include "unit_check.h"


#define BUFSZ 8192u
static char dir[] = "/tmp/l2arc_test.XXXXXX";

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* Text-like content determined by the key (and a version). */
static void fill(struct arc_key k, uint32_t version, uint8_t *buf, uint32_t size)
{
	static const char *words[] = { "the", "cache", "flash", "device", "record", "block",
		"latency", "read", "write", "pool", "spindle", "seek", "rotation", "hit",
		"miss", "buffer", "header", "log", "replay", "commit", "sync", "adaptive",
		"replacement", "storage", "tier", "ZFS", "heat", "map", "nanosecond", "of", "a", "and" };
	uint64_t s = mix(k.objid * 1000003 + k.blkid + ((uint64_t)version << 40));
	uint32_t n = 0;
	while (n < size) {
		s = mix(s);
		const char *w = words[s % 32];
		size_t l = strlen(w);
		for (size_t i = 0; i < l && n < size; i++)
			buf[n++] = (uint8_t)w[i];
		if (n < size)
			buf[n++] = (s >> 40) % 11 == 0 ? '\n' : ' ';
	}
}

static int read_check(struct l2arc *l2, struct arc_key k, uint32_t version)
{
	static __thread uint8_t got[BUFSZ], want[BUFSZ];
	int n = l2arc_read(l2, k, got, sizeof(got));
	if (n <= 0)
		return n;
	fill(k, version, want, BUFSZ);
	if (n != (int)BUFSZ || memcmp(got, want, BUFSZ)) {
		fprintf(stderr, "FAIL: bad data served for key %llu/%llu\n",
			(unsigned long long)k.objid, (unsigned long long)k.blkid);
		__atomic_add_fetch(&failures, 1, __ATOMIC_RELAXED);
		return -1000;
	}
	return n;
}

static struct l2arc_config test_config(void)
{
	struct l2arc_config c;
	l2arc_config_defaults(&c);
	c.write_max = 2u << 20;
	c.write_boost = 2u << 20;
	c.headroom = 4;         /* staging 16 MiB */
	c.feed_interval_ms = 50;
	c.feed_min_ms = 10;
	c.max_buf = 64u << 10;
	return c;
}

static struct l2arc *open_l2(const char *name, uint64_t size, const struct l2arc_config *c)
{
	char path[128], err[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	struct l2arc *l2 = l2arc_create(c);
	if (!l2 || l2arc_add_device(l2, path, size, err, sizeof(err))) {
		fprintf(stderr, "FAIL: cannot open %s: %s\n", path, err);
		exit(1);
	}
	return l2;
}

/* Offers keys [from, to) of objid in chunks the staging list can hold. */
static void feed_keys(struct l2arc *l2, uint64_t objid, uint64_t from, uint64_t to, uint32_t version)
{
	uint8_t buf[BUFSZ];
	for (uint64_t b = from; b < to; b++) {
		struct arc_key k = { objid, b };
		fill(k, version, buf, BUFSZ);
		if (!l2arc_feed_offer(l2, k, buf, BUFSZ)) {
			l2arc_flush(l2);
			CHECK(l2arc_feed_offer(l2, k, buf, BUFSZ), "offer refused after flush");
		}
	}
	l2arc_flush(l2);
}

static void test_basic_and_persistence(void)
{
	struct l2arc_config c = test_config();
	struct l2arc *l2 = open_l2("dev0", 64u << 20, &c);
	const uint64_t N = 2000;
	feed_keys(l2, 7, 0, N, 1);
	struct l2arc_stats st;
	l2arc_get_stats(l2, &st);
	CHECK(st.l2_bufs == N, "bufs %llu != %llu", (unsigned long long)st.l2_bufs, (unsigned long long)N);
	CHECK(st.l2_size == N * BUFSZ, "l2_size %llu", (unsigned long long)st.l2_size);
	CHECK(st.l2_asize <= st.l2_size * 6 / 10, "LZ4: asize %llu vs size %llu",
	      (unsigned long long)st.l2_asize, (unsigned long long)st.l2_size);
	double per = (double)st.l2_hdr_size / (double)st.l2_bufs;
	CHECK(per <= 80.0, "header bytes per buffer %.1f > 80", per);
	printf("l2arc: %llu bufs, size %llu asize %llu (%.2f), hdr %zu B + hash = %.1f B/buf, feeds %llu, log blocks %llu\n",
	       (unsigned long long)st.l2_bufs, (unsigned long long)st.l2_size,
	       (unsigned long long)st.l2_asize, (double)st.l2_asize / (double)st.l2_size,
	       (size_t)st.l2_hdr_sizeof, per, (unsigned long long)st.l2_feeds,
	       (unsigned long long)st.l2_log_blk_writes);
	/* bounded rate: no feed wrote more than its target of buffers */
	CHECK(st.l2_writes_sent <= st.l2_feeds * ((c.write_max + c.write_boost) / 512),
	      "feeds %llu for %llu buffers", (unsigned long long)st.l2_feeds,
	      (unsigned long long)st.l2_writes_sent);
	CHECK(st.l2_feeds >= (N * BUFSZ) / (c.write_max + c.write_boost), "too few feeds: %llu",
	      (unsigned long long)st.l2_feeds);

	int bad = 0;
	for (uint64_t b = 0; b < N; b++)
		bad += read_check(l2, (struct arc_key){ 7, b }, 1) != (int)BUFSZ;
	CHECK(!bad, "%d of %llu buffers did not read back", bad, (unsigned long long)N);
	CHECK(read_check(l2, (struct arc_key){ 7, N + 5 }, 1) == 0, "unknown key hit");
	/* already cached: refused */
	uint8_t buf[BUFSZ];
	fill((struct arc_key){ 7, 3 }, 1, buf, BUFSZ);
	CHECK(!l2arc_feed_offer(l2, (struct arc_key){ 7, 3 }, buf, BUFSZ), "duplicate offer staged");

	/* invalidate: a cached key and a staged one */
	l2arc_invalidate(l2, (struct arc_key){ 7, 10 });
	CHECK(read_check(l2, (struct arc_key){ 7, 10 }, 1) == 0, "invalidated key still hits");
	fill((struct arc_key){ 8, 0 }, 1, buf, BUFSZ);
	CHECK(l2arc_feed_offer(l2, (struct arc_key){ 8, 0 }, buf, BUFSZ), "offer refused");
	l2arc_invalidate(l2, (struct arc_key){ 8, 0 });
	l2arc_flush(l2);
	CHECK(read_check(l2, (struct arc_key){ 8, 0 }, 1) == 0, "invalidated staged key was written");
	/* new version after invalidation */
	fill((struct arc_key){ 7, 10 }, 2, buf, BUFSZ);
	CHECK(l2arc_feed_offer(l2, (struct arc_key){ 7, 10 }, buf, BUFSZ), "re-offer refused");
	l2arc_flush(l2);
	CHECK(read_check(l2, (struct arc_key){ 7, 10 }, 2) == (int)BUFSZ, "new version not served");

	/* an ssd model on the cache device: reads land in the flash band */
	struct devmodel *m;
	char merr[200];
	CHECK(devmodel_parse("ssd", 0, &m, merr, sizeof(merr)) == 0, "devmodel: %s", merr);
	l2arc_set_model(l2, m);
	uint64_t lat[101];
	for (int i = 0; i < 101; i++) {
		struct timespec a0, a1;
		clock_gettime(CLOCK_MONOTONIC, &a0);
		read_check(l2, (struct arc_key){ 7, (uint64_t)i * 7 }, 1);
		clock_gettime(CLOCK_MONOTONIC, &a1);
		lat[i] = (uint64_t)(a1.tv_sec - a0.tv_sec) * 1000000000ull + (uint64_t)(a1.tv_nsec - a0.tv_nsec);
	}
	for (int i = 1; i < 101; i++) /* insertion sort for the median */
		for (int j = i; j > 0 && lat[j - 1] > lat[j]; j--) {
			uint64_t t = lat[j];
			lat[j] = lat[j - 1];
			lat[j - 1] = t;
		}
	printf("l2arc read with the ssd model: median %.0f us\n", lat[50] / 1e3);
	CHECK(lat[50] >= 100000 && lat[50] <= 1000000, "median modelled L2 read %llu ns", (unsigned long long)lat[50]);
	l2arc_set_model(l2, NULL);
	devmodel_free(m);

	/* run-time disable */
	l2arc_get_stats(l2, &st);
	uint64_t feeds = st.l2_feeds;
	l2arc_set_enabled(l2, false);
	fill((struct arc_key){ 9, 0 }, 1, buf, BUFSZ);
	CHECK(!l2arc_feed_offer(l2, (struct arc_key){ 9, 0 }, buf, BUFSZ), "disabled: offer staged");
	CHECK(read_check(l2, (struct arc_key){ 7, 1 }, 1) == 0, "disabled: read hit");
	l2arc_flush(l2);
	usleep(150 * 1000);
	l2arc_get_stats(l2, &st);
	CHECK(st.l2_feeds == feeds && st.l2_enabled == 0, "disabled: fed");
	l2arc_set_enabled(l2, true);
	CHECK(read_check(l2, (struct arc_key){ 7, 1 }, 1) == (int)BUFSZ, "re-enabled: miss");

	/* the feed thread writes on its own, at its interval */
	fill((struct arc_key){ 9, 1 }, 1, buf, BUFSZ);
	CHECK(l2arc_feed_offer(l2, (struct arc_key){ 9, 1 }, buf, BUFSZ), "offer refused");
	usleep(300 * 1000);
	CHECK(read_check(l2, (struct arc_key){ 9, 1 }, 1) == (int)BUFSZ, "feed thread did not write");
	l2arc_destroy(l2);

	/* damage buffer (7,0) (the ring's first 4 KiB) while closed */
	char path[128];
	snprintf(path, sizeof(path), "%s/dev0", dir);
	int fd = open(path, O_RDWR);
	uint8_t x = 0;
	CHECK(fd >= 0 && pread(fd, &x, 1, 4096 + 100) == 1, "read %s", path);
	x ^= 0xff;
	CHECK(pwrite(fd, &x, 1, 4096 + 100) == 1 && fsync(fd) == 0, "damage %s", path);
	close(fd);

	/* persistence: reopen, rebuild in the background, read back */
	l2 = open_l2("dev0", 64u << 20, &c);
	l2arc_invalidate(l2, (struct arc_key){ 7, 20 }); /* during (or after) the rebuild */
	l2arc_wait_rebuild(l2);
	l2arc_get_stats(l2, &st);
	printf("l2arc rebuild: success %llu, bufs %llu, log blocks %llu\n",
	       (unsigned long long)st.l2_rebuild_success, (unsigned long long)st.l2_rebuild_bufs,
	       (unsigned long long)st.l2_rebuild_log_blks);
	CHECK(st.l2_rebuild_success == 1 && st.l2_rebuild_bufs >= N - 2, "rebuild: success %llu bufs %llu",
	      (unsigned long long)st.l2_rebuild_success, (unsigned long long)st.l2_rebuild_bufs);
	CHECK(read_check(l2, (struct arc_key){ 7, 20 }, 1) == 0, "invalidated during rebuild: hit");
	CHECK(read_check(l2, (struct arc_key){ 7, 10 }, 2) == (int)BUFSZ, "rebuilt newest version");
	CHECK(read_check(l2, (struct arc_key){ 7, 0 }, 1) == -EBADMSG, "stale buffer not caught on first read");
	CHECK(read_check(l2, (struct arc_key){ 7, 0 }, 1) == 0, "bad buffer's header not dropped");
	l2arc_get_stats(l2, &st);
	CHECK(st.l2_cksum_bad == 1, "cksum_bad %llu", (unsigned long long)st.l2_cksum_bad);
	bad = 0;
	for (uint64_t b = 1; b < N; b++) {
		if (b == 10 || b == 20)
			continue;
		bad += read_check(l2, (struct arc_key){ 7, b }, 1) != (int)BUFSZ;
	}
	CHECK(!bad, "%d rebuilt buffers did not read back", bad);
	l2arc_destroy(l2);

	/* rebuild off: the device is formatted afresh */
	struct l2arc_config c2 = c;
	c2.rebuild = false;
	l2 = open_l2("dev0", 64u << 20, &c2);
	CHECK(read_check(l2, (struct arc_key){ 7, 1 }, 1) == 0, "rebuild off: old data served");
	l2arc_destroy(l2);
}

struct reader_arg {
	struct l2arc *l2;
	uint64_t objid, nkeys;
	uint32_t version;
	volatile int *stop;
	uint64_t hits, errors;
};

static void *reader(void *p)
{
	struct reader_arg *a = p;
	uint64_t s = (uint64_t)pthread_self();
	while (!*a->stop) {
		s = mix(s);
		int n = read_check(a->l2, (struct arc_key){ a->objid, s % a->nkeys }, a->version);
		if (n > 0)
			a->hits++;
		else if (n < 0 && n != -1000)
			a->errors++;
	}
	return NULL;
}

/* Flips bytes in the ring while readers run: each read is right or an error. */
static void test_corruption(void)
{
	struct l2arc_config c = test_config();
	struct l2arc *l2 = open_l2("dev1", 32u << 20, &c);
	const uint64_t N = 1000;
	feed_keys(l2, 11, 0, N, 1);
	volatile int stop = 0;
	struct reader_arg ra[2];
	pthread_t th[2];
	for (int i = 0; i < 2; i++) {
		ra[i] = (struct reader_arg){ l2, 11, N, 1, &stop, 0, 0 };
		pthread_create(&th[i], NULL, reader, &ra[i]);
	}
	struct l2arc_stats st;
	l2arc_get_stats(l2, &st);
	char path[128];
	snprintf(path, sizeof(path), "%s/dev1", dir);
	int fd = open(path, O_RDWR | O_DIRECT);
	CHECK(fd >= 0, "open %s", path);
	uint8_t *blk;
	if (posix_memalign((void **)&blk, 4096, 4096))
		abort();
	uint64_t used = st.l2_write_bytes; /* no wrap: the ring holds [4K, 4K + used) */
	uint64_t s = 12345;
	for (int i = 0; i < 400; i++) {
		s = mix(s);
		off_t off = (off_t)(4096 + (s % (used / 4096)) * 4096);
		if (pread(fd, blk, 4096, off) != 4096)
			break;
		blk[(s >> 20) % 4096] ^= (uint8_t)(1 + (s >> 8) % 255);
		if (pwrite(fd, blk, 4096, off) != 4096)
			break;
		usleep(2000);
	}
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	/* every buffer once more, after all the damage */
	for (uint64_t b = 0; b < N; b++)
		read_check(l2, (struct arc_key){ 11, b }, 1);
	l2arc_get_stats(l2, &st);
	printf("l2arc corruption: hits %llu, cksum_bad %llu, io_error %llu, bufs left %llu\n",
	       (unsigned long long)st.l2_hits, (unsigned long long)st.l2_cksum_bad,
	       (unsigned long long)st.l2_io_error, (unsigned long long)st.l2_bufs);
	CHECK(st.l2_cksum_bad > 0, "no checksum error detected");
	CHECK(st.l2_bufs + st.l2_cksum_bad == N, "bad headers not dropped: %llu + %llu != %llu",
	      (unsigned long long)st.l2_bufs, (unsigned long long)st.l2_cksum_bad, (unsigned long long)N);
	l2arc_destroy(l2);

	/* stale device: damage while closed, then rebuild; reads still never bad */
	for (int i = 0; i < 50; i++) {
		s = mix(s);
		off_t off = (off_t)(4096 + (s % (used / 4096)) * 4096);
		if (pread(fd, blk, 4096, off) == 4096) {
			blk[(s >> 20) % 4096] ^= 0x5a;
			if (pwrite(fd, blk, 4096, off) != 4096)
				break;
		}
	}
	close(fd);
	free(blk);
	l2 = open_l2("dev1", 32u << 20, &c);
	l2arc_wait_rebuild(l2);
	for (uint64_t b = 0; b < N; b++)
		read_check(l2, (struct arc_key){ 11, b }, 1);
	l2arc_get_stats(l2, &st);
	printf("l2arc stale rebuild: rebuilt %llu, lb_bad %llu, then hits %llu cksum_bad %llu\n",
	       (unsigned long long)st.l2_rebuild_bufs, (unsigned long long)st.l2_rebuild_lb_bad,
	       (unsigned long long)st.l2_hits, (unsigned long long)st.l2_cksum_bad);
	l2arc_destroy(l2);
}

/* A small ring fed several times over while readers run. */
static void test_wrap(void)
{
	struct l2arc_config c = test_config();
	struct l2arc *l2 = open_l2("dev2", 12u << 20, &c);
	volatile int stop = 0;
	struct reader_arg ra = { l2, 21, 6000, 1, &stop, 0, 0 };
	pthread_t th;
	pthread_create(&th, NULL, reader, &ra);
	feed_keys(l2, 21, 0, 6000, 1); /* ~48 MiB logical, ~4x the ring after LZ4 */
	stop = 1;
	pthread_join(th, NULL);
	struct l2arc_stats st;
	l2arc_get_stats(l2, &st);
	printf("l2arc wrap: bufs %llu, evicted %llu, races %llu, reader hits %llu\n",
	       (unsigned long long)st.l2_bufs, (unsigned long long)st.l2_evict_bufs,
	       (unsigned long long)st.l2_read_races, (unsigned long long)ra.hits);
	CHECK(st.l2_evict_bufs > 0 && st.l2_evict_bufs + st.l2_bufs == 6000,
	      "evicted %llu + bufs %llu", (unsigned long long)st.l2_evict_bufs, (unsigned long long)st.l2_bufs);
	CHECK(st.l2_asize <= 12u << 20, "asize %llu beyond the ring", (unsigned long long)st.l2_asize);
	CHECK(st.l2_cksum_bad == 0, "wrap produced checksum errors: %llu", (unsigned long long)st.l2_cksum_bad);
	CHECK(read_check(l2, (struct arc_key){ 21, 5999 }, 1) == (int)BUFSZ, "newest buffer missing");
	CHECK(read_check(l2, (struct arc_key){ 21, 0 }, 1) == 0, "oldest buffer not evicted");
	uint64_t bufs = st.l2_bufs;
	l2arc_destroy(l2);
	l2 = open_l2("dev2", 12u << 20, &c);
	l2arc_wait_rebuild(l2);
	l2arc_get_stats(l2, &st);
	CHECK(st.l2_rebuild_success == 1 && st.l2_rebuild_bufs == bufs, "wrapped rebuild: %llu of %llu",
	      (unsigned long long)st.l2_rebuild_bufs, (unsigned long long)bufs);
	int hits = 0;
	for (uint64_t b = 0; b < 6000; b++)
		hits += read_check(l2, (struct arc_key){ 21, b }, 1) == (int)BUFSZ;
	CHECK((uint64_t)hits == bufs, "after wrapped rebuild %d hits of %llu", hits, (unsigned long long)bufs);
	/* keeps feeding after the rebuild */
	feed_keys(l2, 22, 0, 500, 1);
	CHECK(read_check(l2, (struct arc_key){ 22, 499 }, 1) == (int)BUFSZ, "feed after rebuild");
	l2arc_destroy(l2);
}

static void test_bad_device(void)
{
	struct l2arc_config c = test_config();
	struct l2arc *l2 = l2arc_create(&c);
	char err[256], path[128];
	snprintf(path, sizeof(path), "%s/tiny", dir);
	CHECK(l2arc_add_device(l2, path, 128u << 10, err, sizeof(err)) == -ENOSPC, "tiny device accepted");
	CHECK(strstr(err, "too small") != NULL, "message: %s", err);
	CHECK(l2arc_add_device(l2, "/nonexistent/dir/dev", 0, err, sizeof(err)) < 0, "missing path accepted");
	uint8_t buf[16] = { 0 };
	CHECK(!l2arc_feed_offer(l2, (struct arc_key){ 1, 1 }, buf, sizeof(buf)), "offer without device");
	l2arc_destroy(l2);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_basic_and_persistence();
	test_corruption();
	test_wrap();
	test_bad_device();
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "warning: could not remove %s\n", dir);
	return unit_result("l2arc_test");
}
