/* stats.c — arcstats-like counters, NFS/MOUNT per-procedure counters, pool
 * and tier figures as JSON over a UNIX socket (see stats.h), the `ctl`
 * requests of `strata-engine ctl` and the file-name requests (names.h) on
 * the same socket. */
#include "stats.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"
#include "engine.h"
#include "names.h"
#include "nfs3.h"
#include "tiers.h"
#include "util.h"

static const char *const nfs_names[NFS3_NPROCS] = {
	"null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write",
	"create", "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link",
	"readdir", "readdirplus", "fsstat", "fsinfo", "pathconf", "commit",
};
static const char *const mount_names[MOUNT3_NPROCS] = {
	"null", "mnt", "dump", "umnt", "umntall", "export",
};

static struct {
	int fd;
	char path[108];
	pthread_t thread;
} st = { .fd = -1 };

struct jbuf { char *s; size_t len, cap; };

static void jprintf(struct jbuf *j, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(j->s + j->len, j->cap - j->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < j->cap - j->len) {
			j->len += (size_t)n;
			return;
		}
		j->cap = j->cap * 2 + (size_t)(n > 0 ? n : 0);
		j->s = xrealloc(j->s, j->cap);
	}
}

static uint64_t ld(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

char *stats_json(void)
{
	struct jbuf j = { xmalloc(4096), 0, 4096 };
	struct engine *e = &g_engine;
	struct arc_stats a;
	arc_get_stats(e->arc, &a);
	jprintf(&j, "{\"version\":1,\"pid\":%d,\"uptime_s\":%.3f,", (int)getpid(),
		(double)(clock_mono_ns() - e->start_ns) / 1e9);
	jprintf(&j, "\"arc\":{\"hits\":%llu,\"misses\":%llu,\"mru_hits\":%llu,\"mfu_hits\":%llu,"
		"\"mru_ghost_hits\":%llu,\"mfu_ghost_hits\":%llu,\"size\":%llu,\"c\":%llu,\"p\":%llu,"
		"\"evictions\":%llu,\"hdr_size\":%llu,\"data_size\":%llu,\"c_max\":%llu},",
		(unsigned long long)a.hits, (unsigned long long)a.misses,
		(unsigned long long)a.mru_hits, (unsigned long long)a.mfu_hits,
		(unsigned long long)a.mru_ghost_hits, (unsigned long long)a.mfu_ghost_hits,
		(unsigned long long)a.size, (unsigned long long)a.c, (unsigned long long)a.p,
		(unsigned long long)a.evictions, (unsigned long long)a.hdr_size,
		(unsigned long long)a.data_size, (unsigned long long)e->arc_max);
	jprintf(&j, "\"nfs\":{");
	for (int i = 0; i < NFS3_NPROCS; i++)
		jprintf(&j, "%s\"%s\":%llu", i ? "," : "", nfs_names[i],
			(unsigned long long)ld(&e->ctr.nfs_ops[i]));
	jprintf(&j, "},\"mount\":{");
	for (int i = 0; i < MOUNT3_NPROCS; i++)
		jprintf(&j, "%s\"%s\":%llu", i ? "," : "", mount_names[i],
			(unsigned long long)ld(&e->ctr.mount_ops[i]));
	jprintf(&j, "},\"rpc\":{\"nfs_errors\":%llu,\"rejects\":%llu,\"bad_records\":%llu,"
		"\"connections\":%llu,\"connections_open\":%llu,\"read_bytes\":%llu,\"write_bytes\":%llu},",
		(unsigned long long)ld(&e->ctr.nfs_errors), (unsigned long long)ld(&e->ctr.rpc_rejects),
		(unsigned long long)ld(&e->ctr.bad_records), (unsigned long long)ld(&e->ctr.connections),
		(unsigned long long)ld(&e->ctr.connections_open),
		(unsigned long long)ld(&e->ctr.read_bytes), (unsigned long long)ld(&e->ctr.write_bytes));
	jprintf(&j, "\"net\":{\"refused\":%llu,\"refused_per_addr\":%llu,\"evicted_idle\":%llu,"
		"\"closed_idle\":%llu,\"record_timeouts\":%llu,\"record_mem_waits\":%llu,\"backpressure\":%llu,"
		"\"unfinished_record_bytes\":%llu,\"queued_reply_bytes\":%llu},",
		(unsigned long long)ld(&e->ctr.net_refused), (unsigned long long)ld(&e->ctr.net_refused_per_addr),
		(unsigned long long)ld(&e->ctr.net_evicted), (unsigned long long)ld(&e->ctr.net_idle_closed),
		(unsigned long long)ld(&e->ctr.net_record_timeouts), (unsigned long long)ld(&e->ctr.net_record_waits),
		(unsigned long long)ld(&e->ctr.net_backpressure), (unsigned long long)ld(&e->ctr.unfinished_record_bytes),
		(unsigned long long)ld(&e->ctr.queued_reply_bytes));
	jprintf(&j, "\"probes\":{\"nfs_ops_hits\":%llu,\"nfs_ops_ns\":%llu},",
		(unsigned long long)ld(&e->ctr.nfs_probe_hits), (unsigned long long)ld(&e->ctr.nfs_probe_ns));
	struct pool *p = e->pool;
	jprintf(&j, "\"pool\":{\"vdevs\":%u,\"total_bytes\":%llu,\"free_bytes\":%llu,\"dirty_bytes\":%llu,"
		"\"objects\":%llu,\"open_txg\":%llu,\"synced_txg\":%llu,\"syncs\":%llu,\"sync_failures\":%llu,"
		"\"reads\":%llu,\"writes\":%llu,\"bytes_read\":%llu,\"bytes_written\":%llu,\"o_direct\":%d}}\n",
		p->nvdevs, (unsigned long long)pool_total_bytes(p), (unsigned long long)pool_free_bytes(p),
		(unsigned long long)ld(&e->os->dirty_bytes), (unsigned long long)e->os->nobjects,
		(unsigned long long)ld(&e->os->open_txg), (unsigned long long)ld(&e->txg.synced_txg),
		(unsigned long long)ld(&e->txg.syncs), (unsigned long long)ld(&e->txg.failures),
		(unsigned long long)ld(&p->reads), (unsigned long long)ld(&p->writes),
		(unsigned long long)ld(&p->bytes_read), (unsigned long long)ld(&p->bytes_written), p->direct);
	j.len -= 2; /* reopen the object: drop "}\n"; per-vdev I/Os next to the flat groups */
	jprintf(&j, ",\"vdev_io\":[");
	for (uint32_t i = 0; i < p->nvdevs; i++)
		jprintf(&j, "%s{\"reads\":%llu,\"writes\":%llu,\"flushes\":%llu}", i ? "," : "",
			(unsigned long long)ld(&p->vdevs[i].reads), (unsigned long long)ld(&p->vdevs[i].writes),
			(unsigned long long)ld(&p->vdevs[i].flushes));
	jprintf(&j, "]}\n");
	char *tiers = tiers_stats_json(nfs3_reply_delay());
	j.len -= 2; /* reopen the object: drop "}\n" */
	jprintf(&j, ",%s}\n", tiers);
	free(tiers);
	return j.s;
}

static void serve_client(int fd)
{
	struct timeval tv = { 2, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	char line[512];
	size_t n = 0;
	while (n < sizeof(line) - 1) {
		ssize_t r = recv(fd, line + n, sizeof(line) - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (memchr(line, '\n', n))
			break;
	}
	line[n] = 0;
	line[strcspn(line, "\r\n")] = 0;
	char *out;
	if (!strcmp(line, "stats")) {
		out = stats_json();
	} else if (!strncmp(line, "name ", 5)) {
		out = names_name_json(line + 5);
	} else if (!strncmp(line, "lookup ", 7)) {
		out = names_lookup_json(line + 7);
	} else if (!strcmp(line, "removed")) {
		out = names_removed_json();
	} else if (!strncmp(line, "ctl ", 4)) {
		char msg[256];
		int rc = engine_ctl(line + 4, msg, sizeof(msg));
		char *esc = json_escaped(msg);
		size_t cap = strlen(esc) + 16;
		out = xmalloc(cap);
		snprintf(out, cap, rc ? "{\"error\":\"%s\"}\n" : "{\"ok\":\"%s\"}\n", esc);
		free(esc);
	} else {
		out = xmalloc(64 + strlen(line));
		snprintf(out, 64 + strlen(line), "{\"error\":\"unknown command\"}\n");
	}
	size_t len = strlen(out), done = 0;
	while (done < len) {
		ssize_t w = send(fd, out + done, len - done, MSG_NOSIGNAL);
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	free(out);
	close(fd);
}

static void *stats_thread(void *arg)
{
	for (;;) {
		int fd = accept4(st.fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			break;
		}
		serve_client(fd);
	}
	return arg;
}

int stats_start(const char *path, char *err, size_t errsz)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errsz, "stats socket path too long: %s", path);
		return -1;
	}
	char dir[sizeof(sa.sun_path)];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (mkdir(dir, 0755) && errno != EEXIST) {
			snprintf(err, errsz, "cannot create %s: %s", dir, strerror(errno));
			return -1;
		}
	}
	strcpy(sa.sun_path, path);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 16)) {
		snprintf(err, errsz, "cannot listen on stats socket %s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	st.fd = fd;
	snprintf(st.path, sizeof(st.path), "%s", path);
	if (pthread_create(&st.thread, NULL, stats_thread, NULL)) {
		snprintf(err, errsz, "cannot start the stats thread");
		return -1;
	}
	pthread_detach(st.thread);
	return 0;
}

void stats_stop(void)
{
	if (st.fd < 0)
		return;
	shutdown(st.fd, SHUT_RDWR);
	unlink(st.path);
}
