/* export.c — export option parsing, allow-list matching, root squash. */
#include "export.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

static int parse_net(const char *s, struct export_net *n)
{
	char buf[80];
	if (strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	char *slash = strchr(buf, '/');
	if (slash)
		*slash++ = 0;
	if (inet_pton(AF_INET, buf, n->addr) == 1)
		n->family = AF_INET;
	else if (inet_pton(AF_INET6, buf, n->addr) == 1)
		n->family = AF_INET6;
	else
		return -1;
	uint32_t max = n->family == AF_INET ? 32 : 128;
	n->prefix = max;
	if (slash) {
		char *end;
		unsigned long p = strtoul(slash, &end, 10);
		if (!*slash || *end || p > max)
			return -1;
		n->prefix = (uint32_t)p;
	}
	return 0;
}

int export_parse(const char *spec, struct export *e, char *err, size_t errsz)
{
	memset(e, 0, sizeof(*e));
	e->root_squash = 1;
	e->anon_uid = e->anon_gid = 65534;
	e->root_mode = -1;
	const char *colon = strchr(spec, ':');
	size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
	if (spec[0] == '/') {
		spec++;
		nlen--;
	}
	if (!nlen || nlen >= DATASET_NAME_MAX || memchr(spec, '/', nlen)) {
		snprintf(err, errsz, "bad export name in '%s' (want NAME[:OPTIONS], NAME without '/')", spec);
		return -1;
	}
	size_t word = strcspn(spec, " \t=,");
	if (word < nlen) { /* options given without their ':' ("data mode=1777") */
		snprintf(err, errsz, "bad export name in '%s': options follow the name after ':' "
			 "(--export '%.*s:%s')", spec, (int)word, spec, spec + word + strspn(spec + word, " \t,"));
		return -1;
	}
	memcpy(e->name, spec, nlen);
	snprintf(e->path, sizeof(e->path), "/%s", e->name);
	char *opts = xstrdup(colon ? colon + 1 : "");
	int rc = -1;
	for (char *save, *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		uint64_t v;
		if (!strncmp(o, "allow=", 6)) {
			if (e->nallow == EXPORT_MAX_ALLOW || parse_net(o + 6, &e->allow[e->nallow])) {
				snprintf(err, errsz, "bad export option '%s' (allow=ADDR[/PREFIX], at most %d)",
					 o, EXPORT_MAX_ALLOW);
				goto out;
			}
			e->nallow++;
		} else if (!strcmp(o, "root_squash")) {
			e->root_squash = 1;
		} else if (!strcmp(o, "no_root_squash")) {
			e->root_squash = 0;
		} else if (!strcmp(o, "ro")) {
			e->read_only = 1;
		} else if (!strcmp(o, "rw")) {
			e->read_only = 0;
		} else if (!strncmp(o, "anonuid=", 8) && !parse_size(o + 8, &v) && v < UINT32_MAX) {
			e->anon_uid = (uint32_t)v;
		} else if (!strncmp(o, "anongid=", 8) && !parse_size(o + 8, &v) && v < UINT32_MAX) {
			e->anon_gid = (uint32_t)v;
		} else if (!strncmp(o, "recordsize=", 11)) {
			if (parse_size(o + 11, &v) || v < POOL_MIN_RECORD || v > POOL_MAX_RECORD || (v & (v - 1))) {
				snprintf(err, errsz, "bad export option '%s' (recordsize is a power of two, 4k..1m)", o);
				goto out;
			}
			e->recordsize = (uint32_t)v;
		} else if (!strncmp(o, "mode=", 5)) {
			char *end;
			unsigned long m = strtoul(o + 5, &end, 8);
			if (!o[5] || *end || m > 07777) {
				snprintf(err, errsz, "bad export option '%s' (mode is octal, 0..7777)", o);
				goto out;
			}
			e->root_mode = (int)m;
		} else {
			snprintf(err, errsz, "unknown export option '%s' (allow=, root_squash, "
				 "no_root_squash, anonuid=, anongid=, recordsize=, mode=, ro, rw)", o);
			goto out;
		}
	}
	if (!e->nallow) {
		parse_net("127.0.0.0/8", &e->allow[e->nallow++]);
		parse_net("::1/128", &e->allow[e->nallow++]);
	}
	rc = 0;
out:
	free(opts);
	return rc;
}

static int prefix_match(const uint8_t *a, const uint8_t *b, uint32_t prefix)
{
	uint32_t full = prefix / 8, rest = prefix % 8;
	if (memcmp(a, b, full))
		return 0;
	if (!rest)
		return 1;
	uint8_t mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (b[full] & mask);
}

int export_allows(const struct export *e, const struct sockaddr_storage *client)
{
	uint8_t v4[4], v6[16];
	int fam = client->ss_family;
	if (fam == AF_INET) {
		memcpy(v4, &((const struct sockaddr_in *)client)->sin_addr, 4);
	} else if (fam == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)client)->sin6_addr;
		memcpy(v6, a, 16);
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			fam = AF_INET;
			memcpy(v4, v6 + 12, 4);
		}
	} else {
		return 0;
	}
	for (int i = 0; i < e->nallow; i++) {
		const struct export_net *n = &e->allow[i];
		if (n->family == fam && prefix_match(fam == AF_INET ? v4 : v6, n->addr, n->prefix))
			return 1;
	}
	return 0;
}

void export_cred(const struct export *e, const struct rpc_cred *in, struct rpc_cred *out)
{
	*out = *in;
	if (in->flavor != RPC_AUTH_SYS) {
		out->uid = e->anon_uid;
		out->gid = e->anon_gid;
		out->ngids = 0;
		return;
	}
	if (!e->root_squash)
		return;
	if (out->uid == 0)
		out->uid = e->anon_uid;
	if (out->gid == 0)
		out->gid = e->anon_gid;
	for (uint32_t i = 0; i < out->ngids; i++)
		if (out->gids[i] == 0)
			out->gids[i] = e->anon_gid;
}

struct export *export_find(struct export *list, int n, const char *path)
{
	while (*path == '/' && path[1] == '/')
		path++;
	for (int i = 0; i < n; i++) {
		const char *p = path[0] == '/' ? path + 1 : path;
		size_t len = strlen(p);
		if (len && p[len - 1] == '/')
			len--;
		if (len == strlen(list[i].name) && !strncmp(p, list[i].name, len))
			return &list[i];
	}
	return NULL;
}
