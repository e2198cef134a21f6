/* keys.c — breakdown key bytes (as the bpf/ programs fill them) to text and back. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keys.h"
#include "wire_rpc.h"

static const char *const dim_names[AGG_DIM_COUNT] = {
	[AGG_DIM_NONE] = "-", [AGG_DIM_OP] = "op", [AGG_DIM_CLIENT] = "client",
	[AGG_DIM_TIER] = "tier", [AGG_DIM_FILE] = "file", [AGG_DIM_DEVICE] = "device",
	[AGG_DIM_HITMISS] = "hit/miss", [AGG_DIM_VERSION] = "version", [AGG_DIM_STATUS] = "status",
	[AGG_DIM_SERVER] = "server",
};

/* NFSv3 procedures 0..21 (RFC 1813). */
static const char *const nfs_procs[] = {
	"null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write",
	"create", "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link",
	"readdir", "readdirplus", "fsstat", "fsinfo", "pathconf", "commit",
};
/* MOUNT v3 procedures 0..5 (RFC 1813 appendix I). */
static const char *const mount_procs[] = { "mnt_null", "mnt", "dump", "umnt", "umntall", "export" };
/* NFSv4 operations 3..58 (RFC 8881), named as their NFSv3 counterparts where one exists. */
static const char *const v4_ops[] = {
	[3] = "access", [4] = "close", [5] = "commit", [6] = "create", [7] = "delegpurge",
	[8] = "delegreturn", [9] = "getattr", [10] = "getfh", [11] = "link", [12] = "lock",
	[13] = "lockt", [14] = "locku", [15] = "lookup", [16] = "lookupp", [17] = "nverify",
	[18] = "open", [19] = "openattr", [20] = "open_confirm", [21] = "open_downgrade",
	[22] = "putfh", [23] = "putpubfh", [24] = "putrootfh", [25] = "read", [26] = "readdir",
	[27] = "readlink", [28] = "remove", [29] = "rename", [30] = "renew", [31] = "restorefh",
	[32] = "savefh", [33] = "secinfo", [34] = "setattr", [35] = "setclientid",
	[36] = "setclientid_confirm", [37] = "verify", [38] = "write", [39] = "release_lockowner",
	[40] = "backchannel_ctl", [41] = "bind_conn_to_session", [42] = "exchange_id",
	[43] = "create_session", [44] = "destroy_session", [45] = "free_stateid",
	[46] = "get_dir_delegation", [47] = "getdeviceinfo", [48] = "getdevicelist",
	[49] = "layoutcommit", [50] = "layoutget", [51] = "layoutreturn", [52] = "secinfo_no_name",
	[53] = "sequence", [54] = "set_ssv", [55] = "test_stateid", [56] = "want_delegation",
	[57] = "destroy_clientid", [58] = "reclaim_complete",
};
/* NFS (RFC 1813 / 8881) and MOUNT status words, lower case without the NFS3ERR_ prefix. */
static const struct { uint32_t v; const char *name; } statuses[] = {
	{ 0, "ok" }, { 1, "perm" }, { 2, "noent" }, { 5, "io" }, { 6, "nxio" }, { 13, "acces" },
	{ 17, "exist" }, { 18, "xdev" }, { 19, "nodev" }, { 20, "notdir" }, { 21, "isdir" },
	{ 22, "inval" }, { 27, "fbig" }, { 28, "nospc" }, { 30, "rofs" }, { 31, "mlink" },
	{ 63, "nametoolong" }, { 66, "notempty" }, { 69, "dquot" }, { 70, "stale" }, { 71, "remote" },
	{ 10001, "badhandle" }, { 10002, "not_sync" }, { 10003, "bad_cookie" }, { 10004, "notsupp" },
	{ 10005, "toosmall" }, { 10006, "serverfault" }, { 10007, "badtype" }, { 10008, "jukebox" },
	{ WIRE_STATUS_RPC | 1, "prog_unavail" }, { WIRE_STATUS_RPC | 2, "prog_mismatch" },
	{ WIRE_STATUS_RPC | 3, "proc_unavail" }, { WIRE_STATUS_RPC | 4, "garbage_args" },
	{ WIRE_STATUS_RPC | 5, "system_err" }, { WIRE_STATUS_DENIED | 0, "rpc_mismatch" },
	{ WIRE_STATUS_DENIED | 1, "auth_error" },
};
static const char *const disk_ops[] = { "read", "write", "sync", "flush", "discard", "other" };
static const char *const tier_ops[] = { "read", "write", "commit" };
static const char *const tiers[] = { "none", "arc", "l2arc", "pool", "zil" };

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))

const char *dim_name(int dim)
{
	return dim > AGG_DIM_NONE && dim < AGG_DIM_COUNT ? dim_names[dim] : NULL;
}

int dim_parse(const char *name)
{
	for (int d = 0; d < AGG_DIM_COUNT; d++)
		if (strcmp(name, dim_names[d]) == 0)
			return d;
	return -1;
}

static uint32_t key_u32(const uint8_t *key)
{
	uint32_t v;

	memcpy(&v, key, sizeof(v));
	return v;
}

static uint64_t key_u64(const uint8_t *key)
{
	uint64_t v;

	memcpy(&v, key, sizeof(v));
	return v;
}

static int is_other(const uint8_t *key)
{
	for (int i = 0; i < AGG_KEY_BYTES; i++)
		if (key[i] != AGG_OTHER_BYTE)
			return 0;
	return 1;
}

static const char *name_of(const char *const *names, size_t n, uint32_t v)
{
	return v < n ? names[v] : NULL;
}

/* kernel dev_t (major << 20 | minor) -> "loop3" via /sys/dev/block/MAJ:MIN/uevent. */
static void device_name(uint32_t dev, char *out, size_t n)
{
	unsigned major = dev >> 20, minor = dev & 0xfffff;
	char path[64], line[128];
	FILE *f;

	snprintf(out, n, "%u:%u", major, minor);
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent", major, minor);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "DEVNAME=", 8) == 0) {
			line[strcspn(line, "\n")] = 0;
			snprintf(out, n, "%s", line + 8);
			break;
		}
	}
	fclose(f);
}

static void op_format(enum op_family ops, uint32_t v, char *out, size_t n)
{
	const char *name = NULL;

	if (ops == OPS_NFS && (v & ~0xffffu) == WIRE_OP_V4)
		name = v == WIRE_OP_V4 ? "compound" : name_of(v4_ops, NELEM(v4_ops), v & 0xffff);
	else if (ops == OPS_NFS)
		name = v & 0x10000 ? name_of(mount_procs, NELEM(mount_procs), v & 0xffff)
				   : name_of(nfs_procs, NELEM(nfs_procs), v);
	else if (ops == OPS_DISK)
		name = name_of(disk_ops, NELEM(disk_ops), v);
	else
		name = name_of(tier_ops, NELEM(tier_ops), v);
	if (name)
		snprintf(out, n, "%s", name);
	else
		snprintf(out, n, "%s%u", v & 0x10000 ? "mnt_proc" : "proc", v & 0xffff);
}

static void status_format(uint32_t v, char *out, size_t n)
{
	for (size_t i = 0; i < NELEM(statuses); i++) {
		if (statuses[i].v == v) {
			snprintf(out, n, "%s", statuses[i].name);
			return;
		}
	}
	if (v & WIRE_STATUS_DENIED)
		snprintf(out, n, "denied%u", v & 0xffff);
	else if (v & WIRE_STATUS_RPC)
		snprintf(out, n, "rpc%u", v & 0xffff);
	else
		snprintf(out, n, "err%u", v);
}

/* "10.0.0.1:2049" (IPv4, port in the bytes the mapped form leaves zero), "fd00::1" (IPv6). */
static void server_format(const uint8_t *key, char *out, size_t n)
{
	static const uint8_t mapped[10] = { 0 };
	char addr[INET6_ADDRSTRLEN];

	if (memcmp(key + 2, mapped + 2, 8) == 0 && key[10] == 0xff && key[11] == 0xff) {
		inet_ntop(AF_INET, key + 12, addr, sizeof(addr));
		snprintf(out, n, "%s:%u", addr, (unsigned)key[0] << 8 | key[1]);
		return;
	}
	inet_ntop(AF_INET6, key, out, n);
}

void key_format(int dim, enum op_family ops, const uint8_t key[AGG_KEY_BYTES], char *out, size_t n)
{
	static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	const char *name;

	if (dim == AGG_DIM_NONE) {
		snprintf(out, n, "%s", "");
		return;
	}
	if (is_other(key)) {
		snprintf(out, n, "%s", "other");
		return;
	}
	switch (dim) {
	case AGG_DIM_OP:
		op_format(ops, key_u32(key), out, n);
		return;
	case AGG_DIM_CLIENT:
		if (memcmp(key, v4mapped, sizeof(v4mapped)) == 0)
			inet_ntop(AF_INET, key + 12, out, n);
		else
			inet_ntop(AF_INET6, key, out, n);
		return;
	case AGG_DIM_TIER:
		name = name_of(tiers, NELEM(tiers), key_u32(key));
		snprintf(out, n, "%s", name ? name : "unknown");
		return;
	case AGG_DIM_FILE:
		snprintf(out, n, "%" PRIu64, key_u64(key));
		return;
	case AGG_DIM_DEVICE:
		device_name(key_u32(key), out, n);
		return;
	case AGG_DIM_HITMISS:
		snprintf(out, n, "%s", key_u32(key) == AGG_HIT ? "hit" : "miss");
		return;
	case AGG_DIM_VERSION:
		snprintf(out, n, "%s%u", key_u32(key) & WIRE_OP_MOUNT ? "mount" : "nfs", key_u32(key) & 0xffff);
		return;
	case AGG_DIM_STATUS:
		status_format(key_u32(key), out, n);
		return;
	case AGG_DIM_SERVER:
		server_format(key, out, n);
		return;
	default:
		snprintf(out, n, "%s", "?");
	}
}

static int index_of(const char *const *names, size_t n, const char *text)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], text) == 0)
			return (int)i;
	return -1;
}

static int op_parse(enum op_family ops, const char *text, uint32_t *v)
{
	int i;

	if (ops == OPS_NFS) {
		if ((i = index_of(nfs_procs, NELEM(nfs_procs), text)) >= 0) {
			*v = (uint32_t)i;
			return 0;
		}
		if ((i = index_of(mount_procs, NELEM(mount_procs), text)) >= 0) {
			*v = 0x10000u | (uint32_t)i;
			return 0;
		}
		if (strcmp(text, "compound") == 0) {
			*v = WIRE_OP_V4;
			return 0;
		}
		for (size_t j = 0; j < NELEM(v4_ops); j++) {
			if (v4_ops[j] && strcmp(v4_ops[j], text) == 0) {
				*v = WIRE_OP_V4 | (uint32_t)j;
				return 0;
			}
		}
		return -1;
	}
	i = ops == OPS_DISK ? index_of(disk_ops, NELEM(disk_ops), text)
			    : index_of(tier_ops, NELEM(tier_ops), text);
	if (i < 0)
		return -1;
	*v = (uint32_t)i;
	return 0;
}

/* "loop3" -> kernel dev_t via /sys/class/block/loop3/dev ("7:3"). */
static int device_parse(const char *name, uint32_t *dev)
{
	char path[300];
	unsigned major, minor;
	FILE *f;
	int ok;

	if (strchr(name, '/') || strlen(name) > 200)
		return -1;
	snprintf(path, sizeof(path), "/sys/class/block/%s/dev", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	ok = fscanf(f, "%u:%u", &major, &minor) == 2;
	fclose(f);
	if (!ok)
		return -1;
	*dev = major << 20 | minor;
	return 0;
}

/* "nfs3", "mount3" -> (MOUNT ? 0x10000 : 0) | version. */
static int version_parse(const char *text, uint32_t *v)
{
	unsigned n;
	char tail;

	if (sscanf(text, "nfs%u%c", &n, &tail) == 1 && n <= 0xffff)
		*v = n;
	else if (sscanf(text, "mount%u%c", &n, &tail) == 1 && n <= 0xffff)
		*v = WIRE_OP_MOUNT | n;
	else
		return -1;
	return 0;
}

/* "10.0.0.1:2049" or "fd00::1" (see server_format). */
static int server_parse(const char *text, uint8_t *key)
{
	char addr[INET6_ADDRSTRLEN];
	const char *colon = strrchr(text, ':');
	size_t len = strlen(text);
	unsigned long port;
	char *end;

	if (inet_pton(AF_INET6, text, key) == 1)
		return len && !(key[10] == 0xff && key[11] == 0xff && !key[0] && !key[1]) ? 0 : -1;
	if (!colon || (size_t)(colon - text) >= sizeof(addr))
		return -1;
	memcpy(addr, text, (size_t)(colon - text));
	addr[colon - text] = 0;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port > 65535 || inet_pton(AF_INET, addr, key + 12) != 1)
		return -1;
	key[10] = key[11] = 0xff;
	key[0] = (uint8_t)(port >> 8);
	key[1] = (uint8_t)port;
	return 0;
}

int key_parse(int dim, enum op_family ops, const char *text, uint8_t key[AGG_KEY_BYTES], char *err, size_t errlen)
{
	uint32_t v32;
	uint64_t v64;
	char *end;
	int i;

	memset(key, 0, AGG_KEY_BYTES);
	switch (dim) {
	case AGG_DIM_OP:
		if (op_parse(ops, text, &v32) < 0)
			break;
		memcpy(key, &v32, sizeof(v32));
		return 0;
	case AGG_DIM_CLIENT:
		if (inet_pton(AF_INET, text, key + 12) == 1) {
			key[10] = key[11] = 0xff;
			return 0;
		}
		if (inet_pton(AF_INET6, text, key) == 1)
			return 0;
		break;
	case AGG_DIM_TIER:
		if ((i = index_of(tiers, NELEM(tiers), text)) < 0)
			break;
		v32 = (uint32_t)i;
		memcpy(key, &v32, sizeof(v32));
		return 0;
	case AGG_DIM_FILE:
		errno = 0;
		v64 = strtoull(text, &end, 10);
		if (errno || end == text || *end || text[0] == '-')
			break;
		memcpy(key, &v64, sizeof(v64));
		return 0;
	case AGG_DIM_DEVICE:
		if (device_parse(text, &v32) < 0) {
			snprintf(err, errlen, "no block device named '%s'", text);
			return -1;
		}
		memcpy(key, &v32, sizeof(v32));
		return 0;
	case AGG_DIM_HITMISS:
		if (strcmp(text, "hit") && strcmp(text, "miss"))
			break;
		key[0] = strcmp(text, "hit") ? AGG_MISS : AGG_HIT;
		return 0;
	case AGG_DIM_VERSION:
		if (version_parse(text, &v32) < 0)
			break;
		memcpy(key, &v32, sizeof(v32));
		return 0;
	case AGG_DIM_STATUS:
		for (size_t j = 0; j < NELEM(statuses); j++) {
			if (strcmp(statuses[j].name, text) == 0) {
				memcpy(key, &statuses[j].v, sizeof(statuses[j].v));
				return 0;
			}
		}
		break;
	case AGG_DIM_SERVER:
		if (server_parse(text, key) < 0)
			break;
		return 0;
	}
	snprintf(err, errlen, "'%s' is not a valid %s", text, dim_name(dim) ? dim_name(dim) : "key");
	return -1;
}
