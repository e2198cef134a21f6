/* statcmd.c — the commands that talk to a running engine over its stats
 * socket: `strata-engine stats` prints the JSON it serves, `strata-engine ctl`
 * changes it at run time (L2ARC on/off, LZ4, fault-injection delays, ARC size). */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cmds.h"

#define STATS_DIR "/run/strata"

static const char CTL_HELP[] =
	"usage: strata-engine ctl [--socket PATH | --pid PID] REQUEST...\n"
	"requests:\n"
	"  l2arc on|off                 serve ARC misses from the cache devices, feed them (or not)\n"
	"  l2arc compress on|off        LZ4 for buffers fed from now on\n"
	"  inject-delay TIER DURATION   add DURATION (e.g. 50us; 0 clears) to every I/O of TIER:\n"
	"                               l2arc (cache reads), zil (log writes), pool (vdev reads),\n"
	"                               nfs (every NFS reply, before it is sent)\n"
	"  arc-max SIZE                 change the ARC's size (evicts down to it)\n";

/* Whether the engine of a stats socket named engine-PID.sock is gone (killed with -9: its
 * socket stays behind); such a socket is removed, so it is never counted as an engine. */
static int stale_socket(const char *path)
{
	const char *name = strrchr(path, '/');
	char *end;
	long pid = strtol(name ? name + strlen("/engine-") : path, &end, 10);
	if (pid <= 0 || strcmp(end, ".sock"))
		return 0;
	if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
		return 0;
	unlink(path); /* best effort: another user's leftover stays, and is still skipped */
	return 1;
}

/* The stats socket pid listens on: a listening AF_UNIX socket with a path (/proc/net/unix)
 * among its open files (/proc/PID/fd), so an engine serving with --stats-socket PATH is
 * found by its pid too; STATS_DIR/engine-PID.sock when none is found. */
static void socket_of_pid(long pid, char *path, size_t psz)
{
	char dir[64], link[64], line[4096];
	unsigned long *inodes = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d;
	FILE *f;

	snprintf(path, psz, STATS_DIR "/engine-%ld.sock", pid);
	snprintf(dir, sizeof(dir), "/proc/%ld/fd", pid);
	if (!(d = opendir(dir)))
		return;
	while ((e = readdir(d))) {   /* the inodes of its sockets */
		char at[320];
		unsigned long inode;
		ssize_t len;

		snprintf(at, sizeof(at), "%s/%s", dir, e->d_name);
		if ((len = readlink(at, link, sizeof(link) - 1)) <= 0)
			continue;
		link[len] = 0;
		if (sscanf(link, "socket:[%lu]", &inode) != 1)
			continue;
		if (n == cap) {
			unsigned long *more = realloc(inodes, (cap = cap ? 2 * cap : 64) * sizeof(*inodes));
			if (!more)
				break;
			inodes = more;
		}
		inodes[n++] = inode;
	}
	closedir(d);
	if (n && (f = fopen("/proc/net/unix", "r"))) {
		while (fgets(line, sizeof(line), f)) {
			unsigned long flags, inode;
			char name[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];

			/* Num RefCount Protocol Flags Type St Inode Path; Flags 0x10000: listening */
			if (sscanf(line, "%*s %*s %*s %lx %*s %*s %lu %108s", &flags, &inode, name) != 3 ||
			    !(flags & 0x10000) || name[0] != '/' || strlen(name) >= psz)
				continue;
			for (size_t i = 0; i < n; i++)
				if (inodes[i] == inode) {
					snprintf(path, psz, "%s", name);
					goto found;
				}
		}
found:
		fclose(f);
	}
	free(inodes);
}

/* --socket/--pid into path; returns the index of the first operand or -1 (rc set). */
static int parse_target(const char *cmd, int argc, char **argv, char *path, size_t psz, int *rc)
{
	static const struct option opts[] = {
		{ "socket", required_argument, 0, 's' },
		{ "pid", required_argument, 0, 'p' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+s:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (strlen(optarg) >= psz) {
				fprintf(stderr, "strata-engine %s: socket path too long\n", cmd);
				return *rc = 2, -1;
			}
			snprintf(path, psz, "%s", optarg);
			break;
		case 'p': {
			char *end;
			long pid = strtol(optarg, &end, 10);
			if (*end || pid <= 0) {
				fprintf(stderr, "strata-engine %s: bad --pid '%s'\n", cmd, optarg);
				return *rc = 2, -1;
			}
			if (kill((pid_t)pid, 0) && errno == ESRCH) {
				fprintf(stderr, "strata-engine %s: no process %ld\n", cmd, pid);
				return *rc = 1, -1;
			}
			socket_of_pid(pid, path, psz);
			if (access(path, F_OK)) {
				fprintf(stderr, "strata-engine %s: process %ld listens on no stats socket"
					" (is it a strata-engine?)\n", cmd, pid);
				return *rc = 1, -1;
			}
			break;
		}
		case 'h':
			if (!strcmp(cmd, "ctl"))
				fputs(CTL_HELP, stdout);
			else
				printf("usage: strata-engine stats [--socket PATH | --pid PID]\n");
			return *rc = 0, -1;
		default:
			fprintf(stderr, "strata-engine %s: unknown or incomplete option '%s'\n", cmd, argv[optind - 1]);
			return *rc = 2, -1;
		}
	}
	if (!path[0]) {
		glob_t g;
		size_t live = 0;
		const char *found = NULL;
		if (!glob(STATS_DIR "/engine-*.sock", 0, NULL, &g))
			for (size_t i = 0; i < g.gl_pathc; i++)
				if (!stale_socket(g.gl_pathv[i]) && !live++)
					found = g.gl_pathv[i];
		if (live != 1) {
			fprintf(stderr, "strata-engine %s: %s running engine found in " STATS_DIR
				" (use --socket or --pid)\n", cmd, live > 1 ? "more than one" : "no");
			globfree(&g);
			return *rc = 1, -1;
		}
		snprintf(path, psz, "%s", found);
		globfree(&g);
	}
	return optind;
}

/* Sends one line, returns the whole answer (malloc'd) or NULL after a message. */
static char *request(const char *cmd, const char *path, const char *line)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "strata-engine %s: cannot connect to %s: %m\n", cmd, path);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	size_t n = strlen(line);
	if (write(fd, line, n) != (ssize_t)n || write(fd, "\n", 1) != 1) {
		fprintf(stderr, "strata-engine %s: cannot send the request to %s\n", cmd, path);
		close(fd);
		return NULL;
	}
	char *out = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&out, &len);
	char buf[8192];
	ssize_t got;
	while ((got = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)got, m);
	fclose(m);
	close(fd);
	if (!len) {
		fprintf(stderr, "strata-engine %s: empty answer from %s\n", cmd, path);
		free(out);
		return NULL;
	}
	return out;
}

int cmd_stats(int argc, char **argv)
{
	char path[108] = "";
	int rc = 0, first = parse_target("stats", argc, argv, path, sizeof(path), &rc);
	if (first < 0)
		return rc;
	if (first != argc) {
		fprintf(stderr, "strata-engine stats: unexpected argument '%s'\n", argv[first]);
		return 2;
	}
	char *out = request("stats", path, "stats");
	if (!out)
		return 1;
	fputs(out, stdout);
	free(out);
	return 0;
}

int cmd_ctl(int argc, char **argv)
{
	char path[108] = "", line[512] = "ctl";
	int rc = 0, first = parse_target("ctl", argc, argv, path, sizeof(path), &rc);
	if (first < 0)
		return rc;
	if (first == argc) {
		fputs(CTL_HELP, stderr);
		return 2;
	}
	for (int i = first; i < argc; i++) {
		if (strlen(line) + strlen(argv[i]) + 2 > sizeof(line) || strpbrk(argv[i], "\r\n")) {
			fprintf(stderr, "strata-engine ctl: request too long or not one line\n");
			return 2;
		}
		strcat(line, " ");
		strcat(line, argv[i]);
	}
	char *out = request("ctl", path, line);
	if (!out)
		return 1;
	/* {"ok":"..."} or {"error":"..."}: print the message alone */
	char *msg = strchr(out, ':');
	int ok = !strncmp(out, "{\"ok\"", 5);
	if (msg && msg[1] == '"') {
		msg += 2;
		char *end = strrchr(msg, '"');
		if (end)
			*end = 0;
	} else {
		msg = out;
	}
	fprintf(ok ? stdout : stderr, ok ? "%s\n" : "strata-engine ctl: %s\n", msg);
	free(out);
	return ok ? 0 : 1;
}
