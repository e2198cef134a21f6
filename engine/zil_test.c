/* zil_test.c — unit test of the intent log on real files: concurrent
 * committers share log writes (batching) and all replay; 20 crash trials (a
 * child committing from several threads is SIGKILLed at a random moment; every
 * commit it reported as returned must replay); checkpoints reclaim space
 * across ring wrap-around; replay skips synced txgs and stops at a bad tail. */
#define STRATA_PROBES_DEFINE_SEMAPHORES
#include "strata_probes.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zil.h"
#include "unit_check.h"


static char dir[] = "/tmp/zil_test.XXXXXX";
static char path[160];

static void fill(uint64_t objid, uint64_t off, uint8_t *buf, uint32_t len)
{
	uint64_t s = objid * 0x9E3779B97F4A7C15ull + off;
	for (uint32_t i = 0; i < len; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		buf[i] = (uint8_t)s;
	}
}

static struct zil *open_log(uint64_t off, uint64_t size)
{
	char err[256];
	struct zil *z = zil_open(path, off, size, 42, err, sizeof(err));
	if (!z) {
		fprintf(stderr, "FAIL: zil_open: %s\n", err);
		exit(1);
	}
	return z;
}

/* replay bookkeeping: seen[objid][offset / 512] */
#define MAXOBJ 8
#define MAXREC 20000
static uint8_t seen[MAXOBJ][MAXREC];
static int bad_records;

static int check_rec(void *ctx, const struct zil_record *r)
{
	(void)ctx;
	uint8_t want[16384];
	if (r->objid >= MAXOBJ || r->offset % 512 || r->offset / 512 >= MAXREC || r->length > sizeof(want)) {
		bad_records++;
		return 0;
	}
	fill(r->objid, r->offset, want, r->length);
	if (memcmp(want, r->data, r->length))
		bad_records++;
	seen[r->objid][r->offset / 512]++;
	return 0;
}

static int replay_all(struct zil *z, uint64_t synced)
{
	memset(seen, 0, sizeof(seen));
	bad_records = 0;
	int n = zil_replay(z, synced, check_rec, NULL);
	CHECK(!bad_records, "%d replayed records with bad content", bad_records);
	return n;
}

struct committer { struct zil *z; uint64_t objid; int n; int errors; };

static void *commit_loop(void *p)
{
	struct committer *c = p;
	uint8_t data[4096];
	for (int i = 0; i < c->n; i++) {
		uint64_t off = (uint64_t)i * 512;
		fill(c->objid, off, data, sizeof(data));
		struct zil_record r = { c->objid, off, 5, sizeof(data), data };
		if (zil_commit(c->z, &r, 1))
			c->errors++;
	}
	return NULL;
}

static void test_batching(void)
{
	snprintf(path, sizeof(path), "%s/log1", dir);
	struct zil *z = open_log(0, 32u << 20);
	enum { T = 8, N = 150 };
	struct committer c[T];
	pthread_t th[T];
	for (int t = 0; t < T; t++) {
		c[t] = (struct committer){ z, (uint64_t)t, N, 0 };
		pthread_create(&th[t], NULL, commit_loop, &c[t]);
	}
	for (int t = 0; t < T; t++) {
		pthread_join(th[t], NULL);
		CHECK(!c[t].errors, "thread %d: %d commit errors", t, c[t].errors);
	}
	struct zil_stats st;
	zil_get_stats(z, &st);
	printf("zil batching: %llu commits, %llu log writes (%.2f commits/write), %llu bytes\n",
	       (unsigned long long)st.zil_commit_count, (unsigned long long)st.zil_commit_writes,
	       (double)st.zil_commit_count / (double)st.zil_commit_writes,
	       (unsigned long long)st.zil_commit_bytes);
	CHECK(st.zil_commit_count == T * N && st.zil_itx_count == T * N, "counts");
	CHECK(st.zil_commit_writes < st.zil_commit_count, "no batching: %llu writes",
	      (unsigned long long)st.zil_commit_writes);
	zil_close(z);

	z = open_log(0, 32u << 20);
	CHECK(replay_all(z, 0) == T * N, "replayed fewer than committed");
	int missing = 0;
	for (int t = 0; t < T; t++)
		for (int i = 0; i < N; i++)
			missing += seen[t][i] != 1;
	CHECK(!missing, "%d records missing or duplicated", missing);
	zil_close(z);

	z = open_log(0, 32u << 20);
	CHECK(replay_all(z, 5) == 0, "synced txg replayed");
	zil_get_stats(z, &st);
	CHECK(st.zil_replay_skipped == T * N, "skipped %llu", (unsigned long long)st.zil_replay_skipped);
	CHECK(zil_checkpoint(z, 5) == 0, "checkpoint");
	zil_get_stats(z, &st);
	CHECK(st.zil_log_used == 0, "log used %llu after checkpoint", (unsigned long long)st.zil_log_used);
	zil_close(z);
	z = open_log(0, 32u << 20);
	CHECK(replay_all(z, 0) == 0, "checkpointed records replayed");
	zil_close(z);
}

/* A small log inside a file region: fill to ENOSPC, checkpoint, go around. */
static void test_checkpoint_wrap(void)
{
	snprintf(path, sizeof(path), "%s/pool", dir);
	const uint64_t off = 1u << 20, size = (256u + 4u) << 10;
	struct zil *z = open_log(0, off + size); /* creates the file */
	zil_close(z);
	z = open_log(off, size);
	uint8_t data[16384];
	int n = 0, rc = 0;
	while (n < 100 && !(rc = 0)) {
		fill(1, (uint64_t)n * 512, data, sizeof(data));
		struct zil_record r = { 1, (uint64_t)n * 512, (uint64_t)n + 1, sizeof(data), data };
		if ((rc = zil_commit(z, &r, 1)))
			break;
		n++;
	}
	CHECK(rc == -ENOSPC && n > 5 && n < 20, "filled after %d commits, rc %d", n, rc);
	struct zil_stats st;
	zil_get_stats(z, &st);
	uint64_t full = st.zil_log_used;
	CHECK(zil_checkpoint(z, (uint64_t)n) == 0, "checkpoint");
	zil_get_stats(z, &st);
	CHECK(full > 200u << 10 && st.zil_log_used == 0, "used %llu -> %llu", (unsigned long long)full,
	      (unsigned long long)st.zil_log_used);
	/* 200 more, checkpointing all but the last 4 txgs every 4 commits */
	int errors = 0;
	for (int i = 0; i < 200; i++) {
		uint64_t txg = 1000 + (uint64_t)i;
		fill(2, (uint64_t)i * 512, data, sizeof(data));
		struct zil_record r = { 2, (uint64_t)i * 512, txg, sizeof(data), data };
		errors += zil_commit(z, &r, 1) != 0;
		if (i % 4 == 3)
			CHECK(zil_checkpoint(z, txg - 4) == 0, "checkpoint");
	}
	CHECK(!errors, "%d commits failed while checkpointing", errors);
	zil_get_stats(z, &st);
	printf("zil wrap: %llu checkpoints, used %llu of %llu\n", (unsigned long long)st.zil_checkpoints,
	       (unsigned long long)st.zil_log_used, (unsigned long long)st.zil_log_size);
	zil_close(z);
	z = open_log(off, size);
	int got = replay_all(z, 0);
	int present = 0;
	for (int i = 196; i < 200; i++)
		present += seen[2][i] == 1;
	CHECK(present == 4 && got >= 4 && got <= 8, "after wrap replayed %d, last four present %d", got, present);
	CHECK(seen[1][0] == 0, "checkpointed record came back");
	zil_close(z);
}

/* Damage the 8th block: replay stops there; the log continues after it. */
static void test_bad_tail(void)
{
	snprintf(path, sizeof(path), "%s/log3", dir);
	struct zil *z = open_log(0, 1u << 20);
	uint8_t data[100];
	for (int i = 0; i < 10; i++) {
		fill(3, (uint64_t)i * 512, data, sizeof(data));
		struct zil_record r = { 3, (uint64_t)i * 512, 7, sizeof(data), data };
		CHECK(zil_commit(z, &r, 1) == 0, "commit");
	}
	zil_close(z);
	int fd = open(path, O_RDWR);
	uint8_t x = 0;
	off_t at = 4096 + 7 * 4096 + 200;
	CHECK(pread(fd, &x, 1, at) == 1, "read");
	x ^= 0x10;
	CHECK(pwrite(fd, &x, 1, at) == 1, "damage");
	close(fd);
	z = open_log(0, 1u << 20);
	int n = replay_all(z, 0);
	CHECK(n == 7, "replay did not stop at the damaged block (%d)", n);
	fill(3, 100 * 512, data, sizeof(data));
	struct zil_record r = { 3, 100 * 512, 8, sizeof(data), data };
	CHECK(zil_commit(z, &r, 1) == 0, "commit after replay");
	zil_close(z);
	z = open_log(0, 1u << 20);
	n = replay_all(z, 0);
	CHECK(n == 8 && seen[3][100] == 1, "record after a bad tail lost (replayed %d)", n);
	zil_close(z);
}

/* ---- crash trials ---- */

struct ack { uint32_t kind, thread; uint64_t index, txg; }; /* kind 'A' commit, 'C' checkpoint intent */

struct child_arg { struct zil *z; int fd; uint32_t thread; };
static uint64_t child_txg = 10;

static void *child_loop(void *p)
{
	struct child_arg *a = p;
	uint8_t data[4000];
	for (uint64_t i = 0; i < MAXREC; i++) {
		uint32_t len = 512 + (uint32_t)(i % 3) * 1500;
		uint64_t txg = __atomic_load_n(&child_txg, __ATOMIC_RELAXED);
		fill(a->thread, i * 512, data, len);
		struct zil_record r = { a->thread, i * 512, txg, len, data };
		if (zil_commit(a->z, &r, 1) == 0) {
			struct ack k = { 'A', a->thread, i, txg };
			if (write(a->fd, &k, sizeof(k)) != sizeof(k))
				_exit(3);
		}
		if (a->thread == 0 && i % 40 == 39) {
			uint64_t t = __atomic_add_fetch(&child_txg, 1, __ATOMIC_RELAXED);
			struct ack k = { 'C', 0, 0, t - 3 };
			if (write(a->fd, &k, sizeof(k)) != sizeof(k))
				_exit(3);
			zil_checkpoint(a->z, t - 3);
		}
	}
	return NULL;
}

static void child_main(int fd)
{
	char err[256];
	struct zil *z = zil_open(path, 0, 4u << 20, 42, err, sizeof(err));
	if (!z)
		_exit(2);
	zil_replay(z, 0, check_rec, NULL); /* the previous trial's records */
	struct child_arg a[4];
	pthread_t th[4];
	for (uint32_t t = 0; t < 4; t++) {
		a[t] = (struct child_arg){ z, fd, t };
		pthread_create(&th[t], NULL, child_loop, &a[t]);
	}
	for (int t = 0; t < 4; t++)
		pthread_join(th[t], NULL);
	_exit(0);
}

static int count_rec(void *ctx, const struct zil_record *r)
{
	(void)r;
	++*(int *)ctx;
	return 0;
}

/* A log never replays into another pool: another owner finds it formatted. */
static void test_owner(void)
{
	snprintf(path, sizeof(path), "%s/owned", dir);
	struct zil *z = open_log(0, 1u << 20);
	uint8_t data[512] = { 1 };
	struct zil_record rec = { .objid = 1, .offset = 0, .txg = 5, .length = sizeof(data), .data = data };
	CHECK(zil_commit(z, &rec, 1) == 0, "commit");
	zil_close(z);
	char err[256];
	int mine = 0, theirs = 0;
	z = zil_open(path, 0, 1u << 20, 43, err, sizeof(err));
	CHECK(z && zil_replay(z, 0, count_rec, &theirs) == 0 && theirs == 0, "another owner replayed %d", theirs);
	zil_close(z);
	z = open_log(0, 1u << 20);
	CHECK(zil_replay(z, 0, count_rec, &mine) == 0 && mine == 0, "the reformatted log replayed %d", mine);
	zil_close(z);
}

static void test_crash(void)
{
	snprintf(path, sizeof(path), "%s/crash", dir);
	unlink(path);
	static uint8_t acked[MAXOBJ][MAXREC];
	static uint64_t acked_txg[MAXOBJ][MAXREC];
	uint64_t seed = (uint64_t)time(NULL);
	int lost_total = 0;
	long acks_total = 0, replayed_total = 0;
	for (int trial = 0; trial < 20; trial++) {
		int pfd[2];
		if (pipe(pfd))
			abort();
		pid_t pid = fork();
		if (pid == 0) {
			close(pfd[0]);
			child_main(pfd[1]);
		}
		close(pfd[1]);
		memset(acked, 0, sizeof(acked));
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		int delay_ms = 20 + (int)((seed >> 33) % 180);
		struct timespec t0, now;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		uint64_t ckpt = 0;
		long acks = 0;
		int killed = 0;
		for (;;) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			long el = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
			if (!killed && el >= delay_ms) {
				kill(pid, SIGKILL);
				killed = 1;
			}
			struct pollfd pf = { pfd[0], POLLIN, 0 };
			if (poll(&pf, 1, killed ? 1000 : 5) < 0)
				break;
			if (!(pf.revents & (POLLIN | POLLHUP)))
				continue;
			struct ack k;
			ssize_t r = read(pfd[0], &k, sizeof(k));
			if (r == 0)
				break;
			if (r != sizeof(k))
				continue;
			if (k.kind == 'C' && k.txg > ckpt)
				ckpt = k.txg;
			if (k.kind == 'A' && k.thread < MAXOBJ && k.index < MAXREC) {
				acked[k.thread][k.index] = 1;
				acked_txg[k.thread][k.index] = k.txg;
				acks++;
			}
		}
		close(pfd[0]);
		int status;
		waitpid(pid, &status, 0);
		CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "trial %d: child not killed (status %d)",
		      trial, status);
		struct zil *z = open_log(0, 4u << 20);
		int n = replay_all(z, ckpt);
		zil_close(z);
		int lost = 0;
		for (int t = 0; t < MAXOBJ; t++)
			for (int i = 0; i < MAXREC; i++)
				if (acked[t][i] && acked_txg[t][i] > ckpt && !seen[t][i])
					lost++;
		lost_total += lost;
		acks_total += acks;
		replayed_total += n > 0 ? n : 0;
		CHECK(!lost, "trial %d: %d acknowledged records lost (acks %ld, checkpoint %llu)", trial, lost,
		      acks, (unsigned long long)ckpt);
	}
	printf("zil crash: 20 trials, %ld acknowledged commits, %ld records replayed, %d lost\n",
	       acks_total, replayed_total, lost_total);
	CHECK(acks_total > 100, "children committed too little (%ld)", acks_total);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_batching();
	test_checkpoint_wrap();
	test_bad_tail();
	test_owner();
	test_crash();
	char err[256];
	snprintf(path, sizeof(path), "%s/small", dir);
	CHECK(!zil_open(path, 0, 8192, 42, err, sizeof(err)) && strstr(err, "does not fit"), "tiny log: %s", err);
	CHECK(!zil_open(path, 100, 1u << 20, 42, err, sizeof(err)), "unaligned offset accepted");
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "warning: could not remove %s\n", dir);
	return unit_result("zil_test");
}
