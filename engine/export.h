/* export.h — exports: NAME[:OPTIONS] parsing, client allow-lists, root squash. */
#ifndef ENGINE_EXPORT_H
#define ENGINE_EXPORT_H

#include <stdint.h>
#include <sys/socket.h>

#include "objset.h"
#include "rpc.h"

#define EXPORT_MAX_ALLOW 16

struct export_net {
	int family;       /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	uint32_t prefix;
};

struct export {
	char name[DATASET_NAME_MAX];
	char path[DATASET_NAME_MAX + 1]; /* "/NAME", what MNT asks for */
	struct dataset *ds;
	struct export_net allow[EXPORT_MAX_ALLOW];
	int nallow;
	int root_squash, read_only;
	uint32_t anon_uid, anon_gid;
	uint32_t recordsize; /* 0: pool default */
	int root_mode;       /* mode= (the root directory's), -1: keep (a new root is 0755) */
};

/* "NAME[:opt,opt...]"; options: allow=CIDR (repeatable; default 127.0.0.0/8
 * and ::1), root_squash (default) / no_root_squash, anonuid=N, anongid=N,
 * recordsize=SIZE (4k..1m, power of two), mode=OCTAL (the root directory's
 * mode, e.g. 1777), ro / rw. */
int export_parse(const char *spec, struct export *e, char *err, size_t errsz);
int export_allows(const struct export *e, const struct sockaddr_storage *client);
/* Credential after squashing (uid/gid 0 -> anon when root_squash). */
void export_cred(const struct export *e, const struct rpc_cred *in, struct rpc_cred *out);
/* Export a MNT path names ("/NAME" or "NAME"), or NULL. */
struct export *export_find(struct export *list, int n, const char *path);

#endif
