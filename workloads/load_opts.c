/* load_opts.c — parses and validates strata-load's command line. */
#include "load_opts.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "parse_duration.h"
#include "parse_size.h"

#define MAX_CLIENTS 1000
#define MAX_NETNS_CLIENTS 254
#define MAX_THREADS 4096
#define MAX_IO_SIZE (16u << 20)

static const char HELP[] =
	"strata-load: a multi-client NFSv3 load generator for any NFSv3 server (the strata\n"
	"engine, Linux nfsd, nfs-ganesha). Each client is a thread with its own TCP connection\n"
	"and AUTH_SYS uid (10000 + N) keeping --threads requests in flight; at the end it prints\n"
	"one line (ops/s, MiB/s, errors), or a JSON report with per-op latencies (--json).\n"
	"\n"
	"usage: strata-load --server HOST [--nfsport P --mountport Q] --export /NAME\n"
	"                   --profile randread|seqread|write|mixed|stepup|seed-l2arc\n"
	"                   [--io-size 8k] [--files N] [--file-size SIZE | --working-set SIZE]\n"
	"                   [--clients N] [--threads T] [--duration 10s] [--rate OPS]\n"
	"                   [--stable unstable|data_sync|file_sync] [--step-interval 60s]\n"
	"                   [--read-pct P] [--netns [--netns-delay 1s]] [--seed S] [--setup|--setup-only]\n"
	"                   [--pair-nfsport P --pair-mountport Q [--pair-export /NAME]]\n"
	"                   [--json FILE|-]\n"
	"\n"
	"profiles (what each request stream does):\n"
	"  randread    READ --io-size at a random aligned offset of a random file\n"
	"  seqread     READ a file from start to end, then the next file\n"
	"  write       streaming WRITEs with --stable; unstable ones COMMIT each finished file\n"
	"  mixed       --read-pct (70) random READs, the rest random WRITEs with --stable\n"
	"  stepup      randread, one stream per client more every --step-interval (60s)\n"
	"  seed-l2arc  LOOKUP a random file, READ eight consecutive 128k blocks; 50 streams\n"
	"\n"
	"working set: --files (16) files load-0000000... of --file-size (8m) in the export's\n"
	"root, or --working-set SIZE split over them. --setup creates the missing ones first\n"
	"(the root must be writable by uid 10000+), --setup-only stops after that.\n"
	"Sizes: 4096, 8k, 1m, 2g (powers of 1024). Durations: 10, 2s, 500ms, 1m.\n"
	"Defaults: 1 client, 1 thread, 10s, 8k I/O.\n"
	"\n"
	"examples (one per profile):\n"
	"  strata-load --server 127.0.0.1 --export /data --setup --profile randread --clients 4 --threads 8\n"
	"  strata-load --server 127.0.0.1 --export /data --setup --profile seqread --io-size 1m --duration 30s\n"
	"  strata-load --server 127.0.0.1 --export /data --setup --profile write --stable file_sync\n"
	"  strata-load --server 127.0.0.1 --export /data --setup --profile mixed --read-pct 50 --rate 2000\n"
	"  strata-load --server 127.0.0.1 --export /data --setup --profile stepup --step-interval 10s --duration 1m\n"
	"  strata-load --server 127.0.0.1 --export /data --setup --profile seed-l2arc --clients 5\n"
	"\n"
	"pointing it at a server:\n"
	"  strata engine  strata-engine serve --pool POOL --export 'data:mode=1777' registers\n"
	"                 with rpcbind; with --no-rpcbind give the ports it prints at start\n"
	"                 ('listening nfs=ADDR:P mount=ADDR:Q') as --nfsport P --mountport Q\n"
	"  nfsd           a directory writable by uid 10000+ (chmod 1777) in /etc/exports, e.g.\n"
	"                 '/srv/data 127.0.0.1(rw,insecure)', then --export /srv/data\n"
	"                 (rpcbind, which nfsd needs anyway, gives the ports)\n"
	"  nfs-ganesha    an EXPORT with Protocols = 3, Access_Type = RW and its Pseudo path as\n"
	"                 --export; without rpcbind: --nfsport 2049 --mountport its MNT_Port\n"
	"  --netns (root) gives each client its own address 10.213.B.N+1: the export must allow\n"
	"                 10.213.0.0/16, e.g. on the engine\n"
	"                 --export 'data:mode=1777,allow=127.0.0.0/8,allow=10.213.0.0/16'\n"
	"\n"
	"Exit status: 0, 1 when the run failed or any RPC failed (one line why), 2 for bad flags.\n"
	"More: workloads/PROFILES.md.\n";

static const char *const PROFILES[] = {
	[PROFILE_NONE] = "none", [PROFILE_RANDREAD] = "randread",
	[PROFILE_SEQREAD] = "seqread", [PROFILE_WRITE] = "write",
	[PROFILE_MIXED] = "mixed", [PROFILE_STEPUP] = "stepup",
	[PROFILE_SEED_L2ARC] = "seed-l2arc",
};
static const char *const STABLES[] = { "unstable", "data_sync", "file_sync" };

const char *load_profile_name(enum load_profile p) { return PROFILES[p]; }
const char *load_stable_name(enum load_stable s) { return STABLES[s]; }

static void __attribute__((noreturn, format(printf, 1, 2))) die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("strata-load: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(2);
}

/* A size option ("8k", "1m", "4096"; parse_size.h) in bytes; dies unless it is one above 0. */
static uint64_t size_option(const char *flag, const char *s)
{
	uint64_t v;

	if (parse_size(s, &v) < 0 || v == 0)
		die_usage("%s: not a positive size: '%s'", flag, s);
	return v;
}

static long parse_int(const char *flag, const char *s, long lo, long hi)
{
	char *end;

	errno = 0;
	long v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		die_usage("%s: expected an integer in %ld..%ld, got '%s'", flag, lo, hi, s);
	return v;
}

/* A duration option in seconds ("10", "2s", "500ms", "1m"; parse_duration.h) in lo..1e7. */
static double parse_secs(const char *flag, const char *s, double lo)
{
	double v;

	if (parse_duration_s(s, &v) < 0 || v < lo || v > 1e7)
		die_usage("%s: expected a duration of at least %gs such as 10, 2s, 500ms or 1m, got '%s'",
			  flag, lo, s);
	return v;
}

/* A rate option: a number in lo..1e7. */
static double parse_rate(const char *flag, const char *s, double lo)
{
	char *end;

	errno = 0;
	double v = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(v) || v < lo || v > 1e7)
		die_usage("%s: expected a number >= %g, got '%s'", flag, lo, s);
	return v;
}

static int lookup_name(const char *flag, const char *s, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	die_usage("%s: unknown value '%s'", flag, s);
	return -1;
}

enum {
	O_SERVER = 256, O_NFSPORT, O_MOUNTPORT, O_EXPORT, O_PROFILE, O_IOSIZE, O_FILES,
	O_FILESIZE, O_WORKINGSET, O_CLIENTS, O_THREADS, O_DURATION, O_RATE, O_STABLE,
	O_STEP, O_READPCT, O_NETNS, O_NETNS_DELAY, O_SEED, O_SETUP, O_SETUPONLY, O_JSON, O_HELP,
	O_PAIR_NFSPORT, O_PAIR_MOUNTPORT, O_PAIR_EXPORT,
};

static const struct option LONGOPTS[] = {
	{ "server", required_argument, NULL, O_SERVER },
	{ "nfsport", required_argument, NULL, O_NFSPORT },
	{ "mountport", required_argument, NULL, O_MOUNTPORT },
	{ "export", required_argument, NULL, O_EXPORT },
	{ "profile", required_argument, NULL, O_PROFILE },
	{ "io-size", required_argument, NULL, O_IOSIZE },
	{ "files", required_argument, NULL, O_FILES },
	{ "file-size", required_argument, NULL, O_FILESIZE },
	{ "working-set", required_argument, NULL, O_WORKINGSET },
	{ "clients", required_argument, NULL, O_CLIENTS },
	{ "threads", required_argument, NULL, O_THREADS },
	{ "duration", required_argument, NULL, O_DURATION },
	{ "rate", required_argument, NULL, O_RATE },
	{ "stable", required_argument, NULL, O_STABLE },
	{ "step-interval", required_argument, NULL, O_STEP },
	{ "read-pct", required_argument, NULL, O_READPCT },
	{ "netns", no_argument, NULL, O_NETNS },
	{ "netns-delay", required_argument, NULL, O_NETNS_DELAY },
	{ "seed", required_argument, NULL, O_SEED },
	{ "setup", no_argument, NULL, O_SETUP },
	{ "setup-only", no_argument, NULL, O_SETUPONLY },
	{ "json", required_argument, NULL, O_JSON },
	{ "help", no_argument, NULL, O_HELP },
	{ "pair-nfsport", required_argument, NULL, O_PAIR_NFSPORT },
	{ "pair-mountport", required_argument, NULL, O_PAIR_MOUNTPORT },
	{ "pair-export", required_argument, NULL, O_PAIR_EXPORT },
	{ NULL, 0, NULL, 0 },
};

void load_opts_parse(int argc, char **argv, struct load_opts *o)
{
	uint64_t working_set = 0;
	bool have_io = false, have_threads = false, have_fsize = false;
	int c;

	*o = (struct load_opts){
		.io_size = 8192, .files = 16, .file_size = 8u << 20, .clients = 1,
		.threads = 1, .duration = 10, .stable = STABLE_UNSTABLE,
		.step_interval = 60, .read_pct = 70, .seed = 1,
	};
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", LONGOPTS, NULL)) != -1) {
		switch (c) {
		case O_SERVER: o->server = optarg; break;
		case O_NFSPORT: o->nfsport = parse_int("--nfsport", optarg, 1, 65535); break;
		case O_MOUNTPORT: o->mountport = parse_int("--mountport", optarg, 1, 65535); break;
		case O_EXPORT: o->export = optarg; break;
		case O_PROFILE:
			o->profile = lookup_name("--profile", optarg, PROFILES, 7);
			if (o->profile == PROFILE_NONE)
				die_usage("--profile: unknown value '%s'", optarg);
			break;
		case O_IOSIZE: o->io_size = size_option("--io-size", optarg); have_io = true; break;
		case O_FILES: o->files = parse_int("--files", optarg, 1, 10000000); break;
		case O_FILESIZE: o->file_size = size_option("--file-size", optarg); have_fsize = true; break;
		case O_WORKINGSET: working_set = size_option("--working-set", optarg); break;
		case O_CLIENTS: o->clients = parse_int("--clients", optarg, 1, MAX_CLIENTS); break;
		case O_THREADS:
			o->threads = parse_int("--threads", optarg, 1, MAX_THREADS);
			have_threads = true;
			break;
		case O_DURATION: o->duration = parse_secs("--duration", optarg, 0.1); break;
		case O_RATE: o->rate = parse_rate("--rate", optarg, 0.001); break;
		case O_STABLE: o->stable = lookup_name("--stable", optarg, STABLES, 3); break;
		case O_STEP: o->step_interval = parse_secs("--step-interval", optarg, 0.1); break;
		case O_READPCT: o->read_pct = parse_int("--read-pct", optarg, 0, 100); break;
		case O_NETNS: o->netns = true; break;
		case O_NETNS_DELAY: o->netns_delay = parse_secs("--netns-delay", optarg, 0.001); break;
		case O_SEED: o->seed = parse_int("--seed", optarg, 0, LONG_MAX); break;
		case O_SETUP: o->setup = true; break;
		case O_SETUPONLY: o->setup = o->setup_only = true; break;
		case O_JSON: o->json = optarg; break;
		case O_HELP: fputs(HELP, stdout); exit(0);
		case O_PAIR_NFSPORT: o->pair_nfsport = parse_int("--pair-nfsport", optarg, 1, 65535); break;
		case O_PAIR_MOUNTPORT:
			o->pair_mountport = parse_int("--pair-mountport", optarg, 1, 65535);
			break;
		case O_PAIR_EXPORT: o->pair_export = optarg; break;
		case ':': die_usage("%s needs a value", argv[optind - 1]);
		default:
			die_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (!o->server)
		die_usage("--server is required");
	if (!o->export || o->export[0] != '/')
		die_usage("--export is required and must start with '/'");
	if (o->profile == PROFILE_NONE && !o->setup_only)
		die_usage("--profile is required (unless --setup-only)");
	if ((o->nfsport == 0) != (o->mountport == 0))
		die_usage("--nfsport and --mountport go together");
	if (o->netns_delay > 0 && !o->netns)
		die_usage("--netns-delay needs --netns");
	if (o->netns && o->clients > MAX_NETNS_CLIENTS)
		die_usage("--netns supports at most %d clients", MAX_NETNS_CLIENTS);
	if ((o->pair_nfsport == 0) != (o->pair_mountport == 0))
		die_usage("--pair-nfsport and --pair-mountport go together");
	if (o->pair_export && !o->pair_nfsport)
		die_usage("--pair-export needs --pair-nfsport and --pair-mountport");
	if (o->pair_export && o->pair_export[0] != '/')
		die_usage("--pair-export must start with '/'");
	if (o->pair_nfsport && !o->setup_only && o->profile != PROFILE_RANDREAD)
		die_usage("--pair drives randread only (each READ goes to both servers)");
	if (o->pair_nfsport && have_threads && o->threads != 1)
		die_usage("--pair keeps one request in flight per client: --threads must be 1");
	if (!o->pair_export)
		o->pair_export = o->export;
	if (working_set) {
		if (have_fsize)
			die_usage("--file-size and --working-set exclude each other");
		o->file_size = working_set / o->files;
	}
	if (o->profile == PROFILE_SEED_L2ARC) {
		if (!have_io)
			o->io_size = 128u << 10;
		if (!have_threads) /* the seed's 50 readers, spread over the clients */
			o->threads = (50 + o->clients - 1) / o->clients;
	}
	if (o->profile == PROFILE_STEPUP && !have_threads) /* no cap: step until the end */
		o->threads = (int)fmin(MAX_THREADS, 1 + floor(o->duration / o->step_interval));
	if (o->io_size > MAX_IO_SIZE)
		die_usage("--io-size: at most 16m");
	if (o->file_size < o->io_size)
		die_usage("--file-size (%llu) is smaller than --io-size (%llu)",
			  (unsigned long long)o->file_size, (unsigned long long)o->io_size);
	if (strlen(o->export) > 1000 || (o->pair_export && strlen(o->pair_export) > 1000))
		die_usage("--export: path too long");
}
