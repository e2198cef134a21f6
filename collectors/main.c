/* main.c — strata-collect: command line, privileges, and the loop that reads control
 * commands from stdin and emits records at every wall-clock interval boundary
 * (collectors/FORMAT.md). */
#include <errno.h>
#include <getopt.h>
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
#include "clock.h"
#include "layers.h"
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
	const struct layer_option *o;
	int col = 0;

	fprintf(f, "usage: strata-collect [--catalogue] [--check-privileges] [--interval SECONDS] [--max-keys N]");
	for (int i = 0; (o = layer_option_at(i)); i++) {
		if (col == 0 || col + strlen(o->name) + strlen(o->arg) > 70) {
			fprintf(f, "\n                     ");
			col = 0;
		}
		col += fprintf(f, " [--%s %s]", o->name, o->arg);
	}
	fprintf(f, "\nReads `add ID STATISTIC BREAKDOWN [FIELD=VALUE ...]`, `remove ID`, `quit` on stdin and\n"
		   "writes one JSON record per dataset per interval on stdout (collectors/FORMAT.md).\n"
		   "--check-privileges: exit 0 if probes can be loaded, else 77 with the reason.\n");
}

static int die_usage(const char *msg, const char *arg)
{
	fprintf(stderr, "strata-collect: %s%s\n", msg, arg ? arg : "");
	return EXIT_USAGE;
}

struct ticks {
	long long wall, mono; /* when the last tick ran */
	long long t;          /* its label; LLONG_MIN before the first */
};

/* Ticks an interval labelled t: first its interval record (FORMAT.md), how long it lasted
 * on CLOCK_MONOTONIC since the last tick and by how much the wall clock stepped meanwhile
 * (its advance beyond the monotonic one), then the datasets' records: the interval's own
 * counts, or all since the last tick when it does not follow the last one (a stall, a
 * clock step forward), or when two intervals or more passed since (a clock step back; a
 * late tick of the interval after the last is less than two intervals after it). */
static void tick(struct collector *c, long long t, long long wall, struct ticks *last)
{
	long long mono = (long long)clock_mono_ns(), length = mono - last->mono;
	bool whole = last->t == LLONG_MIN || t != last->t + c->interval ||
		     length >= c->interval * 2000000000LL;

	fprintf(c->out, "{\"v\":1,\"type\":\"interval\",\"t\":%lld,\"mono_ms\":%lld,\"step_ms\":%lld}\n", t,
		length / 1000000, (wall - last->wall - length) / 1000000);
	*last = (struct ticks){ .wall = wall, .mono = mono, .t = t };
	collector_tick(c, t, whole);
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
	struct ticks last = { (long long)clock_ns(CLOCK_REALTIME), (long long)clock_mono_ns(), LLONG_MIN };
	long long step = interval * 1000000000LL, next = (last.wall / step + 1) * step;
	char buf[LINE_MAX_BYTES];
	size_t len = 0;
	bool input_open = true;

	while (!stopping && input_open) {
		long long now = (long long)clock_ns(CLOCK_REALTIME);
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
		now = (long long)clock_ns(CLOCK_REALTIME);
		if (now >= next) {
			/* the interval that just ended; after a stall, the skipped ones stay gaps */
			next = now / step * step;
			tick(c, next / 1000000000LL - interval, now, &last);
			next += step;
		}
		if (ferror(c->out))
			return 1;
	}
	/* flush: the interval in progress, as a last (partial) record */
	tick(c, (next - step) / 1000000000LL, (long long)clock_ns(CLOCK_REALTIME), &last);
	return ferror(c->out) ? 1 : 0;
}

#define OPTIONS_MAX 32
#define LAYER_OPTION 256 /* getopt's value of the first layer option */

/* The collector's own options, then every layer's. */
static void options_table(struct option *opts)
{
	static const struct option own[] = {
		{ "catalogue", no_argument, NULL, 'c' },      { "interval", required_argument, NULL, 'i' },
		{ "max-keys", required_argument, NULL, 'k' }, { "help", no_argument, NULL, 'h' },
		{ "check-privileges", no_argument, NULL, 'p' },
	};
	const struct layer_option *o;
	int n = 0;

	for (; n < (int)(sizeof(own) / sizeof(own[0])); n++)
		opts[n] = own[n];
	for (int i = 0; (o = layer_option_at(i)) && n < OPTIONS_MAX - 1; i++)
		opts[n++] = (struct option){ o->name, required_argument, NULL, LAYER_OPTION + i };
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
}

int main(int argc, char **argv)
{
	struct option opts[OPTIONS_MAX];
	char why[256];
	long interval = 1, max_keys = 1024;
	bool catalogue = false, check_only = false;
	struct collector c;
	struct sigaction sa = { .sa_handler = on_signal };
	int opt, rc;

	options_table(opts);
	while ((opt = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			catalogue = true;
			break;
		case 'i':
			if ((interval = option_long(optarg, 1, 3600)) < 0)
				return die_usage("--interval needs whole seconds (1-3600), not ", optarg);
			break;
		case 'k':
			if ((max_keys = option_long(optarg, 1, 65536)) < 0)
				return die_usage("--max-keys needs a number 1-65536, not ", optarg);
			break;
		case 'p':
			check_only = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			if (opt < LAYER_OPTION) {
				usage(stderr);
				return EXIT_USAGE;
			}
			if (layer_option_at(opt - LAYER_OPTION)->parse(optarg, why, sizeof(why)) < 0)
				return die_usage(why, NULL);
		}
	}
	if (optind < argc)
		return die_usage("unexpected argument ", argv[optind]);
	if (layers_options_done(why, sizeof(why)) < 0)
		return die_usage(why, NULL);
	if (catalogue) {
		catalogue_print(stdout);
		return 0;
	}
	if (!privileges_ok(why, sizeof(why))) {
		fprintf(stderr, "strata-collect: %s\n", why);
		return EXIT_NOPERM;
	}
	if (check_only)
		return 0;
	libbpf_set_print(libbpf_log);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	collector_init(&c, stdout, interval, &(struct layer_config){ .max_keys = (unsigned)max_keys });
	rc = run(&c, interval);
	collector_fini(&c);
	return rc;
}
