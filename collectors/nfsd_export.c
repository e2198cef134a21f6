/* nfsd_export.c — nfsd.*'s export keys as text. The key holds the fsid of the request's
 * file handle (bpf/nfsd.bpf.c); nfsd's own table of fsids, /proc/net/rpc/nfsd.fh/content
 * ("DOMAIN TYPE 0xWORDS PATH" per line, the fsid as 32-bit words in %08x), gives the
 * export's path. The key keeps 12 fsid bytes: a longer fsid (a 16-byte uuid) matches a
 * line on those. */
#include <stdio.h>
#include <string.h>
#include "nfsd_export.h"

#define FH_CONTENT "/proc/net/rpc/nfsd.fh/content"
#define FSID_WORDS 3

/* Bytes of the fsid of each type, as the kernel's key_len() (fs/nfsd/nfsfh.h). */
static unsigned fsid_bytes(unsigned type)
{
	static const unsigned len[] = { 8, 4, 12, 8, 8, 8, 16, 24 };

	return type < sizeof(len) / sizeof(len[0]) ? len[type] : 0;
}

/* "TYPE:HEX" of a key (the fsid's words as nfsd.fh prints them). */
static void fsid_text(const uint8_t key[AGG_KEY_BYTES], char *out, size_t n)
{
	unsigned words = fsid_bytes(key[1]) / 4;
	int at = snprintf(out, n, "%u:", key[1]);

	if (words > FSID_WORDS)
		words = FSID_WORDS;
	for (unsigned i = 0; i < words && at > 0 && (size_t)at < n; i++) {
		uint32_t w;

		memcpy(&w, key + 4 + 4 * i, sizeof(w));
		at += snprintf(out + at, n - at, "%08x", w);
	}
}

/* Calls match(type, hex, path, arg) for each valid line of nfsd.fh until it returns 1. */
static int each_fsid(int (*match)(unsigned, const char *, const char *, void *), void *arg)
{
	char line[4200], domain[256], hex[80], path[4096];
	unsigned type;
	int found = 0;
	FILE *f = fopen(FH_CONTENT, "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (line[0] != '#' && sscanf(line, "%255s %u 0x%79s %4095s", domain, &type, hex, path) == 4)
			found = match(type, hex, path, arg);
	fclose(f);
	return found;
}

struct lookup {
	const char *fsid;  /* TYPE:HEX */
	char *path;
	size_t n;
};

static int path_of(unsigned type, const char *hex, const char *path, void *arg)
{
	struct lookup *l = arg;
	char mine[100];

	snprintf(mine, sizeof(mine), "%u:%s", type, hex);
	if (strncmp(mine, l->fsid, strlen(l->fsid)) != 0)
		return 0;
	snprintf(l->path, l->n, "%s", path);
	return 1;
}

static void export_format(const uint8_t key[AGG_KEY_BYTES], char *out, size_t n)
{
	char fsid[40];
	struct lookup l = { fsid, out, n };

	if (key[0] != 1) {
		snprintf(out, n, "none");
		return;
	}
	fsid_text(key, fsid, sizeof(fsid));
	if (!each_fsid(path_of, &l))
		snprintf(out, n, "fsid:%s", fsid);
}

/* Key of "TYPE:HEX" (HEX: the fsid's words, as nfsd.fh lists them or, for a longer fsid,
 * the FSID_WORDS kept, as keys print). */
static int key_of_fsid(const char *text, uint8_t key[AGG_KEY_BYTES])
{
	unsigned type, words;
	char hex[80], rest;

	memset(key, 0, AGG_KEY_BYTES);
	if (sscanf(text, "%u:%79[0-9a-f]%c", &type, hex, &rest) != 2 || !fsid_bytes(type) ||
	    (strlen(hex) != 2 * fsid_bytes(type) && (fsid_bytes(type) <= 4 * FSID_WORDS || strlen(hex) != 8 * FSID_WORDS)))
		return -1;
	words = fsid_bytes(type) / 4 < FSID_WORDS ? fsid_bytes(type) / 4 : FSID_WORDS;
	key[0] = 1;
	key[1] = (uint8_t)type;
	for (unsigned i = 0; i < words; i++) {
		uint32_t w;

		if (sscanf(hex + 8 * i, "%8x", &w) != 1)
			return -1;
		memcpy(key + 4 + 4 * i, &w, sizeof(w));
	}
	return 0;
}

struct finder {
	const char *path;
	uint8_t *key;
};

static int fsid_of(unsigned type, const char *hex, const char *path, void *arg)
{
	struct finder *f = arg;
	char fsid[100];

	if (strcmp(path, f->path) != 0)
		return 0;
	snprintf(fsid, sizeof(fsid), "%u:%s", type, hex);
	return key_of_fsid(fsid, f->key) == 0;
}

static int export_parse(const char *text, uint8_t key[AGG_KEY_BYTES], char *err, size_t n)
{
	struct finder f = { text, key };

	if (strcmp(text, "none") == 0)
		return 0;
	if (strncmp(text, "fsid:", 5) == 0 ? key_of_fsid(text + 5, key) == 0 : text[0] == '/' && each_fsid(fsid_of, &f))
		return 0;
	snprintf(err, n, "'%s' is not an export nfsd lists now (/proc/net/rpc/nfsd.fh) nor fsid:TYPE:HEX", text);
	return -1;
}

const struct key_codec nfsd_export_keys[] = { { AGG_DIM_EXPORT, export_format, export_parse }, { 0 } };
