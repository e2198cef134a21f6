/* mount3.c — MOUNT v3: NULL, MNT, DUMP, UMNT, UMNTALL, EXPORT.  MNT hands out
 * the root handle of an export to allowed clients; DUMP lists who mounted and
 * EXPORT the allow-lists, both only to an address some export allows. */
#include "mount3.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "fh.h"
#include "util.h"

#define MNTPATHLEN 1024
enum { MNT3_OK = 0, MNT3ERR_NOENT = 2, MNT3ERR_ACCES = 13 };

struct mount_entry {
	char host[INET6_ADDRSTRLEN];
	char path[DATASET_NAME_MAX + 1];
	struct mount_entry *next;
};

static pthread_mutex_t mounts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mount_entry *mounts;

static void client_host(const struct sockaddr_storage *ss, char *buf, size_t n)
{
	if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, buf, (socklen_t)n);
	else
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, buf, (socklen_t)n);
}

static void forget(const char *host, const char *path)
{
	pthread_mutex_lock(&mounts_lock);
	for (struct mount_entry **pp = &mounts; *pp;) {
		struct mount_entry *m = *pp;
		if (!strcmp(m->host, host) && (!path || !strcmp(m->path, path))) {
			*pp = m->next;
			free(m);
		} else {
			pp = &m->next;
		}
	}
	pthread_mutex_unlock(&mounts_lock);
}

static int mnt(struct rpc_req *r, struct xdr_out *o)
{
	char path[MNTPATHLEN + 1];
	if (xdr_get_string(&r->args, path, sizeof(path)))
		return RPC_GARBAGE_ARGS;
	struct export *e = export_find(g_engine.exports, g_engine.nexports, path);
	if (!e) {
		r->status = MNT3ERR_NOENT;
		xdr_put_u32(o, MNT3ERR_NOENT);
		return RPC_SUCCESS;
	}
	if (!export_allows(e, r->client)) {
		r->status = MNT3ERR_ACCES;
		xdr_put_u32(o, MNT3ERR_ACCES);
		return RPC_SUCCESS;
	}
	struct object *root = obj_get(g_engine.os, e->ds->root);
	if (!root) {
		r->status = MNT3ERR_NOENT;
		xdr_put_u32(o, MNT3ERR_NOENT);
		return RPC_SUCCESS;
	}
	struct fh fh;
	fh_make(&fh, root->dsid, root->id, root->gen);
	r->file_id = root->id;
	obj_put(root);
	xdr_put_u32(o, MNT3_OK);
	fh_put(o, &fh);
	xdr_put_u32(o, 1);            /* auth flavors */
	xdr_put_u32(o, RPC_AUTH_SYS);

	struct mount_entry *m = xcalloc(1, sizeof(*m));
	client_host(r->client, m->host, sizeof(m->host));
	snprintf(m->path, sizeof(m->path), "%s", e->path);
	forget(m->host, m->path);
	pthread_mutex_lock(&mounts_lock);
	m->next = mounts;
	mounts = m;
	pthread_mutex_unlock(&mounts_lock);
	return RPC_SUCCESS;
}

static int dump(struct xdr_out *o)
{
	pthread_mutex_lock(&mounts_lock);
	for (struct mount_entry *m = mounts; m; m = m->next) {
		xdr_put_u32(o, 1);
		xdr_put_string(o, m->host);
		xdr_put_string(o, m->path);
	}
	pthread_mutex_unlock(&mounts_lock);
	xdr_put_u32(o, 0);
	return RPC_SUCCESS;
}

static int umnt(struct rpc_req *r)
{
	char path[MNTPATHLEN + 1], host[INET6_ADDRSTRLEN];
	if (xdr_get_string(&r->args, path, sizeof(path)))
		return RPC_GARBAGE_ARGS;
	client_host(r->client, host, sizeof(host));
	struct export *e = export_find(g_engine.exports, g_engine.nexports, path);
	if (e)
		forget(host, e->path);
	return RPC_SUCCESS;
}

static int umntall(struct rpc_req *r)
{
	char host[INET6_ADDRSTRLEN];
	client_host(r->client, host, sizeof(host));
	forget(host, NULL);
	return RPC_SUCCESS;
}

static int export_list(struct xdr_out *o)
{
	for (int i = 0; i < g_engine.nexports; i++) {
		const struct export *e = &g_engine.exports[i];
		xdr_put_u32(o, 1);
		xdr_put_string(o, e->path);
		for (int k = 0; k < e->nallow; k++) {
			char addr[INET6_ADDRSTRLEN], grp[INET6_ADDRSTRLEN + 8];
			inet_ntop(e->allow[k].family, e->allow[k].addr, addr, sizeof(addr));
			snprintf(grp, sizeof(grp), "%s/%u", addr, e->allow[k].prefix);
			xdr_put_u32(o, 1);
			xdr_put_string(o, grp);
		}
		xdr_put_u32(o, 0);
	}
	xdr_put_u32(o, 0);
	return RPC_SUCCESS;
}

int mount3_client_allowed(const struct sockaddr_storage *client)
{
	for (int i = 0; i < g_engine.nexports; i++)
		if (export_allows(&g_engine.exports[i], client))
			return 1;
	return 0;
}

/* DUMP and EXPORT to an address no export allows. */
static int denied(struct rpc_req *r)
{
	r->status = MNT3ERR_ACCES;
	return MOUNT3_DENIED;
}

int mount3_dispatch(struct rpc_req *r, struct xdr_out *o)
{
	switch (r->call.proc) {
	case 0: return RPC_SUCCESS;
	case 1: return mnt(r, o);
	case 2: return mount3_client_allowed(r->client) ? dump(o) : denied(r);
	case 3: return umnt(r);
	case 4: return umntall(r);
	case 5: return mount3_client_allowed(r->client) ? export_list(o) : denied(r);
	default: return RPC_PROC_UNAVAIL;
	}
}
