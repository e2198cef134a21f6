/* keys.c — breakdown key bytes (as the bpf/ programs fill them) to text and back for the
 * dimensions every layer names the same way (ops, addresses, tiers, devices, RPC versions
 * and statuses); the dimension names and closed key sets come from statistics.def. A
 * layer names its own dimensions (files, processes, exports) with a struct key_codec. */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "keys.h"
#include "wire_rpc.h"

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

const char *key_text_of(enum keyset set, uint32_t value)
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

bool key_is_other(const uint8_t key[AGG_KEY_BYTES])
{
	for (int i = 0; i < AGG_KEY_BYTES; i++)
		if (key[i] != AGG_OTHER_BYTE)
			return false;
	return true;
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
	if (key_is_other(key)) {
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
	}
	snprintf(err, errlen, "'%s' is not a valid %s", text, dim_name(dim) ? dim_name(dim) : "key");
	return -1;
}
