/* llhist.h — log-linear histogram buckets (DESIGN.md, "Log-linear buckets").
 *
 * One header for BPF programs and userspace C; its Python twin is
 * strata.datasets.llhist, and tests/vectors/llhist.json checks all three.
 *
 * Values are unsigned 64-bit integers (ns, bytes). Two significant digits:
 *   v < 10:    bucket b = v (exact)
 *   otherwise: d = (decimal digits of v) - 1, m = the two leading digits
 *              (10..99), b = 10 + 90*(d-1) + (m-10), covering
 *              [m*10^(d-1), (m+1)*10^(d-1)).
 * UINT64_MAX (1.8e19) lands in bucket 1638, so there are 1639 buckets. The
 * last bucket's upper bound, 1.9e19, does not fit in 64 bits: llhist_upper()
 * saturates it to UINT64_MAX (that one bound is inclusive).
 */
#ifndef STRATA_LLHIST_H
#define STRATA_LLHIST_H

#ifndef __bpf__
#include <linux/types.h>
#endif

#define LLHIST_NBUCKETS 1639
#define LLHIST_MAX_SCALE_DIGITS 18 /* 10^18 is the largest scale a u64 needs */

/* Bucket index of v: two divisions, whatever its size (this runs on every
 * probe hit).  scale grows while 100 * scale <= v, i.e. scale <= v / 100,
 * which cannot overflow; the loop is bounded for the BPF verifier. */
static __always_inline __u32 llhist_bucket(__u64 v)
{
	__u64 scale = 1, q = v / 100; /* scale = 10^(d-1) */
	__u32 d = 1;

	if (v < 10)
		return (__u32)v;
	for (int i = 0; i < LLHIST_MAX_SCALE_DIGITS; i++) {
		if (scale > q)
			break;
		scale *= 10;
		d++;
	}
	return 10 + 90 * (d - 1) + (__u32)(v / scale - 10);
}

/* 10^(d-1) for bucket b >= 10. */
static __always_inline __u64 llhist__scale(__u32 b)
{
	__u64 scale = 1;
	__u32 d = (b - 10) / 90 + 1;

	for (int i = 0; i < LLHIST_MAX_SCALE_DIGITS; i++) {
		if ((__u32)i + 1 >= d)
			break;
		scale *= 10;
	}
	return scale;
}

/* Smallest value in bucket b. */
static __always_inline __u64 llhist_lower(__u32 b)
{
	if (b < 10)
		return b;
	return (__u64)((b - 10) % 90 + 10) * llhist__scale(b);
}

/* First value above bucket b (exclusive), saturated to UINT64_MAX for the last bucket. */
static __always_inline __u64 llhist_upper(__u32 b)
{
	if (b < 10)
		return (__u64)b + 1;
	if (b >= LLHIST_NBUCKETS - 1) /* 1.9e19 does not fit in 64 bits */
		return ~(__u64)0;
	return (__u64)((b - 10) % 90 + 11) * llhist__scale(b);
}

#endif /* STRATA_LLHIST_H */
