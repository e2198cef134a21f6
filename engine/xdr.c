/* xdr.c — bounds-checked XDR decoding and encoding (see xdr.h). */
#include "xdr.h"

#include <string.h>

#include "util.h"

#define PAD4(n) (((n) + 3u) & ~(size_t)3u)

void xdr_in_init(struct xdr_in *x, const void *buf, size_t len)
{
	x->buf = buf;
	x->len = len;
	x->pos = 0;
	x->err = 0;
}

size_t xdr_remaining(const struct xdr_in *x)
{
	return x->err ? 0 : x->len - x->pos;
}

static const uint8_t *take(struct xdr_in *x, size_t n)
{
	if (x->err || n > x->len - x->pos) {
		x->err = 1;
		return NULL;
	}
	const uint8_t *p = x->buf + x->pos;
	x->pos += n;
	return p;
}

uint32_t xdr_get_u32(struct xdr_in *x)
{
	const uint8_t *p = take(x, 4);
	if (!p)
		return 0;
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

uint64_t xdr_get_u64(struct xdr_in *x)
{
	uint64_t hi = xdr_get_u32(x);
	return hi << 32 | xdr_get_u32(x);
}

int xdr_get_bool(struct xdr_in *x)
{
	uint32_t v = xdr_get_u32(x);
	if (v > 1)
		x->err = 1;
	return v == 1;
}

const uint8_t *xdr_get_fixed(struct xdr_in *x, size_t n)
{
	if (n > x->len)
		return x->err = 1, NULL;
	return take(x, PAD4(n));
}

const uint8_t *xdr_get_opaque(struct xdr_in *x, uint32_t max, uint32_t *n)
{
	uint32_t len = xdr_get_u32(x);
	if (x->err || len > max) {
		x->err = 1;
		return NULL;
	}
	*n = len;
	return xdr_get_fixed(x, len);
}

int xdr_get_string(struct xdr_in *x, char *dst, size_t dstsz)
{
	uint32_t n;
	const uint8_t *p = xdr_get_opaque(x, (uint32_t)dstsz - 1, &n);
	if (!p || memchr(p, 0, n)) {
		x->err = 1;
		dst[0] = 0;
		return -1;
	}
	memcpy(dst, p, n);
	dst[n] = 0;
	return 0;
}

void xdr_out_init(struct xdr_out *x, void *buf, size_t cap)
{
	x->buf = buf;
	x->cap = cap;
	x->pos = 0;
	x->err = 0;
	x->grow = 0;
}

void xdr_out_init_grow(struct xdr_out *x, size_t initial)
{
	if (initial < 64)
		initial = 64;
	xdr_out_init(x, xmalloc(initial), initial);
	x->grow = 1;
}

uint8_t *xdr_reserve(struct xdr_out *x, size_t n)
{
	size_t padded = PAD4(n);
	if (x->grow && !x->err && padded > x->cap - x->pos) {
		while (padded > x->cap - x->pos)
			x->cap *= 2;
		x->buf = xrealloc(x->buf, x->cap);
	}
	if (x->err || padded > x->cap - x->pos) {
		x->err = 1;
		return NULL;
	}
	uint8_t *p = x->buf + x->pos;
	if (padded > n)
		memset(p + n, 0, padded - n);
	x->pos += padded;
	return p;
}

void xdr_put_u32(struct xdr_out *x, uint32_t v)
{
	uint8_t *p = xdr_reserve(x, 4);
	if (!p)
		return;
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

void xdr_put_u64(struct xdr_out *x, uint64_t v)
{
	xdr_put_u32(x, (uint32_t)(v >> 32));
	xdr_put_u32(x, (uint32_t)v);
}

void xdr_put_fixed(struct xdr_out *x, const void *p, size_t n)
{
	uint8_t *d = xdr_reserve(x, n);
	if (d && n)
		memcpy(d, p, n);
}

void xdr_put_opaque(struct xdr_out *x, const void *p, uint32_t n)
{
	xdr_put_u32(x, n);
	xdr_put_fixed(x, p, n);
}

void xdr_put_string(struct xdr_out *x, const char *s)
{
	xdr_put_opaque(x, s, (uint32_t)strlen(s));
}
