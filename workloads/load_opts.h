/* load_opts.h — strata-load's command-line options: what to run, against what. */
#ifndef STRATA_LOAD_OPTS_H
#define STRATA_LOAD_OPTS_H

#include <stdbool.h>
#include <stdint.h>

enum load_profile {
	PROFILE_NONE,      /* only with --setup-only */
	PROFILE_RANDREAD,  /* random aligned reads over the working set */
	PROFILE_SEQREAD,   /* each thread streams through the files in turn */
	PROFILE_WRITE,     /* streaming writes through the files */
	PROFILE_MIXED,     /* random reads and writes, --read-pct reads */
	PROFILE_STEPUP,    /* randread, one more thread per client every interval */
	PROFILE_SEED_L2ARC,/* LOOKUP a random file, 8 sequential reads from a random offset */
};

/* stable_how values of NFSv3 WRITE (RFC 1813). */
enum load_stable { STABLE_UNSTABLE = 0, STABLE_DATA_SYNC = 1, STABLE_FILE_SYNC = 2 };

struct load_opts {
	const char *server;        /* host name or address of the NFS server */
	int nfsport, mountport;    /* 0: ask the server's portmapper */
	const char *export;        /* export path, starts with '/' */
	enum load_profile profile;
	uint64_t io_size;          /* bytes per READ/WRITE */
	uint32_t files;            /* files in the working set */
	uint64_t file_size;        /* bytes per file */
	int clients;               /* connections, each with its own thread and identity */
	int threads;               /* outstanding requests per client (stepup: the cap) */
	double duration;           /* seconds of the run */
	double rate;               /* total RPCs/s over all clients, 0 = unlimited */
	enum load_stable stable;   /* stable_how of run writes */
	double step_interval;      /* stepup: seconds between thread increments */
	int read_pct;              /* mixed: percentage of reads */
	bool netns;                /* one network namespace + veth per client */
	double netns_delay;        /* seconds between a client's veth appearing and its first RPC */
	uint64_t seed;             /* RNG seed, also tags the data that run writes carry */
	bool setup, setup_only;    /* create the working set first (and stop there) */
	const char *json;          /* report path, "-" = stdout, NULL = none */
	int pair_nfsport, pair_mountport; /* --pair: server B on the same host (0: no pair) */
	const char *pair_export;   /* B's export (default: --export) */
};

/* Parses argv into *o. On bad input prints one line to stderr and exits 2;
 * on --help prints the usage and exits 0. */
void load_opts_parse(int argc, char **argv, struct load_opts *o);

const char *load_profile_name(enum load_profile p);
const char *load_stable_name(enum load_stable s);

#endif
