"""llhist bins as Prometheus native-histogram buckets: the mapping and its measured error.

A native histogram of schema s (-4..8) has base-2 exponential buckets: bucket i
holds the values in (2^((i-1)/2^s), 2^(i/2^s)] of the exported unit (seconds for
ns, bytes as they are), so 2^s buckets a doubling. No llhist bin (two decimal
digits) is a union of such buckets, so each bin's whole count moves into the one
native bucket holding the bin's centre; value 0 (llhist bin 0) is the zero bucket.

What that costs is measured, not assumed: a value v is shown in the native bucket
(L, U] its bin moved to, so the error of the export is, over every integer v of
every bin, max(U - v, v - L) / v, the farthest point of the bucket shown from the
true value, relative to it (llhist's own error by the same measure is 10 %: 10
shown as [10, 11)). mapping_error(s) computes it over all 1,639 bins:
14.4 % at schema 3, 9.5 % at 4, 7.2 % at 5, 5.3 % at 8. DEFAULT_SCHEMA is the
coarsest schema (fewest buckets, smallest scrapes) whose error stays under
llhist's 10 % (default_schema() computes it; a test keeps the two equal).
"""
import functools
import math

import numpy as np

from strata.datasets import llhist

SCHEMAS = range(-4, 9)      # what Prometheus accepts
LLHIST_ERROR = 0.10         # llhist's own, by the same measure
DEFAULT_SCHEMA = 4          # = default_schema(), without computing it at every start


@functools.lru_cache(maxsize=None)
def bucket_of(x: float, schema: int) -> int:
    """The native bucket index holding x > 0: 2^((i-1)/2^s) < x <= 2^(i/2^s)."""
    width = 2.0 ** -schema
    i = math.ceil(math.log2(x) / width)
    while 2.0 ** ((i - 1) * width) >= x:
        i -= 1
    while 2.0 ** (i * width) < x:
        i += 1
    return i


def centres() -> np.ndarray:
    """Each llhist bin's centre in its unit: the middle of the integers it holds."""
    lo, hi = llhist.lower_bounds(), llhist.upper_bounds()
    return (lo + hi - 1) / 2


@functools.lru_cache(maxsize=None)
def bins_to_native(schema: int, per: float) -> np.ndarray:
    """For each llhist bin (bin 0 excluded: it is the zero bucket), the native bucket index
    its counts move to, for values exported as unit / per (1e9: ns shown in seconds)."""
    if schema not in SCHEMAS:
        raise ValueError(f"native histogram schema must be -4..8, not {schema}")
    c = centres()
    return np.array([0] + [bucket_of(x / per, schema) for x in c[1:]], dtype=np.int64)


def bucket_bounds(index: np.ndarray, schema: int) -> tuple:
    """(L, U] of native buckets, in the exported unit."""
    width = 2.0 ** -schema
    i = np.asarray(index, dtype=np.float64)
    return 2.0 ** ((i - 1) * width), 2.0 ** (i * width)


@functools.lru_cache(maxsize=None)
def mapping_error(schema: int, per: float = 1e9) -> float:
    """The largest max(U - v, v - L) / v over every integer v > 0 of every llhist bin
    (below 2^53, where values are exact as floats): the export's error, as defined above."""
    lo, hi = llhist.lower_bounds()[1:], llhist.upper_bounds()[1:] - 1
    keep = hi < 2.0 ** 53
    lo, hi = lo[keep], hi[keep]
    low, up = bucket_bounds(bins_to_native(schema, per)[1:][keep], schema)
    low, up = low * per, up * per
    # over v in [lo, hi], (U - v)/v is largest at lo and (v - L)/v at hi
    return float(max(((up - lo) / lo).max(), ((hi - low) / hi).max()))


def default_schema(per: float = 1e9) -> int:
    """The coarsest schema whose mapping error stays under llhist's own."""
    return next(s for s in SCHEMAS if mapping_error(s, per) < LLHIST_ERROR)


def sparse(counts: np.ndarray, schema: int, per: float) -> tuple:
    """An llhist count array -> (zero count, [(span offset, span length)], bucket deltas),
    the positive half of a native histogram with integer counts."""
    used = np.flatnonzero(counts[1:]) + 1
    zero = int(counts[0])
    if used.size == 0:
        return zero, [], []
    index = bins_to_native(schema, per)[used]
    keys, start = np.unique(index, return_index=True)      # index is non-decreasing in the bin
    sums = np.add.reduceat(counts[used].astype(np.int64), start)
    spans, previous_end = [], None
    for k in keys.tolist():
        if previous_end is not None and k == previous_end:
            spans[-1][1] += 1
        else:
            spans.append([k if previous_end is None else k - previous_end, 1])
        previous_end = k + 1
    deltas = np.diff(sums, prepend=0).tolist()
    return zero, [tuple(s) for s in spans], deltas
