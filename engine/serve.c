/* serve.c — `strata-engine serve`: options (and an optional config file of
 * "option value" lines), pool import, exports, listeners, stats socket,
 * rpcbind, then serve until SIGTERM/SIGINT and sync on the way out. */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmds.h"
#include "engine.h"
#include "net.h"
#include "rpcbind.h"
#include "stats.h"
#include "tiers.h"
#include "util.h"

struct engine g_engine;

struct serve_opts {
	char *pool;
	char **exports;
	int nexports;
	char *listen, *port_file, *stats_socket;
	int mount_port; /* -1: same port as NFS */
	uint64_t arc_max, dirty_max, sync_ms;
	int workers, rpcbind;
	enum arc_policy policy;
	struct tier_opts tiers;
	struct net_limits net;
};

/* Long-only options of the network limits (net.h). */
enum { OPT_MAX_CONNS = 256, OPT_MAX_CONNS_ADDR, OPT_RECORD_MEM, OPT_RECORD_TIMEOUT, OPT_IDLE_TIMEOUT,
       OPT_REPLY_QUEUE, OPT_REPLY_MEM };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: strata-engine serve --pool PATH[,PATH...] --export NAME[:OPTIONS] [--export ...]\n"
		"  --listen ADDR:PORT      NFS (and MOUNT) address, default 127.0.0.1:2049; port 0 picks one\n"
		"  --mount-port P          serve MOUNT on its own port (0 picks one)\n"
		"  --arc-max SIZE          ARC size, default 256M\n"
		"  --arc-policy arc|lru    replacement policy, default arc\n"
		"  --workers N             threads for requests that may wait (writes, misses), default 8\n"
		"  --sync-interval DUR     txg sync period, default 5s\n"
		"  --dirty-max SIZE        dirty data before writers wait for a sync, default 256M\n"
		"  --stats-socket PATH     default /run/strata/engine-<pid>.sock\n"
		"  --port-file FILE        write 'listening nfs=ADDR:PORT mount=ADDR:PORT' there\n"
		"  --no-rpcbind            do not register with rpcbind\n"
		"  --config FILE           read 'option value' lines (command-line options win)\n"
		"limits (a client's share of the front-end):\n"
		"  --max-connections N     connections at once, default 4096 (fitted to the descriptor limit)\n"
		"  --max-connections-per-addr N  from one address, default 256; from addresses no export\n"
		"                          allows: 4 each, 1/8 of --max-connections in all\n"
		"  --record-mem-max SIZE   bytes of unfinished records, all clients, default 64M\n"
		"  --record-timeout DUR    a record's first byte to its last, default 30s\n"
		"  --idle-timeout DUR      a connection moving no byte is closed, default 10m\n"
		"  --reply-queue-max SIZE  unsent replies at which a connection stops being read, default 4M\n"
		"  --reply-mem-max SIZE    unsent replies, all connections, default 128M\n"
		"tiers:\n"
		"  --cache PATH[:SIZE]     L2ARC cache device (repeatable; a missing file is created, 1G default)\n"
		"  --l2arc on|off          start with the L2ARC serving and feeding (default on)\n"
		"  --l2arc-compress on|off LZ4 for L2ARC buffers (default on)\n"
		"  --l2arc-write-max SIZE  bytes fed per feed interval (default 8M)\n"
		"  --log PATH[:SIZE]       separate intent-log device (SLOG); default: the pool's log region\n"
		"  --no-zil                stable writes and COMMIT wait for a txg sync instead of the log\n"
		"  --vdev-model SPEC       latency model of each of the pool's vdevs: none, hdd[:...], ssd[:...]\n"
		"  --cache-model SPEC      of the cache devices;  --log-model SPEC  of the SLOG\n"
		"export OPTIONS (comma separated): allow=CIDR (repeatable, default 127.0.0.0/8 and ::1),\n"
		"  root_squash (default) | no_root_squash, anonuid=N, anongid=N, recordsize=SIZE, ro | rw,\n"
		"  mode=OCTAL (the export root's mode; a new root is 0755, e.g. mode=1777 for a shared one)\n");
}

static int bad(const char *fmt, const char *arg)
{
	fprintf(stderr, "strata-engine serve: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return 2;
}

/* Prepends the options of a config file to argv. */
static int expand_config(int *argc, char ***argv)
{
	const char *file = NULL;
	for (int i = 1; i < *argc; i++) {
		if (!strcmp((*argv)[i], "--config") && i + 1 < *argc)
			file = (*argv)[i + 1];
		else if (!strncmp((*argv)[i], "--config=", 9))
			file = (*argv)[i] + 9;
	}
	if (!file)
		return 0;
	FILE *f = fopen(file, "r");
	if (!f)
		return bad("cannot read config file %s", file);
	char **v = xcalloc((size_t)*argc + 1, sizeof(char *));
	int n = 0, cap = *argc + 1;
	v[n++] = (*argv)[0];
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		char *s = line + strspn(line, " \t");
		s[strcspn(s, "\r\n#")] = 0;
		if (!*s)
			continue;
		char *key = s, *val = s + strcspn(s, " \t=");
		if (*val)
			*val++ = 0;
		val += strspn(val, " \t=");
		char *end = val + strlen(val);
		while (end > val && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = 0;
		if (n + 3 >= cap) {
			cap = cap * 2 + 4;
			v = xrealloc(v, (size_t)cap * sizeof(char *));
		}
		char opt[256];
		snprintf(opt, sizeof(opt), "--%s", key);
		v[n++] = xstrdup(opt);
		if (*val)
			v[n++] = xstrdup(val);
	}
	fclose(f);
	v = xrealloc(v, (size_t)(n + *argc + 1) * sizeof(char *));
	for (int i = 1; i < *argc; i++)
		v[n++] = (*argv)[i];
	v[n] = NULL;
	*argc = n;
	*argv = v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct serve_opts *o)
{
	static const struct option opts[] = {
		{ "pool", required_argument, 0, 'P' },
		{ "export", required_argument, 0, 'e' },
		{ "listen", required_argument, 0, 'l' },
		{ "mount-port", required_argument, 0, 'm' },
		{ "arc-max", required_argument, 0, 'a' },
		{ "arc-policy", required_argument, 0, 'A' },
		{ "workers", required_argument, 0, 'w' },
		{ "sync-interval", required_argument, 0, 's' },
		{ "dirty-max", required_argument, 0, 'd' },
		{ "stats-socket", required_argument, 0, 'S' },
		{ "port-file", required_argument, 0, 'f' },
		{ "no-rpcbind", no_argument, 0, 'R' },
		{ "config", required_argument, 0, 'c' },
		{ "cache", required_argument, 0, 'C' },
		{ "l2arc", required_argument, 0, 'L' },
		{ "l2arc-compress", required_argument, 0, 'Z' },
		{ "l2arc-write-max", required_argument, 0, 'W' },
		{ "log", required_argument, 0, 'g' },
		{ "no-zil", no_argument, 0, 'N' },
		{ "vdev-model", required_argument, 0, 'V' },
		{ "cache-model", required_argument, 0, 'M' },
		{ "log-model", required_argument, 0, 'G' },
		{ "max-connections", required_argument, 0, OPT_MAX_CONNS },
		{ "max-connections-per-addr", required_argument, 0, OPT_MAX_CONNS_ADDR },
		{ "record-mem-max", required_argument, 0, OPT_RECORD_MEM },
		{ "record-timeout", required_argument, 0, OPT_RECORD_TIMEOUT },
		{ "idle-timeout", required_argument, 0, OPT_IDLE_TIMEOUT },
		{ "reply-queue-max", required_argument, 0, OPT_REPLY_QUEUE },
		{ "reply-mem-max", required_argument, 0, OPT_REPLY_MEM },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	memset(o, 0, sizeof(*o));
	o->listen = "127.0.0.1:2049";
	o->mount_port = -1;
	o->arc_max = 256ull << 20;
	o->dirty_max = 256ull << 20;
	o->sync_ms = 5000;
	o->workers = 8;
	o->rpcbind = 1;
	o->net = (struct net_limits)NET_LIMITS_DEFAULT;
	o->exports = xcalloc((size_t)argc + 1, sizeof(char *));
	int c;
	uint64_t v;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'P': o->pool = optarg; break;
		case 'e': o->exports[o->nexports++] = optarg; break;
		case 'l': o->listen = optarg; break;
		case 'm':
			if (parse_size(optarg, &v) || v > 65535)
				return bad("bad --mount-port '%s' (0..65535)", optarg);
			o->mount_port = (int)v;
			break;
		case 'a':
			if (parse_size(optarg, &o->arc_max) || o->arc_max < (1u << 20))
				return bad("bad --arc-max '%s' (a size such as 512M, at least 1M)", optarg);
			break;
		case 'A':
			if (!strcmp(optarg, "arc"))
				o->policy = ARC_POLICY_ARC;
			else if (!strcmp(optarg, "lru"))
				o->policy = ARC_POLICY_LRU;
			else
				return bad("bad --arc-policy '%s' (arc or lru)", optarg);
			break;
		case 'w':
			if (parse_size(optarg, &v) || v < 1 || v > 256)
				return bad("bad --workers '%s' (1..256)", optarg);
			o->workers = (int)v;
			break;
		case 's':
			if (parse_duration_ms(optarg, &o->sync_ms) || o->sync_ms < 10 || o->sync_ms > 3600000)
				return bad("bad --sync-interval '%s' (e.g. 5s or 500ms)", optarg);
			break;
		case 'd':
			if (parse_size(optarg, &o->dirty_max) || o->dirty_max < (4u << 20))
				return bad("bad --dirty-max '%s' (at least 4M)", optarg);
			break;
		case 'S': o->stats_socket = optarg; break;
		case 'f': o->port_file = optarg; break;
		case 'R': o->rpcbind = 0; break;
		case 'c': break; /* expanded before parsing */
		case 'C':
			if (o->tiers.ncache == TIERS_MAX_CACHE)
				return bad("at most %s --cache devices", "8");
			o->tiers.cache[o->tiers.ncache++] = optarg;
			break;
		case 'L':
		case 'Z':
			if (strcmp(optarg, "on") && strcmp(optarg, "off"))
				return bad("want on or off, not '%s'", optarg);
			*(c == 'L' ? &o->tiers.l2arc_off : &o->tiers.l2arc_nocompress) = !strcmp(optarg, "off");
			break;
		case 'W':
			if (parse_size(optarg, &o->tiers.l2arc_write_max) || o->tiers.l2arc_write_max < (64u << 10))
				return bad("bad --l2arc-write-max '%s' (at least 64K)", optarg);
			break;
		case 'g': o->tiers.log = optarg; break;
		case 'N': o->tiers.no_zil = true; break;
		case 'V': o->tiers.vdev_model = optarg; break;
		case 'M': o->tiers.cache_model = optarg; break;
		case 'G': o->tiers.log_model = optarg; break;
		case OPT_MAX_CONNS:
		case OPT_MAX_CONNS_ADDR:
			if (parse_size(optarg, &v) || v < 1 || v > 1000000)
				return bad("bad connection limit '%s' (1..1000000)", optarg);
			*(c == OPT_MAX_CONNS ? &o->net.max_conns : &o->net.max_conns_per_addr) = (uint32_t)v;
			break;
		case OPT_RECORD_MEM:
		case OPT_REPLY_MEM:
			if (parse_size(optarg, &v) || v < (1u << 20))
				return bad("bad memory limit '%s' (a size, at least 1M)", optarg);
			*(c == OPT_RECORD_MEM ? &o->net.record_mem : &o->net.reply_mem) = v;
			break;
		case OPT_REPLY_QUEUE:
			if (parse_size(optarg, &o->net.reply_queue) || o->net.reply_queue < (64u << 10))
				return bad("bad --reply-queue-max '%s' (at least 64K)", optarg);
			break;
		case OPT_RECORD_TIMEOUT:
		case OPT_IDLE_TIMEOUT:
			if (parse_duration_ms(optarg, &v) || v < 100 || v > 86400000)
				return bad("bad timeout '%s' (100ms..24h, e.g. 30s)", optarg);
			*(c == OPT_RECORD_TIMEOUT ? &o->net.record_timeout_ms : &o->net.idle_timeout_ms) = v;
			break;
		case 'h': usage(stdout); exit(0);
		case ':':
		default:
			return bad("unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return bad("unexpected argument '%s'", argv[optind]);
	if (!o->pool)
		return bad("%s", "--pool PATH[,PATH...] is required");
	if (!o->nexports)
		return bad("%s", "at least one --export NAME[:OPTIONS] is required");
	return 0;
}

/* "ADDR:PORT", "[V6]:PORT" or "ADDR" (default port 2049). */
static int split_listen(const char *s, char *host, size_t hsz, uint16_t *port)
{
	const char *colon;
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (!close || (size_t)(close - s - 1) >= hsz)
			return -1;
		memcpy(host, s + 1, (size_t)(close - s - 1));
		host[close - s - 1] = 0;
		colon = close[1] == ':' ? close + 1 : NULL;
		if (close[1] && !colon)
			return -1;
	} else {
		colon = strrchr(s, ':');
		size_t n = colon ? (size_t)(colon - s) : strlen(s);
		if (!n || n >= hsz)
			return -1;
		memcpy(host, s, n);
		host[n] = 0;
	}
	uint64_t p = 2049;
	if (colon && (parse_size(colon + 1, &p) || p > 65535))
		return -1;
	*port = (uint16_t)p;
	return 0;
}

static int write_port_file(const char *path, const char *line)
{
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	FILE *f = fopen(tmp, "w");
	if (!f || fprintf(f, "%s\n", line) < 0 || fclose(f) || rename(tmp, path)) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static uint16_t port_of(const char *bound)
{
	return (uint16_t)atoi(strrchr(bound, ':') + 1);
}

int cmd_serve(int argc, char **argv)
{
	struct serve_opts o;
	int rc = expand_config(&argc, &argv);
	if (rc || (rc = parse_opts(argc, argv, &o)))
		return rc;
	char err[512];
	struct engine *e = &g_engine;
	e->start_ns = clock_mono_ns();
	e->exports = xcalloc((size_t)o.nexports, sizeof(struct export));
	for (int i = 0; i < o.nexports; i++) {
		if (export_parse(o.exports[i], &e->exports[i], err, sizeof(err)))
			return bad("%s", err);
		for (int k = 0; k < i; k++)
			if (!strcmp(e->exports[k].name, e->exports[i].name))
				return bad("export '%s' given twice", e->exports[i].name);
	}
	e->nexports = o.nexports;
	char host[256];
	uint16_t port;
	if (split_listen(o.listen, host, sizeof(host), &port))
		return bad("bad --listen '%s' (want ADDR:PORT)", o.listen);

	/* Signals are taken by sigwait in this thread only. */
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);

	char **paths;
	int npaths = split_paths(o.pool, &paths);
	if (npaths < 1)
		return bad("bad --pool '%s'", o.pool);
	e->pool = pool_open(paths, (uint32_t)npaths, err, sizeof(err));
	if (!e->pool) {
		fprintf(stderr, "strata-engine serve: %s\n", err);
		return 1;
	}
	if (!e->pool->direct)
		fprintf(stderr, "strata-engine serve: note: the filesystem refused O_DIRECT; using buffered I/O\n");
	int new_secret = pool_ensure_secret(e->pool, err, sizeof(err));
	if (new_secret < 0) {
		fprintf(stderr, "strata-engine serve: %s\n", err);
		return 1;
	}
	e->arc_max = o.arc_max;
	e->arc = arc_create(o.arc_max, o.policy);
	e->os = objset_create(e->pool, e->arc);
	if (txg_import(&e->txg, e->os, err, sizeof(err)) || tiers_setup(&o.tiers, err, sizeof(err))) {
		fprintf(stderr, "strata-engine serve: %s\n", err);
		return 1;
	}
	if (new_secret) {
		/* a pool made before handles had a MAC: its old handles all go stale */
		fprintf(stderr, "strata-engine serve: note: created the pool's handle secret; clients must mount again\n");
		objset_new_generations(e->os);
	}
	for (int i = 0; i < e->nexports; i++)
		e->exports[i].ds = objset_dataset(e->os, e->exports[i].name, e->exports[i].recordsize,
						  e->exports[i].root_mode, 1);
	if (txg_sync(&e->txg)) {
		fprintf(stderr, "strata-engine serve: cannot write to the pool\n");
		return 1;
	}
	e->txg.synced_txg = e->os->open_txg - 1;

	int fds[2], nfds = 0;
	char nfs_bound[300], mount_bound[300];
	fds[nfds] = net_listen(host, port, nfs_bound, sizeof(nfs_bound), err, sizeof(err));
	if (fds[nfds++] < 0) {
		fprintf(stderr, "strata-engine serve: %s\n", err);
		return 1;
	}
	snprintf(mount_bound, sizeof(mount_bound), "%s", nfs_bound);
	if (o.mount_port >= 0) {
		fds[nfds] = net_listen(host, (uint16_t)o.mount_port, mount_bound, sizeof(mount_bound), err, sizeof(err));
		if (fds[nfds++] < 0) {
			fprintf(stderr, "strata-engine serve: %s\n", err);
			return 1;
		}
	}
	char sockpath[256];
	if (o.stats_socket)
		snprintf(sockpath, sizeof(sockpath), "%s", o.stats_socket);
	else
		snprintf(sockpath, sizeof(sockpath), "/run/strata/engine-%d.sock", (int)getpid());
	if (stats_start(sockpath, err, sizeof(err))) {
		fprintf(stderr, "strata-engine serve: %s\n", err);
		return 1;
	}
	uint64_t verf = clock_mono_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
	memcpy(e->write_verf, &verf, 8);
	if (txg_start(&e->txg, o.sync_ms, o.dirty_max) || net_start(fds, nfds, o.workers, &o.net)) {
		fprintf(stderr, "strata-engine serve: cannot start threads\n");
		stats_stop();
		return 1;
	}
	if (o.rpcbind)
		rpcbind_register(port_of(nfs_bound), port_of(mount_bound));
	char line[700];
	snprintf(line, sizeof(line), "listening nfs=%s mount=%s", nfs_bound, mount_bound);
	if (o.port_file && write_port_file(o.port_file, line)) {
		fprintf(stderr, "strata-engine serve: cannot write port file %s: %s\n", o.port_file, strerror(errno));
		stats_stop();
		rpcbind_unregister();
		return 1;
	}
	printf("%s\n", line);
	fflush(stdout);

	int sig;
	do
		sigwait(&sigs, &sig);
	while (sig == SIGHUP);
	rpcbind_unregister();
	net_stop();
	int serr = txg_stop(&e->txg);
	stats_stop();
	tiers_shutdown();
	if (serr) {
		fprintf(stderr, "strata-engine serve: final sync failed; the pool holds the last synced txg\n");
		return 1;
	}
	return 0;
}
