/* xdr.h — bounds-checked XDR (RFC 4506) decoder and encoder over flat buffers.
 * Decoding errors are sticky: after the first short read every getter returns
 * zero and x->err stays set, so callers check once at the end. */
#ifndef ENGINE_XDR_H
#define ENGINE_XDR_H

#include <stddef.h>
#include <stdint.h>

struct xdr_in {
	const uint8_t *buf;
	size_t len, pos;
	int err;
};

struct xdr_out {
	uint8_t *buf;
	size_t cap, pos;
	int err;  /* set when the encoder ran out of room */
	int grow; /* heap buffer that grows instead of failing */
};

void xdr_in_init(struct xdr_in *x, const void *buf, size_t len);
uint32_t xdr_get_u32(struct xdr_in *x);
uint64_t xdr_get_u64(struct xdr_in *x);
int xdr_get_bool(struct xdr_in *x);
/* Fixed-length opaque (padded); returns a pointer into the buffer or NULL. */
const uint8_t *xdr_get_fixed(struct xdr_in *x, size_t n);
/* Variable-length opaque with a maximum; sets *n. NULL on error. */
const uint8_t *xdr_get_opaque(struct xdr_in *x, uint32_t max, uint32_t *n);
/* String copied into dst (NUL-terminated, max dstsz-1 bytes, no embedded NUL). */
int xdr_get_string(struct xdr_in *x, char *dst, size_t dstsz);
size_t xdr_remaining(const struct xdr_in *x);

void xdr_out_init(struct xdr_out *x, void *buf, size_t cap);
/* Growable heap encoder (for metadata serialisation); free x->buf after. */
void xdr_out_init_grow(struct xdr_out *x, size_t initial);
void xdr_put_u32(struct xdr_out *x, uint32_t v);
void xdr_put_u64(struct xdr_out *x, uint64_t v);
void xdr_put_fixed(struct xdr_out *x, const void *p, size_t n);
void xdr_put_opaque(struct xdr_out *x, const void *p, uint32_t n);
void xdr_put_string(struct xdr_out *x, const char *s);
/* Reserve n bytes (padded) and return where to write them, or NULL. */
uint8_t *xdr_reserve(struct xdr_out *x, size_t n);

#endif
