/* nfs4_ops.c — a libnfs NFSv4.0 client that sends COMPOUNDs of known main ops, for
 * tests/test_collect_wire_nfs4.py: what it sent is what wire.ops[op] must count.
 *
 * usage: nfs4_ops HOST PORT PSEUDO FILE COUNT
 *   one lookup   PUTROOTFH LOOKUP PSEUDO LOOKUP FILE GETFH   (the file's handle)
 *   then COUNT of each, in turn:
 *     getattr    PUTROOTFH GETATTR
 *     read       PUTFH READ 4 KiB (the anonymous stateid)
 *     write      PUTFH WRITE 512 bytes UNSTABLE
 *     access     PUTFH ACCESS
 *     lookup     PUTFH LOOKUP FILE (the file is no directory: NFS4ERR_NOTDIR)
 * prints one JSON line: {"getattr":N,"read":N,...,"ok":N,"errors":N} — compounds
 * answered per main op, and how many answered with status NFS4_OK / not. Exit 1 with a
 * line on stderr if the connection fails or a call gets no answer. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs4.h>

enum { GETATTR, READ, WRITE, ACCESS, LOOKUP, KINDS };
static const char *const kind_names[KINDS] = { "getattr", "read", "write", "access", "lookup" };

struct answer {
	int done, rpc_status, nfs_status;
	char fh[NFS4_FHSIZE];
	unsigned fh_len;
};

static void on_reply(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct answer *a = priv;
	COMPOUND4res *res = data;

	a->done = 1;
	a->rpc_status = status;
	if (status != RPC_STATUS_SUCCESS || !res)
		return;
	a->nfs_status = res->status;
	for (unsigned i = 0; i < res->resarray.resarray_len; i++) {
		nfs_resop4 *r = &res->resarray.resarray_val[i];

		if (r->resop == OP_GETFH && r->nfs_resop4_u.opgetfh.status == NFS4_OK) {
			nfs_fh4 *fh = &r->nfs_resop4_u.opgetfh.GETFH4res_u.resok4.object;

			a->fh_len = fh->nfs_fh4_len <= NFS4_FHSIZE ? fh->nfs_fh4_len : 0;
			memcpy(a->fh, fh->nfs_fh4_val, a->fh_len);
		}
	}
	(void)rpc;
}

static int wait_for(struct rpc_context *rpc, int *done)
{
	while (!*done) {
		struct pollfd p = { .fd = rpc_get_fd(rpc), .events = (short)rpc_which_events(rpc) };

		if (poll(&p, 1, 10000) <= 0 || rpc_service(rpc, p.revents) < 0)
			return -1;
	}
	return 0;
}

static int compound(struct rpc_context *rpc, nfs_argop4 *ops, unsigned n, struct answer *a)
{
	COMPOUND4args args = { .tag = { 6, "strata" }, .minorversion = 0, .argarray = { n, ops } };

	memset(a, 0, sizeof(*a));
	if (rpc_nfs4_compound_async(rpc, on_reply, &args, a) != 0 || wait_for(rpc, &a->done) < 0 ||
	    a->rpc_status != RPC_STATUS_SUCCESS) {
		fprintf(stderr, "nfs4_ops: COMPOUND (second op %d) failed: %s\n", ops[1].argop, rpc_get_error(rpc));
		return -1;
	}
	return 0;
}

static void on_connect(struct rpc_context *rpc, int status, void *data, void *priv)
{
	*(int *)priv = status == RPC_STATUS_SUCCESS ? 1 : -1;
	(void)rpc, (void)data;
}

int main(int argc, char **argv)
{
	static char data[512]; /* libnfs 4.0 encodes a COMPOUND in a small buffer */
	uint32_t attrs[2] = { 1u << 1 | 1u << 4, 0 }; /* type, size */
	struct rpc_context *rpc;
	struct answer a;
	nfs_argop4 ops[5];
	long count, sent[KINDS] = { 0 }, ok = 0, errors = 0;
	int connected = 0;
	char fh[NFS4_FHSIZE];
	unsigned fh_len;

	if (argc != 6 || (count = strtol(argv[5], NULL, 10)) < 0) {
		fprintf(stderr, "usage: nfs4_ops HOST PORT PSEUDO FILE COUNT\n");
		return 2;
	}
	rpc = rpc_init_context();
	if (!rpc || rpc_connect_async(rpc, argv[1], atoi(argv[2]), on_connect, &connected) != 0 ||
	    wait_for(rpc, &connected) < 0 || connected < 0) {
		fprintf(stderr, "nfs4_ops: cannot connect to %s:%s\n", argv[1], argv[2]);
		return 1;
	}
	memset(ops, 0, sizeof(ops));
	ops[0].argop = OP_PUTROOTFH;
	ops[1].argop = OP_LOOKUP;
	ops[1].nfs_argop4_u.oplookup.objname = (component4){ strlen(argv[3]), argv[3] };
	ops[2].argop = OP_LOOKUP;
	ops[2].nfs_argop4_u.oplookup.objname = (component4){ strlen(argv[4]), argv[4] };
	ops[3].argop = OP_GETFH;
	if (compound(rpc, ops, 4, &a) < 0)
		return 1;
	if (a.nfs_status != NFS4_OK || !a.fh_len) {
		fprintf(stderr, "nfs4_ops: no handle for %s/%s (status %d)\n", argv[3], argv[4], a.nfs_status);
		return 1;
	}
	sent[LOOKUP]++;
	ok++;
	memcpy(fh, a.fh, a.fh_len);
	fh_len = a.fh_len;
	for (long i = 0; i < count; i++)
		for (int k = 0; k < KINDS; k++) {
			memset(ops, 0, sizeof(ops));
			ops[0].argop = OP_PUTFH;
			ops[0].nfs_argop4_u.opputfh.object = (nfs_fh4){ fh_len, fh };
			switch (k) {
			case GETATTR:
				ops[0].argop = OP_PUTROOTFH;
				ops[1].argop = OP_GETATTR;
				ops[1].nfs_argop4_u.opgetattr.attr_request = (bitmap4){ 2, attrs };
				break;
			case READ:
				ops[1].argop = OP_READ;
				ops[1].nfs_argop4_u.opread = (READ4args){ .offset = (uint64_t)i * 4096, .count = 4096 };
				break;
			case WRITE:
				ops[1].argop = OP_WRITE;
				ops[1].nfs_argop4_u.opwrite = (WRITE4args){ .offset = (uint64_t)i * 4096, .stable = UNSTABLE4,
									    .data = { sizeof(data), data } };
				break;
			case ACCESS:
				ops[1].argop = OP_ACCESS;
				ops[1].nfs_argop4_u.opaccess.access = ACCESS4_READ;
				break;
			case LOOKUP:
				ops[1].argop = OP_LOOKUP;
				ops[1].nfs_argop4_u.oplookup.objname = (component4){ strlen(argv[4]), argv[4] };
				break;
			}
			if (compound(rpc, ops, 2, &a) < 0)
				return 1;
			sent[k]++;
			if (a.nfs_status == NFS4_OK)
				ok++;
			else
				errors++;
		}
	printf("{");
	for (int k = 0; k < KINDS; k++)
		printf("\"%s\":%ld,", kind_names[k], sent[k]);
	printf("\"ok\":%ld,\"errors\":%ld}\n", ok, errors);
	rpc_destroy_context(rpc);
	return 0;
}
