"""Log-linear histogram buckets: the Python twin of bpf/llhist.h (DESIGN.md).

v < 10 is its own bucket; above, two significant decimal digits: with
d = digits(v) - 1 and m = the two leading digits, bucket 10 + 90(d-1) + (m-10)
covers [m*10^(d-1), (m+1)*10^(d-1)). tests/vectors/llhist.json checks this
against the C and BPF versions.
"""
import numpy as np

NBUCKETS = 1639
U64_MAX = (1 << 64) - 1


def bucket(v: int) -> int:
    """Bucket index of a non-negative integer below 2**64."""
    if v < 10:
        return int(v)
    d = len(str(int(v))) - 1
    m = int(v) // 10 ** (d - 1)
    return 10 + 90 * (d - 1) + (m - 10)


def lower(b: int) -> int:
    """Smallest value in bucket b."""
    if b < 10:
        return b
    d, m = divmod(b - 10, 90)
    return (m + 10) * 10 ** d


def upper(b: int) -> int:
    """First value above bucket b; the last bucket saturates at 2**64 - 1."""
    if b < 10:
        return b + 1
    d, m = divmod(b - 10, 90)
    return min((m + 11) * 10 ** d, U64_MAX)


def lower_bounds() -> np.ndarray:
    """Lower bound of every bucket, as float64 (exact below 2**53)."""
    return np.array([lower(b) for b in range(NBUCKETS)], dtype=np.float64)


def upper_bounds() -> np.ndarray:
    """Upper bound of every bucket, as float64."""
    return np.array([upper(b) for b in range(NBUCKETS)], dtype=np.float64)


def midpoints() -> np.ndarray:
    """Every bucket's midpoint, as float64: what its events are summed at (within 5%)."""
    return (lower_bounds() + upper_bounds()) / 2


def buckets_of(values: np.ndarray) -> np.ndarray:
    """Vectorised bucket(): bucket index of each value in a uint64 array."""
    v = np.asarray(values, dtype=np.uint64)
    out = np.empty(v.shape, dtype=np.int64)
    small = v < 10
    out[small] = v[small].astype(np.int64)
    big = v[~small]
    if big.size:
        # digits via comparisons against exact uint64 powers of ten (no float rounding)
        powers = np.array([10 ** k for k in range(20)], dtype=np.uint64)
        d = np.searchsorted(powers, big, side="right").astype(np.int64) - 1
        scale = powers[d - 1]
        m = (big // scale).astype(np.int64)
        out[~small] = 10 + 90 * (d - 1) + (m - 10)
    return out
