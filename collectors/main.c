/* main.c — strata-collect: command line, privileges, and the loop that reads control
 * commands from stdin and emits records at every wall-clock interval boundary
 * (collectors/FORMAT.md). */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "catalogue.h"
#include "collector.h"
#include "engine.h"
#include "fs.h"
#include "privileges.h"

#define EXIT_USAGE 2
#define EXIT_NOPERM 77
#define LINE_MAX_BYTES 4096

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level != LIBBPF_WARN)
		return 0;
	fprintf(stderr, "strata-collect: ");
	return vfprintf(stderr, fmt, ap);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: strata-collect [--engine PATH] [--engine-pid PID] [--catalogue] [--interval SECONDS]\n"
		"                      [--max-keys N] [--wire-iface PATTERN ...] [--wire-port PORT|rpcbind ...]\n"
		"                      [--wire-hook auto|tcx|tc] [--wire-programs auto|bounded]\n"
		"                      [--fs-pid PID]... [--fs-comm NAME]... [--fs-cgroup PATH]\n"
		"Reads `add ID STATISTIC BREAKDOWN [FIELD=VALUE ...]`, `remove ID`, `quit` on stdin and\n"
		"writes one JSON record per dataset per interval on stdout (collectors/FORMAT.md).\n");
}

static int die_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "strata-collect: %s%s\n", msg, arg ? arg : "");
	return EXIT_USAGE;
}

static long parse_long(const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	return v;
}

/* The default engine: strata-engine next to this program (build/bin). */
static char *default_engine(void)
{
	char self[PATH_MAX], path[PATH_MAX + 32];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		return NULL;
	self[len] = 0;
	snprintf(path, sizeof(path), "%s/strata-engine", dirname(self));
	return access(path, X_OK) == 0 ? realpath(path, NULL) : NULL;
}

static long long clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long now_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

/* Ticks an interval labelled t: first its interval record (FORMAT.md), how long it lasted
 * on CLOCK_MONOTONIC since the last tick and by how much the wall clock stepped meanwhile
 * (its advance beyond the monotonic one), then the datasets' records. */
static void tick(struct collector *c, long long t, long long wall, long long *last_wall, long long *last_mono)
{
	long long mono = clock_ns(CLOCK_MONOTONIC), length = mono - *last_mono;

	fprintf(c->out, "{\"v\":1,\"type\":\"interval\",\"t\":%lld,\"mono_ms\":%lld,\"step_ms\":%lld}\n", t,
		length / 1000000, (wall - *last_wall - length) / 1000000);
	*last_wall = wall;
	*last_mono = mono;
	collector_tick(c, t);
}

/* Splits buffered stdin into lines and runs them; false once "quit" is read. */
static bool run_lines(struct collector *c, char *buf, size_t *len)
{
	char *start = buf, *nl;
	bool go = true;

	while (go && (nl = memchr(start, '\n', (size_t)(buf + *len - start)))) {
		*nl = 0;
		go = collector_command(c, start);
		start = nl + 1;
	}
	*len = (size_t)(buf + *len - start);
	memmove(buf, start, *len);
	if (*len == LINE_MAX_BYTES - 1) { /* no newline in a full buffer */
		*len = 0;
		collector_reply_error(c, "", "control line longer than 4095 bytes: ignored");
	}
	return go;
}

static int run(struct collector *c, long interval)
{
	long long last_wall = now_ns(), last_mono = clock_ns(CLOCK_MONOTONIC);
	long long step = interval * 1000000000LL, next = (last_wall / step + 1) * step;
	char buf[LINE_MAX_BYTES];
	size_t len = 0;
	bool input_open = true;

	while (!stopping && input_open) {
		long long now = now_ns();
		struct pollfd pfd[1 + LAYER_COUNT] = { { .fd = STDIN_FILENO, .events = POLLIN } };
		int fds[LAYER_COUNT], nfds = collector_event_fds(c, fds, LAYER_COUNT);
		int timeout = now >= next ? 0 : (int)((next - now + 999999) / 1000000);

		for (int i = 0; i < nfds; i++)
			pfd[1 + i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		if (poll(pfd, (nfds_t)(1 + nfds), timeout) > 0 && nfds > 0)
			collector_events(c);
		if (pfd[0].revents) {
			ssize_t got = read(STDIN_FILENO, buf + len, sizeof(buf) - 1 - len);

			if (got <= 0) {
				input_open = false;
			} else {
				len += (size_t)got;
				input_open = run_lines(c, buf, &len);
			}
		}
		now = now_ns();
		if (now >= next) {
			/* the interval that just ended; after a stall, the skipped ones stay gaps */
			next = now / step * step;
			tick(c, next / 1000000000LL - interval, now, &last_wall, &last_mono);
			next += step;
		}
		if (ferror(c->out))
			return 1;
	}
	/* flush: the interval in progress, as a last (partial) record */
	tick(c, (next - step) / 1000000000LL, now_ns(), &last_wall, &last_mono);
	return ferror(c->out) ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "engine", required_argument, NULL, 'e' }, { "engine-pid", required_argument, NULL, 'p' },
		{ "catalogue", no_argument, NULL, 'c' },    { "interval", required_argument, NULL, 'i' },
		{ "max-keys", required_argument, NULL, 'k' }, { "help", no_argument, NULL, 'h' },
		{ "wire-iface", required_argument, NULL, 'w' }, { "wire-port", required_argument, NULL, 'P' },
		{ "fs-pid", required_argument, NULL, 'F' },  { "fs-comm", required_argument, NULL, 'C' },
		{ "fs-cgroup", required_argument, NULL, 'G' }, { "wire-hook", required_argument, NULL, 'H' },
		{ "wire-programs", required_argument, NULL, 'B' },
		{ NULL, 0, NULL, 0 },
	};
	const char *engine_arg = NULL;
	char *engine_path = NULL, why[256], fserr[256];
	long pid = -1, interval = 1, max_keys = 1024, port;
	struct layer_config cfg = { 0 };
	bool catalogue = false;
	struct collector c;
	struct sigaction sa = { .sa_handler = on_signal };
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'e':
			engine_arg = optarg;
			break;
		case 'p':
			if ((pid = parse_long(optarg, 1, INT_MAX)) < 0)
				return die_usage("--engine-pid needs a process id, not ", optarg);
			break;
		case 'c':
			catalogue = true;
			break;
		case 'i':
			if ((interval = parse_long(optarg, 1, 3600)) < 0)
				return die_usage("--interval needs whole seconds (1-3600), not ", optarg);
			break;
		case 'k':
			if ((max_keys = parse_long(optarg, 1, 65536)) < 0)
				return die_usage("--max-keys needs a number 1-65536, not ", optarg);
			break;
		case 'F':
			if (fs_choose_pid(optarg, fserr, sizeof(fserr)) < 0)
				return die_usage(fserr, NULL);
			break;
		case 'C':
			if (fs_choose_comm(optarg, fserr, sizeof(fserr)) < 0)
				return die_usage(fserr, NULL);
			break;
		case 'G':
			if (fs_choose_cgroup(optarg, fserr, sizeof(fserr)) < 0)
				return die_usage(fserr, NULL);
			break;
		case 'w':
			if (cfg.wire.nifaces == WIRE_PATTERNS_MAX)
				return die_usage("too many --wire-iface patterns", NULL);
			if (!optarg[0] || strlen(optarg) >= 64)
				return die_usage("--wire-iface needs an interface name or pattern, not ", optarg);
			cfg.wire.ifaces[cfg.wire.nifaces++] = optarg;
			break;
		case 'P':
			if (strcmp(optarg, "rpcbind") == 0) {
				cfg.wire.rpcbind = true;
				break;
			}
			if ((port = parse_long(optarg, 1, 65535)) < 0)
				return die_usage("--wire-port needs a TCP port (1-65535) or rpcbind, not ", optarg);
			if (cfg.wire.nports == WIRE_PORTS_MAX)
				return die_usage("too many --wire-port ports", NULL);
			cfg.wire.ports[cfg.wire.nports++] = (uint16_t)port;
			break;
		case 'H':
			if (strcmp(optarg, "auto") == 0)
				cfg.wire.hook = WIRE_HOOK_AUTO;
			else if (strcmp(optarg, "tcx") == 0)
				cfg.wire.hook = WIRE_HOOK_TCX;
			else if (strcmp(optarg, "tc") == 0)
				cfg.wire.hook = WIRE_HOOK_TC;
			else
				return die_usage("--wire-hook needs auto, tcx or tc, not ", optarg);
			break;
		case 'B':
			if (strcmp(optarg, "auto") == 0)
				cfg.wire.programs = WIRE_PROGRAMS_AUTO;
			else if (strcmp(optarg, "bounded") == 0)
				cfg.wire.programs = WIRE_PROGRAMS_BOUNDED;
			else
				return die_usage("--wire-programs needs auto or bounded, not ", optarg);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (optind < argc)
		return die_usage("unexpected argument ", argv[optind]);
	if (engine_arg && pid > 0)
		return die_usage("give --engine or --engine-pid, not both", NULL);
	if (engine_arg && !(engine_path = realpath(engine_arg, NULL)))
		return die_usage("no engine binary at ", engine_arg);
	if (pid > 0 && !(engine_path = engine_exe_of((pid_t)pid)))
		return die_usage("no process with pid ", argv[optind - 1]);
	if (!engine_path)
		engine_path = default_engine();

	if (catalogue) {
		catalogue_print(stdout, engine_path);
		free(engine_path);
		return 0;
	}
	if (!privileges_ok(why, sizeof(why))) {
		fprintf(stderr, "strata-collect: %s\n", why);
		free(engine_path);
		return EXIT_NOPERM;
	}
	libbpf_set_print(libbpf_log);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	cfg.max_keys = (unsigned)max_keys;
	if (cfg.wire.nports == 0 && !cfg.wire.rpcbind) {
		cfg.wire.ports[cfg.wire.nports++] = 2049;
		cfg.wire.rpcbind = true;
	}
	collector_init(&c, stdout, interval, &cfg, engine_path,
		       pid > 0 ? (pid_t)pid : (engine_path ? engine_find_pid(engine_path) : -1), pid > 0);
	rc = run(&c, interval);
	collector_fini(&c);
	return rc;
}
