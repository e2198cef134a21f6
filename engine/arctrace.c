/* arctrace.c — reader for the ARC paper's block traces (.lis), plain or
 * zstd-compressed: streams the file through libzstd when it starts with the
 * zstd frame magic and parses one request per line with bounds checks. */
#include "arctrace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define RAW_CAP (1u << 17)
#define TXT_CAP (1u << 20)              /* also the longest line accepted */

struct arctrace {
	int fd;
	ZSTD_DCtx *z;                   /* NULL: plain text */
	size_t zret;                    /* last ZSTD_decompressStream result */
	bool raw_eof;
	unsigned char raw[RAW_CAP];
	size_t raw_len, raw_pos;
	char txt[TXT_CAP];
	size_t txt_len, txt_pos;
	uint64_t lineno;
	char err[256];
};

static void fail(struct arctrace *t, const char *fmt, const char *detail)
{
	char msg[200];
	snprintf(msg, sizeof(msg), fmt, detail);
	if (t->lineno)
		snprintf(t->err, sizeof(t->err), "line %llu: %s", (unsigned long long)t->lineno, msg);
	else
		snprintf(t->err, sizeof(t->err), "%s", msg);
}

/* Read more raw bytes (compressed or not) after raw_pos; false on error. */
static bool read_raw(struct arctrace *t)
{
	if (t->raw_pos == t->raw_len)
		t->raw_pos = t->raw_len = 0;
	ssize_t n;
	do
		n = read(t->fd, t->raw + t->raw_len, RAW_CAP - t->raw_len);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		fail(t, "read: %s", strerror(errno));
		return false;
	}
	if (n == 0)
		t->raw_eof = true;
	t->raw_len += (size_t)n;
	return true;
}

/* Append text after txt_len; sets *eof when the trace has no more text. */
static bool fill_text(struct arctrace *t, bool *eof)
{
	memmove(t->txt, t->txt + t->txt_pos, t->txt_len - t->txt_pos);
	t->txt_len -= t->txt_pos;
	t->txt_pos = 0;
	size_t before = t->txt_len;
	*eof = false;
	while (t->txt_len == before) {
		bool drained = t->raw_pos == t->raw_len;
		if (drained && !t->raw_eof) {
			if (!read_raw(t))
				return false;
			continue;
		}
		if (drained && (!t->z || t->zret == 0)) {
			*eof = true;
			return true;
		}
		if (!t->z) {
			size_t n = t->raw_len - t->raw_pos;
			if (n > TXT_CAP - t->txt_len)
				n = TXT_CAP - t->txt_len;
			memcpy(t->txt + t->txt_len, t->raw + t->raw_pos, n);
			t->txt_len += n;
			t->raw_pos += n;
			continue;
		}
		ZSTD_inBuffer in = { t->raw, t->raw_len, t->raw_pos };
		ZSTD_outBuffer out = { t->txt, TXT_CAP, t->txt_len };
		t->zret = ZSTD_decompressStream(t->z, &out, &in);
		if (ZSTD_isError(t->zret)) {
			fail(t, "zstd: %s", ZSTD_getErrorName(t->zret));
			return false;
		}
		if (drained && out.pos == t->txt_len) {
			fail(t, "%s", "truncated zstd stream");
			return false;
		}
		t->raw_pos = in.pos;
		t->txt_len = out.pos;
	}
	return true;
}

static bool parse_u64(const char **s, const char *end, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	if (p == end || *p < '0' || *p > '9')
		return false;
	for (; p < end && *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (x > (UINT64_MAX - d) / 10)
			return false;
		x = x * 10 + d;
	}
	*s = p;
	*v = x;
	return true;
}

static inline bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* 1: a request in r; 0: blank line; -1: bad line. */
static int parse_line(struct arctrace *t, const char *s, const char *end,
		      struct arctrace_req *r)
{
	uint64_t f[4];
	int nf = 0;
	for (;;) {
		while (s < end && is_blank(*s))
			s++;
		if (s == end)
			break;
		if (nf == 4) {
			fail(t, "%s", "more than 4 fields");
			return -1;
		}
		if (!parse_u64(&s, end, &f[nf]) || (s < end && !is_blank(*s))) {
			fail(t, "%s", "fields must be unsigned decimal integers");
			return -1;
		}
		nf++;
	}
	if (nf == 0)
		return 0;
	if (nf != 4) {
		fail(t, "%s", "expected 4 fields: start_block nblocks ignored request_number");
		return -1;
	}
	if (f[1] > UINT32_MAX || f[0] > UINT64_MAX - f[1]) {
		fail(t, "%s", "block range out of bounds");
		return -1;
	}
	r->start = f[0];
	r->nblocks = (uint32_t)f[1];
	return 1;
}

struct arctrace *arctrace_open(const char *path, char *err, size_t errlen)
{
	struct arctrace *t = calloc(1, sizeof(*t));
	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (t->fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		free(t);
		return NULL;
	}
	while (t->raw_len < 4 && !t->raw_eof)
		if (!read_raw(t)) {
			snprintf(err, errlen, "%s: %s", path, t->err);
			arctrace_close(t);
			return NULL;
		}
	static const unsigned char magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	if (t->raw_len >= 4 && memcmp(t->raw, magic, 4) == 0) {
		t->z = ZSTD_createDCtx();
		if (!t->z) {
			snprintf(err, errlen, "zstd: cannot create a decompression context");
			arctrace_close(t);
			return NULL;
		}
	}
	return t;
}

ssize_t arctrace_next(struct arctrace *t, struct arctrace_req *out, size_t max)
{
	size_t n = 0;
	while (n < max) {
		char *line = t->txt + t->txt_pos;
		char *nl = memchr(line, '\n', t->txt_len - t->txt_pos);
		bool eof = false;
		if (!nl) {
			if (t->txt_pos == 0 && t->txt_len == TXT_CAP) {
				t->lineno++;
				fail(t, "%s", "line too long");
				return -1;
			}
			if (!fill_text(t, &eof))
				return -1;
			if (!eof)
				continue;
			if (t->txt_pos == t->txt_len)
				break;          /* end of trace */
			nl = t->txt + t->txt_len;   /* last line without a newline */
			line = t->txt + t->txt_pos;
		}
		t->lineno++;
		int rc = parse_line(t, line, nl, &out[n]);
		if (rc < 0)
			return -1;
		n += (size_t)rc;
		t->txt_pos = eof ? t->txt_len : (size_t)(nl - t->txt) + 1;
	}
	return (ssize_t)n;
}

const char *arctrace_error(const struct arctrace *t)
{
	return t->err;
}

void arctrace_close(struct arctrace *t)
{
	if (!t)
		return;
	if (t->z)
		ZSTD_freeDCtx(t->z);
	close(t->fd);
	free(t);
}
