/* probe_fixture.c — TEST FIXTURE (built to build/tests/strata-probe-fixture): a tiny
 * stand-in for the engine that fires its USDT probes (engine/strata_probes.h) on
 * command, so the collector's nfs/cache/vdev paths can be tested without the engine.
 * Optionally serves a fixed engine stats socket. Commands on stdin, one per line:
 *   nfs COUNT PROC CLIENT LATENCY_US TIERS HITS MISSES BYTES FILE [mount]
 *   tier l2arc_read|l2arc_write|zil_commit COUNT LATENCY_US
 *   vdev VDEV OP COUNT LATENCY_US SIZE   (strata:vdev_io_done; OP is STRATA_VDEV_*)
 *   spin OPS_PER_SECOND        (background nfs getattr ops from 127.0.0.1; 0 stops)
 *   sem PROBE                  (prints the probe's semaphore)
 *   keys COUNT                 (the next COUNT nfs operations are put keys only, as an
 *                              engine puts them while nfs_ops has no reader)
 * Each reply is one line: "fired N" (operations or tier events reported: semaphore set),
 * "sem N", "keys N" or "error ...". Prints "ready PID" first. */
#define STRATA_PROBES_DEFINE_SEMAPHORES
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "strata_probes.h"
#include "clock.h"

static volatile int spin_rate;
static volatile unsigned long spin_fired;
static unsigned keys_only; /* of the next nfs command's operations, put keys only ("keys") */


/* Fires COUNT copies of tmpl, LATENCY_NS old, as full batches and a last partial one to
 * strata:nfs_keys and strata:nfs_ops (as a busy engine worker would), the first KEYS of them
 * put keys only; returns the operations fired. */
static unsigned fire_nfs(const struct strata_nfs_op *tmpl, __u64 latency_ns, unsigned count, unsigned keys)
{
	struct strata_nfs_batch batch;
	unsigned fired = 0;

	while (fired < count && STRATA_NFS_TRACED()) {
		__u64 now = clock_mono_ns();

		strata_nfs_batch_empty(&batch);
		while (batch.count < STRATA_NFS_BATCH && fired + batch.count < count) {
			struct strata_nfs_op op = *tmpl;

			op.end_ns = now;
			op.start_ns = now - latency_ns;
			strata_nfs_batch_put(&batch, &op, STRATA_NFS_WHOLE() && fired + batch.count >= keys);
		}
		STRATA_NFS_FIRE(&batch);
		fired += batch.count;
	}
	return fired;
}

static void *spinner(void *arg)
{
	struct strata_nfs_op op = { .prog = STRATA_PROG_NFS, .proc = 1, .family = 2, .tiers = STRATA_TIER_ARC };

	(void)arg;
	inet_pton(AF_INET, "127.0.0.1", op.client);
	for (;;) {
		int rate = spin_rate;

		if (rate <= 0) {
			usleep(10000);
			continue;
		}
		spin_fired += fire_nfs(&op, 1000, 1, 0);
		usleep((useconds_t)(1000000 / rate));
	}
	return NULL;
}

static void *stats_server(void *arg)
{
	static const char reply[] = "{\"arc\":{\"size\":1048576,\"c\":2097152,\"p\":524288,\"hdr_size\":4096,"
				    "\"name\":\"fixture\",\"hist\":[1,2,{\"x\":3}]},\"nfs\":{\"ops\":7},"
				    "\"pool\":{\"size\":268435456},\"version\":1}";
	int fd = *(int *)arg;

	for (;;) {
		char buf[64];
		int c = accept(fd, NULL, NULL);

		if (c < 0)
			continue;
		if (read(c, buf, sizeof(buf)) > 0 && write(c, reply, sizeof(reply) - 1) < 0)
			perror("write");
		close(c);
	}
	return NULL;
}

static char sock_path[108];

static void cleanup(void)
{
	if (sock_path[0])
		unlink(sock_path);
}

static void on_term(int sig)
{
	(void)sig;
	cleanup();
	_exit(0);
}

static int start_stats_socket(void)
{
	static int fd;
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	pthread_t t;

	mkdir("/run/strata", 0755);
	snprintf(sock_path, sizeof(sock_path), "/run/strata/engine-%d.sock", (int)getpid());
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", sock_path);
	unlink(sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(fd, 8) < 0) {
		perror("stats socket");
		return -1;
	}
	atexit(cleanup);
	return pthread_create(&t, NULL, stats_server, &fd);
}

static unsigned short semaphore(const char *name)
{
	if (!strcmp(name, "nfs_ops"))
		return strata_nfs_ops_semaphore;
	if (!strcmp(name, "nfs_keys"))
		return strata_nfs_keys_semaphore;
	if (!strcmp(name, "l2arc_read"))
		return strata_l2arc_read_semaphore;
	if (!strcmp(name, "l2arc_write"))
		return strata_l2arc_write_semaphore;
	if (!strcmp(name, "zil_commit"))
		return strata_zil_commit_semaphore;
	if (!strcmp(name, "vdev_io_done"))
		return strata_vdev_io_done_semaphore;
	return 0xffff;
}

static void cmd_nfs(char *args)
{
	struct strata_nfs_op op = { .family = 2 };
	unsigned count, proc, tiers, hits, misses, bytes;
	unsigned long long lat_us, file;
	char client[64], mount[16] = "";

	if (sscanf(args, "%u %u %63s %llu %u %u %u %u %llu %15s", &count, &proc, client, &lat_us, &tiers, &hits,
		   &misses, &bytes, &file, mount) < 9) {
		printf("error usage: nfs COUNT PROC CLIENT LATENCY_US TIERS HITS MISSES BYTES FILE [mount]\n");
		return;
	}
	if (inet_pton(AF_INET, client, op.client) != 1) {
		op.family = 10;
		if (inet_pton(AF_INET6, client, op.client) != 1) {
			printf("error bad client %s\n", client);
			return;
		}
	}
	op.prog = strcmp(mount, "mount") ? STRATA_PROG_NFS : STRATA_PROG_MOUNT;
	op.proc = (__u16)proc;
	op.tiers = (__u8)tiers;
	op.arc_hits = (__u16)hits;
	op.arc_misses = (__u16)misses;
	op.bytes = bytes;
	op.file_id = file;
	op.client_port = 700;
	printf("fired %u\n", fire_nfs(&op, lat_us * 1000, count, keys_only));
	keys_only = 0;
}

static void cmd_tier(char *args)
{
	struct strata_tier_io io = { .count = 1, .bytes = 8192, .asize = 4096, .file_id = 9 };
	char name[32];
	unsigned count;
	unsigned long long lat_us;
	int fired = 0;

	if (sscanf(args, "%31s %u %llu", name, &count, &lat_us) != 3) {
		printf("error usage: tier PROBE COUNT LATENCY_US\n");
		return;
	}
	for (unsigned i = 0; i < count; i++) {
		io.start_ns = clock_mono_ns() - lat_us * 1000;
		if (!strcmp(name, "l2arc_read") && STRATA_PROBE_ENABLED(l2arc_read)) {
			STRATA_PROBE(l2arc_read, &io);
			fired++;
		} else if (!strcmp(name, "l2arc_write") && STRATA_PROBE_ENABLED(l2arc_write)) {
			STRATA_PROBE(l2arc_write, &io);
			fired++;
		} else if (!strcmp(name, "zil_commit") && STRATA_PROBE_ENABLED(zil_commit)) {
			STRATA_PROBE(zil_commit, &io);
			fired++;
		}
	}
	printf("fired %d\n", fired);
}

static void cmd_vdev(char *args)
{
	struct strata_vdev_io io = { 0 };
	unsigned count, size;
	unsigned long long lat_us;
	int fired = 0;

	if (sscanf(args, "%u %u %u %llu %u", &io.vdev, &io.op, &count, &lat_us, &size) != 5) {
		printf("error usage: vdev VDEV OP COUNT LATENCY_US SIZE\n");
		return;
	}
	io.size = size;
	io.latency_ns = lat_us * 1000;
	for (unsigned i = 0; i < count && STRATA_PROBE_ENABLED(vdev_io_done); i++) {
		io.start_ns = clock_mono_ns() - io.latency_ns;
		io.offset = (__u64)i * size;
		STRATA_PROBE(vdev_io_done, &io);
		fired++;
	}
	printf("fired %d\n", fired);
}

int main(int argc, char **argv)
{
	char line[512];
	pthread_t t;

	signal(SIGTERM, on_term);
	if (argc > 1 && !strcmp(argv[1], "--stats-socket") && start_stats_socket() < 0)
		return 1;
	if (pthread_create(&t, NULL, spinner, NULL))
		return 1;
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %d\n", (int)getpid());
	while (fgets(line, sizeof(line), stdin)) {
		char *arg = strchr(line, ' ');

		if (arg)
			*arg++ = 0;
		else
			arg = line + strlen(line);
		line[strcspn(line, "\n")] = 0;
		if (!strcmp(line, "nfs"))
			cmd_nfs(arg);
		else if (!strcmp(line, "tier"))
			cmd_tier(arg);
		else if (!strcmp(line, "vdev"))
			cmd_vdev(arg);
		else if (!strcmp(line, "spin")) {
			spin_rate = atoi(arg);
			printf("spin %lu\n", spin_fired);
		} else if (!strcmp(line, "keys")) {
			keys_only = (unsigned)atoi(arg);
			printf("keys %u\n", keys_only);
		} else if (!strcmp(line, "sem")) {
			arg[strcspn(arg, "\n")] = 0;
			printf("sem %u\n", semaphore(arg));
		} else
			printf("error unknown command %s\n", line);
	}
	return 0;
}
