/* rpc.c — libFuzzer harness: every input is one RPC record body fed
 * through the engine's real request path (call header, AUTH_SYS, NFSv3 and
 * MOUNT argument decoding and the procedures) against a small scratch pool.
 * At start the recorded libnfs session (rpc/session.rec, see
 * record_rpc_corpus.py) is replayed, so the pool holds the tree the corpus
 * records name, under the same object ids.  File handles in an input are
 * made valid first (see repair_handles), so the procedures behind handle
 * resolution are reached too.  Mutation: xdr_mutator.c.
 * Built by `make fuzz` with clang -fsanitize=fuzzer,address,undefined. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "fh.h"
#include "net.h"
#include "util.h"

struct engine g_engine;
static uint8_t *reply;
static struct sockaddr_storage client;

static void run_record(const uint8_t *data, size_t size);

/* Replays a stream of record-marked call records (one fragment each). */
static void replay_session(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "fuzz_rpc: cannot open the session %s\n", path);
		abort();
	}
	uint8_t mark[4];
	int n = 0;
	while (fread(mark, 1, 4, f) == 4) {
		uint32_t len = ((uint32_t)mark[0] << 24 | mark[1] << 16 | mark[2] << 8 | mark[3]) & 0x7fffffffu;
		uint8_t *rec = xmalloc(len ? len : 1);
		if (fread(rec, 1, len, f) != len)
			abort();
		run_record(rec, len);
		free(rec);
		n++;
	}
	fclose(f);
	fprintf(stderr, "fuzz_rpc: replayed %d records of %s\n", n, path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char path[] = "/tmp/strata-fuzz-vdev-XXXXXX", err[256];
	int fd = mkstemp(path);
	if (fd < 0)
		abort();
	close(fd);
	unlink(path);
	char *paths[1] = { path };
	if (pool_create(paths, 1, 64ull << 20, 16384, 0, err, sizeof(err)))
		abort();
	struct engine *e = &g_engine;
	e->pool = pool_open(paths, 1, err, sizeof(err));
	unlink(path); /* the open descriptor keeps it alive */
	if (!e->pool)
		abort();
	e->arc_max = 8 << 20;
	e->arc = arc_create(e->arc_max, ARC_POLICY_ARC);
	e->os = objset_create(e->pool, e->arc);
	if (txg_import(&e->txg, e->os, err, sizeof(err)))
		abort();
	e->exports = xcalloc(1, sizeof(struct export));
	if (export_parse("data:no_root_squash", e->exports, err, sizeof(err)))
		abort();
	e->nexports = 1;
	e->exports[0].ds = objset_dataset(e->os, "data", 0, -1, 1);
	txg_start(&e->txg, 60000, 16 << 20);
	reply = xmalloc(NET_REPLY_CAP);
	struct sockaddr_in *sin = (struct sockaddr_in *)&client;
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	const char *session = getenv("STRATA_FUZZ_SESSION");
	replay_session(session ? session : FUZZ_SESSION);
	return 0;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* A fuzzer cannot learn a random generation or a MAC: every 4-aligned run of
 * FH_SIZE bytes that starts with the handle magic gets the generation of the
 * object it names (when it exists) and a valid MAC.  Refused handles are
 * tested by the engine's pytest suite. */
static void repair_handles(uint8_t *d, size_t n)
{
	for (size_t p = 0; p + FH_SIZE <= n; p += 4) {
		if (memcmp(d + p, "STFH", 4))
			continue;
		uint32_t dsid = (uint32_t)(rd64(d + p) & 0xffffffffu);
		uint64_t id = rd64(d + p + 8), gen = rd64(d + p + 16);
		struct object *o = obj_get(g_engine.os, id);
		struct fh fh;
		fh_make(&fh, dsid, id, o ? o->gen : gen);
		obj_put(o);
		memcpy(d + p, fh.b, FH_SIZE);
	}
}

static void run_record(const uint8_t *data, size_t size)
{
	struct rpc_req r = { .client = &client, .reclen = (uint32_t)size };
	r.rec = xmalloc(size);
	memcpy(r.rec, data, size);
	repair_handles(r.rec, size);
	size_t len;
	int traced;
	r.acct.nowait = 1; /* as the event loop runs it (it may refuse to wait) */
	net_process(&r, reply, &len, &traced);
	r = (struct rpc_req){ .client = &client, .reclen = (uint32_t)size, .rec = r.rec };
	net_process(&r, reply, &len, &traced); /* as a worker runs it */
	free(r.rec);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size <= NET_MAX_RECORD)
		run_record(data, size);
	return 0;
}
