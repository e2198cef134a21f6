/* keys.c — breakdown key bytes (as the bpf/ programs fill them) to text and back; the
 * dimension names and closed key sets come from statistics.def. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "keys.h"
#include "nfsd_export.h"
#include "wire_rpc.h"

static key_file_namer *file_namer;
static key_object_namer *object_namer;
static key_object_finder *object_finder;

void key_set_file_namer(key_file_namer *namer)
{
	file_namer = namer;
}

void key_set_object_namer(key_object_namer *namer)
{
	object_namer = namer;
}

void key_set_object_finder(key_object_finder *finder)
{
	object_finder = finder;
}

static const struct {
	const char *name, *values, *doc;
} dims[AGG_DIM_COUNT] = {
	[AGG_DIM_NONE] = { "-", "", "" },
#define STAT_DIM(ID, name, values, doc) [AGG_DIM_##ID] = { name, values, doc },
#include "statistics.def"
};

static const struct {
	const char *name, *doc;
} keysets[KEYSET_COUNT] = {
#define STAT_KEYSET(ID, name, doc) [KEYSET_##ID] = { name, doc },
#include "statistics.def"
};

const struct key_text key_texts[] = {
#define STAT_KEY(SET, ID, value, text) { KEYSET_##SET, value, text },
#include "statistics.def"
};
const size_t nkey_texts = sizeof(key_texts) / sizeof(key_texts[0]);

const char *dim_name(int dim)
{
	return dim > AGG_DIM_NONE && dim < AGG_DIM_COUNT ? dims[dim].name : NULL;
}

const char *dim_values(int dim)
{
	return dim > AGG_DIM_NONE && dim < AGG_DIM_COUNT ? dims[dim].values : NULL;
}

const char *dim_doc(int dim)
{
	return dim > AGG_DIM_NONE && dim < AGG_DIM_COUNT ? dims[dim].doc : NULL;
}

int dim_parse(const char *name)
{
	for (int d = 0; d < AGG_DIM_COUNT; d++)
		if (strcmp(name, dims[d].name) == 0)
			return d;
	return -1;
}

const char *keyset_name(enum keyset set)
{
	return keysets[set].name;
}

const char *keyset_doc(enum keyset set)
{
	return keysets[set].doc;
}

/* The text of value in set, or NULL. */
static const char *key_text_of(enum keyset set, uint32_t value)
{
	for (size_t i = 0; i < nkey_texts; i++)
		if (key_texts[i].set == set && key_texts[i].value == value)
			return key_texts[i].text;
	return NULL;
}

/* The value of text in set; -1 if the set has no such text. */
static int key_value_of(enum keyset set, const char *text, uint32_t *value)
{
	for (size_t i = 0; i < nkey_texts; i++) {
		if (key_texts[i].set == set && strcmp(key_texts[i].text, text) == 0) {
			*value = key_texts[i].value;
			return 0;
		}
	}
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

/* fs file key -> a path (from the namer, which checks it names the inode), else inode:MAJ,MIN:INO. */
static void fs_file_format(const uint8_t *key, char *out, size_t n)
{
	struct agg_fs_file f;

	memcpy(&f, key, sizeof(f));
	if (file_namer && file_namer(&f, out, n))
		return;
	snprintf(out, n, "inode:%u,%u:%" PRIu64, f.dev >> 20, f.dev & 0xfffff, (uint64_t)f.ino);
}

/* engine file key (object id) -> "EXPORT:/path" from the namer (the engine's name now), else object:ID. */
static void object_format(uint64_t id, char *out, size_t n)
{
	if (object_namer && object_namer(id, out, n))
		return;
	snprintf(out, n, "object:%" PRIu64, id);
}

/* object:ID, a bare ID, or EXPORT:/path (asked of the engine) -> engine file key. */
static int object_parse(const char *text, uint8_t key[AGG_KEY_BYTES], char *err, size_t errlen)
{
	const char *digits = strncmp(text, "object:", 7) == 0 ? text + 7 : text;
	const char *colon = strchr(text, ':');
	uint64_t id;
	char *end;

	errno = 0;
	id = strtoull(digits, &end, 10);
	if (isdigit((unsigned char)digits[0]) && !*end && !errno) {
		memcpy(key, &id, sizeof(id));
		return 0;
	}
	if (!colon || colon == text || colon[1] != '/') {
		snprintf(err, errlen, "file '%s' is not EXPORT:/path or object:ID", text);
		return -1;
	}
	if (!object_finder) {
		snprintf(err, errlen, "file '%s': no running engine to find it in (object:ID works without one)", text);
		return -1;
	}
	if (object_finder(text, &id, err, errlen) < 0)
		return -1;
	memcpy(key, &id, sizeof(id));
	return 0;
}

/* fs process key -> "comm:pid", with the full comm while the same-named process runs. */
static void fs_process_format(const uint8_t *key, char *out, size_t n)
{
	char comm[AGG_FS_COMM_BYTES + 1], full[32] = "", path[64];
	struct agg_fs_process p;
	FILE *f;

	memcpy(&p, key, sizeof(p));
	memcpy(comm, p.comm, AGG_FS_COMM_BYTES);
	comm[AGG_FS_COMM_BYTES] = 0;
	snprintf(path, sizeof(path), "/proc/%u/comm", p.tgid);
	if ((f = fopen(path, "r"))) {
		if (fgets(full, sizeof(full), f))
			full[strcspn(full, "\n")] = 0;
		fclose(f);
	}
	snprintf(out, n, "%s:%u", full[0] && strncmp(full, comm, AGG_FS_COMM_BYTES) == 0 ? full : comm, p.tgid);
}

/* An existing regular file's path (its inode) or inode:MAJ,MIN:INO -> fs file key. */
static int fs_file_parse(const char *text, uint8_t key[AGG_KEY_BYTES])
{
	struct agg_fs_file f = { 0 };
	unsigned maj, min;
	uint64_t ino;
	struct stat st;
	int used = 0;

	if (sscanf(text, "inode:%u,%u:%" SCNu64 "%n", &maj, &min, &ino, &used) == 3 && !text[used]) {
		f.ino = ino;
		f.dev = maj << 20 | (min & 0xfffff);
	} else if (text[0] == '/' && stat(text, &st) == 0 && S_ISREG(st.st_mode)) {
		f.ino = st.st_ino;
		f.dev = major(st.st_dev) << 20 | minor(st.st_dev);
	} else {
		return -1;
	}
	memcpy(key, &f, sizeof(f));
	return 0;
}

/* "comm:pid" -> fs process key (the comm's first AGG_FS_COMM_BYTES bytes). */
static int fs_process_parse(const char *text, uint8_t key[AGG_KEY_BYTES])
{
	struct agg_fs_process p = { 0 };
	const char *colon = strrchr(text, ':');
	char *end;
	unsigned long pid;

	if (!colon || colon == text || colon - text > 15)
		return -1;
	errno = 0;
	pid = strtoul(colon + 1, &end, 10);
	if (errno || !isdigit((unsigned char)colon[1]) || *end || pid == 0 || pid > INT32_MAX)
		return -1;
	p.tgid = (uint32_t)pid;
	memcpy(p.comm, text, (size_t)(colon - text) < AGG_FS_COMM_BYTES ? (size_t)(colon - text) : AGG_FS_COMM_BYTES);
	memcpy(key, &p, sizeof(p));
	return 0;
}

static void op_format(enum keyset ops, uint32_t v, char *out, size_t n)
{
	const char *name = key_text_of(ops, v);

	if (name)
		snprintf(out, n, "%s", name);
	else
		snprintf(out, n, "%s%u", v & 0x10000 ? "mnt_proc" : "proc", v & 0xffff);
}

/* "10.0.0.1:2049" (IPv4, port in the bytes the mapped form leaves zero), "fd00::1" (IPv6);
 * bpf/wire_rpc.h. */
static void server_format(const uint8_t *key, char *out, size_t n)
{
	static const uint8_t zero[8] = { 0 };
	char addr[INET6_ADDRSTRLEN];

	if (memcmp(key + 2, zero, 8) == 0 && key[10] == 0xff && key[11] == 0xff) {
		inet_ntop(AF_INET, key + 12, addr, sizeof(addr));
		snprintf(out, n, "%s:%u", addr, (unsigned)key[0] << 8 | key[1]);
		return;
	}
	inet_ntop(AF_INET6, key, out, n);
}

/* "10.0.0.1:2049" or "fd00::1" (see server_format); -1 if neither. */
static int server_parse(const char *text, uint8_t *key)
{
	char addr[INET6_ADDRSTRLEN];
	const char *colon = strrchr(text, ':');
	unsigned long port;
	char *end;

	if (inet_pton(AF_INET6, text, key) == 1)
		return key[10] == 0xff && key[11] == 0xff && !key[0] && !key[1] ? -1 : 0; /* mapped: give a port */
	memset(key, 0, AGG_KEY_BYTES);
	if (!colon || (size_t)(colon - text) >= sizeof(addr))
		return -1;
	memcpy(addr, text, (size_t)(colon - text));
	addr[colon - text] = 0;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || !isdigit((unsigned char)colon[1]) || *end || port > 65535 || inet_pton(AF_INET, addr, key + 12) != 1)
		return -1;
	key[10] = key[11] = 0xff;
	key[0] = (uint8_t)(port >> 8);
	key[1] = (uint8_t)port;
	return 0;
}

void key_format(int dim, enum keyset ops, const uint8_t key[AGG_KEY_BYTES], char *out, size_t n)
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
		name = key_text_of(KEYSET_TIER, key_u32(key));
		snprintf(out, n, "%s", name ? name : "unknown");
		return;
	case AGG_DIM_FILE:
		if (ops == KEYSET_FS_OP)
			fs_file_format(key, out, n);
		else
			object_format(key_u64(key), out, n);
		return;
	case AGG_DIM_PROCESS:
		fs_process_format(key, out, n);
		return;
	case AGG_DIM_VDEV:
		snprintf(out, n, "%" PRIu32, key_u32(key));
		return;
	case AGG_DIM_DEVICE:
		device_name(key_u32(key), out, n);
		return;
	case AGG_DIM_HITMISS:
		name = key_text_of(KEYSET_HITMISS, key_u32(key));
		snprintf(out, n, "%s", name ? name : "unknown");
		return;
	case AGG_DIM_VERSION:
		name = key_text_of(KEYSET_RPC_VERSION, key_u32(key));
		if (name)
			snprintf(out, n, "%s", name);
		else
			snprintf(out, n, "%s%u", key_u32(key) & WIRE_OP_MOUNT ? "mount" : "nfs", key_u32(key) & 0xffff);
		return;
	case AGG_DIM_STATUS:
		name = key_text_of(KEYSET_RPC_STATUS, key_u32(key));
		if (name)
			snprintf(out, n, "%s", name);
		else
			snprintf(out, n, "%s%u", key_u32(key) & WIRE_STATUS_DENIED ? "denied"
						 : key_u32(key) & WIRE_STATUS_RPC ? "rpc" : "err", key_u32(key) & 0xffff);
		return;
	case AGG_DIM_SERVER:
		server_format(key, out, n);
		return;
	case AGG_DIM_EXPORT:
		nfsd_export_format(key, out, n);
		return;
	default:
		snprintf(out, n, "%s", "?");
	}
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

int key_parse(int dim, enum keyset ops, const char *text, uint8_t key[AGG_KEY_BYTES], char *err, size_t errlen)
{
	uint32_t v32;
	uint64_t v64;
	char *end;

	memset(key, 0, AGG_KEY_BYTES);
	switch (dim) {
	case AGG_DIM_OP:
		if (key_value_of(ops, text, &v32) < 0)
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
		if (key_value_of(KEYSET_TIER, text, &v32) < 0)
			break;
		memcpy(key, &v32, sizeof(v32));
		return 0;
	case AGG_DIM_FILE:
		if (ops == KEYSET_FS_OP) {
			if (fs_file_parse(text, key) == 0)
				return 0;
			snprintf(err, errlen, "'%s' is not a regular file's path or inode:MAJ,MIN:INO", text);
			return -1;
		}
		return object_parse(text, key, err, errlen);
	case AGG_DIM_VDEV:
		errno = 0;
		v64 = strtoull(text, &end, 10);
		if (errno || !isdigit((unsigned char)text[0]) || *end || v64 > UINT32_MAX)
			break;
		v32 = (uint32_t)v64;
		memcpy(key, &v32, sizeof(v32));
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
		if (key_value_of(KEYSET_HITMISS, text, &v32) < 0)
			break;
		memcpy(key, &v32, sizeof(v32));
		return 0;
	case AGG_DIM_VERSION:
		if (key_value_of(KEYSET_RPC_VERSION, text, &v32) < 0)
			break;
		memcpy(key, &v32, sizeof(v32));
		return 0;
	case AGG_DIM_STATUS:
		if (key_value_of(KEYSET_RPC_STATUS, text, &v32) < 0)
			break;
		memcpy(key, &v32, sizeof(v32));
		return 0;
	case AGG_DIM_SERVER:
		if (server_parse(text, key) < 0)
			break;
		return 0;
	case AGG_DIM_EXPORT:
		if (nfsd_export_parse(text, key) == 0)
			return 0;
		snprintf(err, errlen, "'%s' is not an export nfsd lists now (/proc/net/rpc/nfsd.fh) nor fsid:TYPE:HEX", text);
		return -1;
	}
	snprintf(err, errlen, "'%s' is not a valid %s", text, dim_name(dim) ? dim_name(dim) : "key");
	return -1;
}
