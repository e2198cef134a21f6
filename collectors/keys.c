/* keys.c — breakdown key bytes (as the bpf/ programs fill them) to text and back. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keys.h"
#include "fs_names.h"

static const char *const dim_names[AGG_DIM_COUNT] = {
	[AGG_DIM_NONE] = "-", [AGG_DIM_OP] = "op", [AGG_DIM_CLIENT] = "client",
	[AGG_DIM_TIER] = "tier", [AGG_DIM_FILE] = "file", [AGG_DIM_DEVICE] = "device",
	[AGG_DIM_HITMISS] = "hit/miss", [AGG_DIM_PROCESS] = "process",
};

/* NFSv3 procedures 0..21 (RFC 1813). */
static const char *const nfs_procs[] = {
	"null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write",
	"create", "mkdir", "symlink", "mknod", "remove", "rmdir", "rename", "link",
	"readdir", "readdirplus", "fsstat", "fsinfo", "pathconf", "commit",
};
/* MOUNT v3 procedures 0..5 (RFC 1813 appendix I). */
static const char *const mount_procs[] = { "mnt_null", "mnt", "dump", "umnt", "umntall", "export" };
static const char *const disk_ops[] = { "read", "write", "sync", "flush", "discard", "other" };
static const char *const tier_ops[] = { "read", "write", "commit" };
/* enum agg_fs_op: the syscalls of the file-system layer. */
static const char *const fs_ops[] = {
	"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
	"preadv2", "pwritev2", "fsync", "fdatasync", "openat", "close",
};
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

	if (ops == OPS_NFS)
		name = v & 0x10000 ? name_of(mount_procs, NELEM(mount_procs), v & 0xffff)
				   : name_of(nfs_procs, NELEM(nfs_procs), v);
	else if (ops == OPS_DISK)
		name = name_of(disk_ops, NELEM(disk_ops), v);
	else if (ops == OPS_FS)
		name = name_of(fs_ops, NELEM(fs_ops), v);
	else
		name = name_of(tier_ops, NELEM(tier_ops), v);
	if (name)
		snprintf(out, n, "%s", name);
	else
		snprintf(out, n, "%s%u", v & 0x10000 ? "mnt_proc" : "proc", v & 0xffff);
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
		if (ops == OPS_FS) {
			struct agg_fs_file f;

			memcpy(&f, key, sizeof(f));
			fs_file_name(&f, out, n);
		} else {
			snprintf(out, n, "%" PRIu64, key_u64(key));
		}
		return;
	case AGG_DIM_PROCESS: {
		struct agg_fs_process p;

		memcpy(&p, key, sizeof(p));
		fs_process_name(&p, out, n);
		return;
	}
	case AGG_DIM_DEVICE:
		device_name(key_u32(key), out, n);
		return;
	case AGG_DIM_HITMISS:
		snprintf(out, n, "%s", key_u32(key) == AGG_HIT ? "hit" : "miss");
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
		return -1;
	}
	if (ops == OPS_DISK)
		i = index_of(disk_ops, NELEM(disk_ops), text);
	else if (ops == OPS_FS)
		i = index_of(fs_ops, NELEM(fs_ops), text);
	else
		i = index_of(tier_ops, NELEM(tier_ops), text);
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
		if (ops == OPS_FS) {
			if (fs_file_parse(text, key) == 0)
				return 0;
			snprintf(err, errlen, "'%s' is not a regular file's path or inode:MAJ,MIN:INO",
				 text);
			return -1;
		}
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
	case AGG_DIM_PROCESS:
		if (fs_process_parse(text, key) < 0)
			break;
		return 0;
	case AGG_DIM_HITMISS:
		if (strcmp(text, "hit") && strcmp(text, "miss"))
			break;
		key[0] = strcmp(text, "hit") ? AGG_MISS : AGG_HIT;
		return 0;
	}
	snprintf(err, errlen, "'%s' is not a valid %s", text, dim_name(dim) ? dim_name(dim) : "key");
	return -1;
}
