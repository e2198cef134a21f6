"""Axis ticks: round values for value axes (linear, log) and clock times for time axes."""
import math
import time

TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800,
              21600, 43200, 86400, 2 * 86400, 7 * 86400]


def linear_ticks(lo: float, hi: float, count: int, binary: bool = False) -> list:
    """About `count` round values in [lo, hi]: 1, 2, 2.5, 5 x 10^k, or 2^k for byte sizes."""
    span = hi - lo
    if span <= 0 or count < 1:
        return [lo]
    raw = span / count
    if binary:
        step = float(2 ** max(math.ceil(math.log2(raw)), 0))
    else:
        k = 10 ** math.floor(math.log10(raw))
        step = next(c * k for c in (1, 2, 2.5, 5, 10) if c * k >= raw)
    first = math.ceil(lo / step) * step
    n = int(math.floor((hi - first) / step + 1e-9)) + 1
    return [first + i * step for i in range(max(n, 0))]


def log_ticks(lo: float, hi: float, count: int, binary: bool = False) -> list:
    """Decades in [lo, hi]; with room for more, 2x and 5x of each decade too.
    Byte sizes get powers of two instead (every second or fourth one when crowded)."""
    lo, hi = max(lo, 1e-300), max(hi, 1e-300)
    if binary:
        powers = [2.0 ** e for e in range(math.ceil(math.log2(max(lo, 1))), math.floor(math.log2(hi)) + 1)]
        stride = max(math.ceil(len(powers) / max(count, 1)), 1)
        stride = 1 if stride == 1 else 2 if stride == 2 else 4 if stride <= 4 else 10
        return [p for p in powers if round(math.log2(p)) % stride == 0] or [lo]
    decades = [10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    multipliers = (1, 2, 5) if count >= 2.5 * max(math.log10(hi / lo), 1) else (1,)
    out = [d * m for d in decades for m in multipliers if lo <= d * m <= hi]
    return out or [lo]


def time_axis(bins, left: int) -> tuple:
    """The two text rows under a terminal plot whose columns are `bins`: a rule with a
    tick per label, and clock labels that never overlap; `left` columns of margin."""
    ncols = bins.ncols
    ticks, fmt = time_ticks(bins.start, bins.end, ncols, 11)
    axis, labels = ["─"] * ncols, [" "] * (ncols + 10)
    for t in ticks:
        col = (t - bins.start) // bins.width
        if 0 <= col < ncols:
            axis[col] = "┬"
            text = time.strftime(fmt, time.localtime(t))
            if (col + len(text) <= ncols + 1 or ncols < 20) and all(c == " " for c in labels[max(col - 1, 0):col + len(text) + 1]):
                labels[col:col + len(text)] = list(text)
    return " " * (left - 1) + "└" + "".join(axis), " " * left + "".join(labels).rstrip()


def time_ticks(start: int, end: int, width_cols: int, min_gap_cols: int):
    """(tick times, strftime format) with at least min_gap_cols columns between ticks."""
    span = max(end - start, 1)
    per_col = span / max(width_cols, 1)
    step = next((s for s in TIME_STEPS if s / per_col >= min_gap_cols), TIME_STEPS[-1])
    offset = time.localtime(start).tm_gmtoff
    first = start + (-(start + offset)) % step      # on the local clock's round values
    fmt = "%H:%M:%S" if step < 60 else "%H:%M" if step < 86400 else "%b %d"
    return list(range(first, end, step)), fmt
