/* rpc_session.c — a libnfs client session that calls every NFSv3 procedure
 * (all 22) and every MOUNT procedure the engine serves (NULL, MNT, DUMP,
 * UMNT, UMNTALL, EXPORT), in a fixed order.  record_rpc_corpus.py runs it
 * through a recording proxy to make the RPC fuzz corpus; the harness replays
 * the same session to build its file tree (same object ids).
 * Usage: strata-rpc-session HOST NFSPORT MOUNTPORT EXPORT */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs.h>

/* libnfs keeps struct nfs_fh in its private header; nfs_get_fh returns one. */
struct nfs_fh { int len; char *val; };

static struct nfs_context *nfs;
static int failures;

static void check(int rc, const char *what)
{
	if (rc < 0) {
		fprintf(stderr, "rpc_session: %s: %s\n", what, nfs_get_error(nfs));
		failures++;
	}
}

/* Raw calls: one outstanding call, serviced until its callback ran. */
struct wait { int done, status; };

static void raw_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct wait *w = priv;
	w->done = 1;
	w->status = status;
}

static void raw_wait(struct rpc_context *rpc, struct wait *w, const char *what)
{
	while (!w->done) {
		struct pollfd p = { .fd = rpc_get_fd(rpc), .events = rpc_which_events(rpc) };
		if (poll(&p, 1, 5000) <= 0 || rpc_service(rpc, p.revents) < 0) {
			fprintf(stderr, "rpc_session: %s: %s\n", what, rpc_get_error(rpc));
			failures++;
			return;
		}
	}
	if (w->status != RPC_STATUS_SUCCESS) {
		fprintf(stderr, "rpc_session: %s: rpc status %d\n", what, w->status);
		failures++;
	}
}

static void mount_calls(const char *host, int port, const char *export)
{
	struct rpc_context *rpc = rpc_init_context();
	struct wait w = { 0 };
	if (rpc_connect_async(rpc, host, port, raw_cb, &w))
		return (void)(failures++, fprintf(stderr, "rpc_session: mount connect: %s\n", rpc_get_error(rpc)));
	raw_wait(rpc, &w, "mount connect");
	w = (struct wait){ 0 };
	rpc_mount3_null_async(rpc, raw_cb, &w);
	raw_wait(rpc, &w, "MOUNT NULL");
	w = (struct wait){ 0 };
	rpc_mount3_export_async(rpc, raw_cb, &w);
	raw_wait(rpc, &w, "MOUNT EXPORT");
	w = (struct wait){ 0 };
	rpc_mount3_mnt_async(rpc, raw_cb, (char *)export, &w);
	raw_wait(rpc, &w, "MOUNT MNT");
	w = (struct wait){ 0 };
	rpc_mount3_dump_async(rpc, raw_cb, &w);
	raw_wait(rpc, &w, "MOUNT DUMP");
	w = (struct wait){ 0 };
	rpc_mount3_umnt_async(rpc, raw_cb, (char *)export, &w);
	raw_wait(rpc, &w, "MOUNT UMNT");
	w = (struct wait){ 0 };
	rpc_mount3_umntall_async(rpc, raw_cb, &w);
	raw_wait(rpc, &w, "MOUNT UMNTALL");
	rpc_destroy_context(rpc);
}

/* NULL, PATHCONF and READDIR, which libnfs's file API never sends. */
static void nfs_raw_calls(struct nfsfh *file, struct nfsfh *dir)
{
	struct rpc_context *rpc = nfs_get_rpc_context(nfs);
	struct nfs_fh *ff = nfs_get_fh(file), *df = nfs_get_fh(dir);
	struct wait w = { 0 };
	rpc_nfs3_null_async(rpc, raw_cb, &w);
	raw_wait(rpc, &w, "NFS NULL");
	PATHCONF3args pa = { .object = { .data = { .data_len = ff->len, .data_val = ff->val } } };
	w = (struct wait){ 0 };
	rpc_nfs3_pathconf_async(rpc, raw_cb, &pa, &w);
	raw_wait(rpc, &w, "NFS PATHCONF");
	READDIR3args ra = { .dir = { .data = { .data_len = df->len, .data_val = df->val } }, .count = 4096 };
	w = (struct wait){ 0 };
	rpc_nfs3_readdir_async(rpc, raw_cb, &ra, &w);
	raw_wait(rpc, &w, "NFS READDIR");
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s HOST NFSPORT MOUNTPORT EXPORT\n", argv[0]);
		return 2;
	}
	const char *host = argv[1], *export = argv[4];
	mount_calls(host, atoi(argv[3]), export);

	nfs = nfs_init_context();
	char url[512];
	snprintf(url, sizeof(url), "nfs://%s%s?version=3&nfsport=%s&mountport=%s", host, export, argv[2], argv[3]);
	struct nfs_url *u = nfs_parse_url_dir(nfs, url);
	if (!u || nfs_mount(nfs, u->server, u->path)) { /* MNT, FSINFO, GETATTR */
		fprintf(stderr, "rpc_session: mount %s: %s\n", url, nfs_get_error(nfs));
		return 1;
	}
	nfs_destroy_url(u);
	char buf[16384], link[64];
	memset(buf, 'x', sizeof(buf));
	struct nfsfh *f, *d;
	struct nfs_stat_64 st;
	struct nfs_statvfs_64 vfs;
	check(nfs_mkdir(nfs, "/fz"), "MKDIR");
	check(nfs_creat(nfs, "/fz/file", 0644, &f), "CREATE");
	check(nfs_pwrite(nfs, f, 0, 8192, buf), "WRITE");
	check(nfs_pwrite(nfs, f, 65536, 100, buf), "WRITE at 64k");
	check(nfs_fsync(nfs, f), "COMMIT");
	check(nfs_pread(nfs, f, 0, 4096, buf), "READ");
	check(nfs_pread(nfs, f, 60000, 8192, buf), "READ across a hole");
	check(nfs_stat64(nfs, "/fz/file", &st), "LOOKUP/GETATTR");
	check(nfs_chmod(nfs, "/fz/file", 0600), "SETATTR mode");
	check(nfs_truncate(nfs, "/fz/file", 32768), "SETATTR size");
	check(nfs_lchown(nfs, "/fz/file", 1000, 1000), "SETATTR owner");
	struct timeval tv[2] = { { 1000000, 0 }, { 2000000, 0 } };
	check(nfs_utimes(nfs, "/fz/file", tv), "SETATTR times");
	check(nfs_access(nfs, "/fz/file", R_OK | W_OK), "ACCESS");
	check(nfs_symlink(nfs, "file", "/fz/link"), "SYMLINK");
	check(nfs_readlink(nfs, "/fz/link", link, sizeof(link)), "READLINK");
	/* The engine answers MKNOD with NOTSUPP: the calls are recorded all the same. */
	nfs_mknod(nfs, "/fz/fifo", S_IFIFO | 0644, 0);
	nfs_mknod(nfs, "/fz/chr", S_IFCHR | 0644, makedev(1, 3));
	check(nfs_link(nfs, "/fz/file", "/fz/hard"), "LINK");
	check(nfs_statvfs64(nfs, "/fz", &vfs), "FSSTAT");
	struct nfsdir *dir;
	if (!nfs_opendir(nfs, "/fz", &dir)) /* READDIRPLUS */
		nfs_closedir(nfs, dir);
	else
		check(-1, "READDIRPLUS");
	check(nfs_open(nfs, "/fz", O_RDONLY, &d), "open dir");
	if (f && d)
		nfs_raw_calls(f, d);
	check(nfs_creat(nfs, "/fz/tmp", 0644, &f), "CREATE tmp");
	check(nfs_rename(nfs, "/fz/tmp", "/fz/tmp2"), "RENAME");
	check(nfs_unlink(nfs, "/fz/tmp2"), "REMOVE");
	check(nfs_mkdir(nfs, "/fz/sub"), "MKDIR sub");
	check(nfs_rmdir(nfs, "/fz/sub"), "RMDIR");
	/* What the destructive calls above act on exists again for the harness. */
	check(nfs_creat(nfs, "/fz/tmp", 0644, &f), "CREATE tmp again");
	check(nfs_mkdir(nfs, "/fz/sub"), "MKDIR sub again");
	nfs_destroy_context(nfs);
	if (failures)
		fprintf(stderr, "rpc_session: %d calls failed\n", failures);
	return failures != 0;
}
