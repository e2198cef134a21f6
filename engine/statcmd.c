/* statcmd.c — `strata-engine stats [--socket PATH | --pid PID]`: prints the
 * JSON a running engine serves on its stats socket. */
#include <getopt.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cmds.h"

#define STATS_DIR "/run/strata"

int cmd_stats(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, 0, 's' },
		{ "pid", required_argument, 0, 'p' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	char path[108] = "";
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "s:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (strlen(optarg) >= sizeof(path)) {
				fprintf(stderr, "strata-engine stats: socket path too long\n");
				return 2;
			}
			strcpy(path, optarg);
			break;
		case 'p': {
			char *end;
			long pid = strtol(optarg, &end, 10);
			if (*end || pid <= 0) {
				fprintf(stderr, "strata-engine stats: bad --pid '%s'\n", optarg);
				return 2;
			}
			snprintf(path, sizeof(path), STATS_DIR "/engine-%ld.sock", pid);
			break;
		}
		case 'h':
			printf("usage: strata-engine stats [--socket PATH | --pid PID]\n");
			return 0;
		default:
			fprintf(stderr, "strata-engine stats: unknown or incomplete option '%s'\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "strata-engine stats: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (!path[0]) {
		glob_t g;
		if (glob(STATS_DIR "/engine-*.sock", 0, NULL, &g) || g.gl_pathc != 1) {
			fprintf(stderr, "strata-engine stats: %s running engine found in " STATS_DIR
				" (use --socket or --pid)\n", g.gl_pathc > 1 ? "more than one" : "no");
			globfree(&g);
			return 1;
		}
		snprintf(path, sizeof(path), "%s", g.gl_pathv[0]);
		globfree(&g);
	}
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "strata-engine stats: cannot connect to %s: %m\n", path);
		return 1;
	}
	if (write(fd, "stats\n", 6) != 6) {
		fprintf(stderr, "strata-engine stats: cannot send the request to %s\n", path);
		close(fd);
		return 1;
	}
	char buf[8192];
	ssize_t n;
	size_t total = 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		fwrite(buf, 1, (size_t)n, stdout);
		total += (size_t)n;
	}
	close(fd);
	if (!total) {
		fprintf(stderr, "strata-engine stats: empty answer from %s\n", path);
		return 1;
	}
	return 0;
}
