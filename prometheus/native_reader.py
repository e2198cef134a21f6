"""Native histograms read back from Prometheus' API into llhist buckets (the inverse of native_buckets.py).

Prometheus answers a range query of a native histogram with, per sample, its
buckets as [boundary rule, lower, upper, count]. Each bucket's schema follows
from its width (upper / lower = 2^(2^-schema)) and its index from its upper bound;
the zero bucket is llhist's bin 0. A native bucket's count goes back to the llhist
bins whose centres moved into it, spread evenly over them when several did (as
one-digit bounds are: the picture is the archive's within the mapping error). A
bucket no bin moves into (not exported by strata) goes to the bin holding its
middle. Counts are cumulative per bucket and spread over the columns as classic
buckets are (reader.py, spread.py); a bucket missing from a sample that has others is 0.
"""
import math

import numpy as np

from strata.datasets import llhist
from strata.prometheus import native_buckets
from strata.datasets.errors import ArchiveError

ZERO = None          # the zero bucket's index


def parse(result, start: int, step: int, n: int, name: str) -> list:
    """A query_range answer -> [(labels, {(schema, index): cumulative count at each of the
    n + 1 edges, NaN where the series has no sample})] for its native-histogram series."""
    out = []
    try:
        for series in result:
            if "histograms" not in series:
                continue
            alive, buckets = np.full(n + 1, np.nan), {}
            for t, h in series["histograms"]:
                i = int(round((float(t) - start) / step))
                if not 0 <= i <= n:
                    continue
                alive[i] = float(h["count"])
                for _rule, lo, hi, count in h.get("buckets") or []:
                    key = _bucket(float(lo), float(hi), name)
                    buckets.setdefault(key, np.full(n + 1, np.nan))[i] = float(count)
            for v in buckets.values():
                v[np.isnan(v) & ~np.isnan(alive)] = 0.0
            out.append((dict(series["metric"]), buckets))
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError, ZeroDivisionError):
        raise ArchiveError(f"{name}: Prometheus answered a native histogram malformed") from None
    return out


def _bucket(lo: float, hi: float, name: str) -> tuple:
    if lo <= 0 <= hi:
        return ZERO
    if not 0 < lo < hi or not math.isfinite(hi):
        raise ArchiveError(f"{name}: native bucket ({lo}, {hi}] is not one strata exports")
    schema = round(-math.log2(math.log2(hi / lo)))
    if schema not in native_buckets.SCHEMAS:
        raise ArchiveError(f"{name}: native bucket ({lo}, {hi}] has no schema in -4..8")
    return schema, round(math.log2(hi) * 2 ** schema)


def bins_of(key, per: float) -> np.ndarray:
    """The llhist bins a native bucket's count goes back to."""
    if key is ZERO:
        return np.array([0])
    schema, index = key
    bins = np.flatnonzero(native_buckets.bins_to_native(schema, per)[1:] == index) + 1
    if bins.size:
        return bins
    lo, hi = native_buckets.bucket_bounds(np.array([index]), schema)
    middle = min((lo[0] + hi[0]) / 2 * per, float(llhist.U64_MAX))
    return np.array([llhist.bucket(int(middle))])
