/* mkpool.c — `strata-engine mkpool PATH[,PATH...] [--size SIZE] [--recordsize SIZE]
 * [--log-size SIZE] [--force]`. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "pool.h"
#include "util.h"

int split_paths(const char *s, char ***out)
{
	int n = 0;
	char **v = xcalloc(strlen(s) + 2, sizeof(char *));
	char *copy = xstrdup(s);
	for (char *save, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		v[n++] = xstrdup(t);
	free(copy);
	*out = v;
	return n;
}

int cmd_mkpool(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "size", required_argument, 0, 's' },
		{ "recordsize", required_argument, 0, 'r' },
		{ "log-size", required_argument, 0, 'l' },
		{ "force", no_argument, 0, 'f' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	uint64_t size = 1ull << 30, rs = 128 * 1024, log_size = POOL_LOG_DEFAULT;
	int force = 0, c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:r:l:fh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_size(optarg, &size) || size < (16ull << 20)) {
				fprintf(stderr, "strata-engine mkpool: bad --size '%s' (at least 16M)\n", optarg);
				return 2;
			}
			break;
		case 'r':
			if (parse_size(optarg, &rs) || rs < POOL_MIN_RECORD || rs > POOL_MAX_RECORD || (rs & (rs - 1))) {
				fprintf(stderr, "strata-engine mkpool: bad --recordsize '%s' (power of two, 4k..1m)\n", optarg);
				return 2;
			}
			break;
		case 'l':
			if (parse_size(optarg, &log_size) || (log_size && log_size < (1u << 20))) {
				fprintf(stderr, "strata-engine mkpool: bad --log-size '%s' (0 or at least 1M)\n", optarg);
				return 2;
			}
			break;
		case 'f':
			force = 1;
			break;
		case 'h':
			printf("usage: strata-engine mkpool PATH[,PATH...] [--size SIZE] [--recordsize SIZE]\n"
			       "                            [--log-size SIZE] [--force]\n"
			       "  --log-size  intent-log region kept at the end of the first vdev, used when\n"
			       "              serve has no --log device (default: its size / 16, 4M..64M; 0: none)\n");
			return 0;
		default:
			fprintf(stderr, "strata-engine mkpool: unknown or incomplete option '%s'\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "strata-engine mkpool: want exactly one PATH[,PATH...] argument\n");
		return 2;
	}
	char **paths;
	int n = split_paths(argv[optind], &paths);
	if (n < 1 || n > 64) {
		fprintf(stderr, "strata-engine mkpool: want 1 to 64 vdev paths\n");
		return 2;
	}
	char err[512];
	int rc = 0;
	if (!force) {
		for (int i = 0; i < n; i++) {
			struct pool *p = pool_open(&paths[i], 1, err, sizeof(err));
			int exists = p != NULL || strstr(err, "does not belong");
			pool_close(p);
			if (exists) {
				fprintf(stderr, "strata-engine mkpool: %s already holds a strata pool (use --force)\n", paths[i]);
				rc = 1;
				goto out;
			}
		}
	}
	if (pool_create(paths, (uint32_t)n, size, (uint32_t)rs, log_size, err, sizeof(err))) {
		fprintf(stderr, "strata-engine mkpool: %s\n", err);
		rc = 1;
		goto out;
	}
	printf("created pool with %d vdev%s, recordsize %llu\n", n, n == 1 ? "" : "s", (unsigned long long)rs);
out:
	for (int i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
	return rc;
}
