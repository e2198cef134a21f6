"""Re-binning: turn a heat-map QueryResult into the grid that renderers draw.

Time: the query's columns are summed into display columns (timebins).
Value: the y-range is cut into `ncells` equal display cells (equal in value on a
linear axis, equal in log(value) on a log axis); then every cell edge is moved
UP to the nearest llhist bucket edge (the bottom edge DOWN). The distinct edges
that remain are the row edges, so every row is a union of whole buckets and no
bucket ever straddles a row edge: a bucket belongs to the row holding all of it.
Where buckets are finer than a cell, a row sums several buckets; where a bucket
is taller than a cell (e.g. 100 us buckets above 1 ms on a 10 us scale), its row
spans several cells. Colour uses `density` = count per cell height, so a tall row
is not drawn brighter than its true density; `counts` keep the exact sums.

On a linear axis the auto range uses a cell height of c*10^k (c in 1..8), a
multiple of every bucket width below it, so the snapped edges are the cell edges.

Nothing is lost: total == counts.sum() + below + above.
"""
from dataclasses import dataclass, field
import math

import numpy as np

from strata.datasets import llhist

from .timebins import TimeBins, choose_bins, collected_seconds, rate_seconds, sum_columns
from .units import family, format_value

_LOWER = llhist.lower_bounds()
_EDGES = np.append(_LOWER, llhist.upper_bounds()[-1])   # every bucket edge, increasing
_NICE = (1, 2, 3, 4, 5, 6, 8)
_EMPTY_RANGE = {"time": 1_000_000.0, "bytes": 65536.0, "count": 100.0}


@dataclass
class Grid:
    name: str                 # dataset name
    statistic: str
    unit: str
    keys: list                # the breakdown keys summed into this grid ([] = all)
    bins: TimeBins
    span: tuple               # (start, end) unix seconds counted: the range asked, widened to the whole columns and records read
    axis: str                 # "linear" | "log"
    cells: np.ndarray         # (ncells+1,) display cell edges, uniform in axis space
    edges: np.ndarray         # (nrows+1,) row edges: llhist bucket edges
    cell_row: np.ndarray      # (ncells,) row drawn in each cell
    counts: np.ndarray        # (nrows, ncols) uint64 exact sums of whole buckets
    density: np.ndarray       # (nrows, ncols) float64 count per display-cell height
    column_totals: np.ndarray  # (ncols,) all events per column, cropped ones included
    total: int                # all events in range (selected keys)
    below: int                # events under edges[0]
    above: int                # events at or over edges[-1]
    crop: dict                # how the top was chosen: mode auto|set|outliers (+ percentile, value)
    percentiles: dict = field(default_factory=dict)  # p -> (ncols,) float64 value, NaN if empty
    spans: list = field(default_factory=list)        # (start, end, cause): outages collected as one record
    derived: str = ""                                # how the archive answered the name (QueryResult.derived)
    collected: int | None = None                     # seconds collected in the bins (None: not said)
    whole: dict = field(default_factory=dict)        # p -> value over the whole range (WHOLE_PERCENTILES)
    bands: list = field(default_factory=list)        # (key, median, share of events) per tier (tier_bands)

    @property
    def seconds(self) -> int:
        return rate_seconds(self.collected, self.span)

    @property
    def row_counts(self) -> np.ndarray:
        """Events per row over the whole range (the side panel)."""
        return self.counts.sum(axis=1)


WHOLE_PERCENTILES = (50.0, 99.0, 99.9)   # said in the header, over every event of the range
BANDED = "tier"   # a breakdown whose keys are bands of one map (cache, disk; the engine's arc, l2arc...)


def tier_bands(qr, bins: TimeBins, keys=None) -> list:
    """[(key, median, share of the map's events)] of each key with events, busiest first, when
    qr is broken down by tier (its keys are the map's bands: their names are drawn at their
    medians), else []."""
    if qr.breakdown != BANDED or not len(qr.buckets):
        return []
    buckets = np.asarray(qr.buckets, dtype=np.int64)
    per_key = {k: column_histograms(qr, bins, [k]).sum(axis=0) for k in (keys or qr.keys)}
    total = sum(int(h.sum()) for h in per_key.values())
    bands = [(k, float(percentile_of(buckets, h, 50.0)), int(h.sum()) / total) for k, h in per_key.items() if h.any()]
    return sorted(bands, key=lambda b: -b[2])


def select_keys(qr, keys=None) -> np.ndarray:
    """Indices of `keys` in qr.keys (all when keys is None); KeyError names the missing one."""
    if keys is None:
        return np.arange(len(qr.keys))
    index = {k: i for i, k in enumerate(qr.keys)}
    missing = [k for k in keys if k not in index]
    if missing:
        raise KeyError(missing[0])
    return np.array([index[k] for k in keys], dtype=np.int64)


def column_histograms(qr, bins: TimeBins, keys=None) -> np.ndarray:
    """(ncols, m) bucket counts of the selected keys, summed into the display columns."""
    m = len(qr.buckets)
    counts = np.asarray(qr.counts)
    if counts.size == 0 or m == 0 or len(qr.times) == 0:
        return np.zeros((bins.ncols, m), dtype=np.uint64)
    idx = select_keys(qr, keys)
    per_time = counts[idx].sum(axis=0, dtype=np.uint64) if len(idx) != 1 else counts[idx[0]]
    return sum_columns(per_time, qr.times, bins, axis=0)


def percentile_of(buckets: np.ndarray, counts: np.ndarray, p: float) -> np.ndarray:
    """p-th percentile (0..100) per row of counts (..., m): the rank's bucket, linearly
    interpolated inside it; NaN where a row holds no events."""
    counts = np.asarray(counts, dtype=np.float64)
    if len(buckets) == 0 or counts.size == 0:
        return np.full(counts.shape[:-1], np.nan)
    flat = counts.reshape(-1, counts.shape[-1])
    out = np.full(flat.shape[0], np.nan)
    cum = np.cumsum(flat, axis=1)
    total = cum[:, -1]
    live = total > 0
    rank = np.clip(p / 100.0, 0.0, 1.0) * total
    at = np.argmax(cum >= np.maximum(rank, 1e-12)[:, None], axis=1)
    rows = np.arange(flat.shape[0])
    before = cum[rows, at] - flat[rows, at]
    inside = np.where(flat[rows, at] > 0, (rank - before) / np.where(flat[rows, at] > 0, flat[rows, at], 1), 0.0)
    lo = _LOWER[buckets[at]]
    hi = _EDGES[buckets[at] + 1]
    out[live] = (lo + np.clip(inside, 0, 1) * (hi - lo))[live]
    return out.reshape(counts.shape[:-1])


def percentile_bucket_top(buckets: np.ndarray, counts: np.ndarray, p: float) -> float:
    """Upper edge of the bucket holding the p-th percentile event of a (m,) histogram."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    if total <= 0:
        return math.nan
    rank = max(math.ceil(p / 100.0 * total), 1)
    at = int(np.searchsorted(np.cumsum(counts), rank, side="left"))
    return float(_EDGES[buckets[min(at, len(buckets) - 1)] + 1])


def _nice_at_least(x: float) -> float:
    """Smallest c*10^k >= x with c in _NICE and 10^k >= 1 (values are integers)."""
    if x <= 1:
        return 1.0
    k = math.floor(math.log10(x))
    for exp in (k, k + 1):
        for c in _NICE:
            if c * 10 ** exp >= x:
                return float(c * 10 ** exp)
    return float(10 ** (k + 1))


def _nice_log_floor(x: float) -> float:
    if x <= 1:
        return 1.0
    k = math.floor(math.log10(x))
    return float(max(c * 10 ** k for c in (1, 2, 5) if c * 10 ** k <= x))


def _nice_log_ceil(x: float) -> float:
    k = math.floor(math.log10(max(x, 1)))
    for exp in (k, k + 1):
        for c in (1, 2, 5):
            if c * 10 ** exp >= x:
                return float(c * 10 ** exp)
    return float(10 ** (k + 1))


def snap_rows(targets: np.ndarray):
    """Row edges (bucket edges) and the row of each display cell, from cell edges `targets`."""
    last = len(_EDGES) - 1
    bottom = _EDGES[max(int(np.searchsorted(_EDGES, targets[0], side="right")) - 1, 0)]
    tops = _EDGES[np.minimum(np.searchsorted(_EDGES, targets[1:], side="left"), last)]
    snapped = np.r_[bottom, np.maximum.accumulate(tops)]
    edges = np.unique(snapped)
    cell_row = np.searchsorted(edges, snapped[1:]) - 1
    return edges, np.maximum(cell_row, 0)


def row_counts(hist: np.ndarray, buckets: np.ndarray, edges: np.ndarray) -> tuple:
    """(counts (nrows, ncols), below, above) of (ncols, m) column histograms over `buckets`
    summed into the rows between bucket edges `edges`; below/above mask the buckets outside."""
    lower = _LOWER[buckets] if len(buckets) else np.zeros(0)
    upper = _EDGES[buckets + 1] if len(buckets) else np.zeros(0)
    is_below = upper <= edges[0]
    is_above = lower >= edges[-1]
    inside = ~(is_below | is_above)
    row_of_bucket = np.searchsorted(edges, lower[inside], side="right") - 1
    counts = np.zeros((len(edges) - 1, hist.shape[0]), dtype=np.uint64)
    if inside.any():
        part = hist[:, inside]
        starts = np.flatnonzero(np.r_[True, row_of_bucket[1:] != row_of_bucket[:-1]])
        counts[row_of_bucket[starts], :] = np.add.reduceat(part, starts, axis=1).T
    return counts, is_below, is_above


def _value_range(buckets, hist_total, unit, axis, ymin, ymax, outliers, ncells):
    """(cell edges, crop description) for the requested or automatic y-range."""
    live = buckets[hist_total > 0]
    crop = {"mode": "auto"}
    data_lo = float(_LOWER[live[0]]) if len(live) else None
    data_hi = float(_EDGES[live[-1] + 1]) if len(live) else None
    if outliers is not None and len(live):
        cut = percentile_bucket_top(buckets, hist_total, outliers)
        crop = {"mode": "outliers", "percentile": outliers,
                "value": float(percentile_of(buckets, hist_total, outliers))}
        data_hi = cut
    if ymax is not None:
        crop = {"mode": "set", "value": float(ymax)}
    if axis == "log":
        lo = float(ymin) if ymin is not None else _nice_log_floor(data_lo if data_lo else 1.0)
        lo = max(lo, 1.0)
        if ymax is not None:
            hi = float(ymax)
        else:
            hi = _nice_log_ceil(max(data_hi or lo * 1000, lo * 10))
        if hi <= lo:
            raise ValueError(f"the y-range is empty: top {format_value(hi, unit)} is not above bottom {format_value(lo, unit)}")
        return np.geomspace(lo, hi, ncells + 1), crop
    lo = float(ymin) if ymin is not None else 0.0
    if ymax is not None:
        hi = float(ymax)
        if hi <= lo:
            raise ValueError(f"the y-range is empty: top {format_value(hi, unit)} is not above bottom {format_value(lo, unit)}")
        return lo + (hi - lo) * np.arange(ncells + 1) / ncells, crop
    top = data_hi if data_hi is not None else lo + _EMPTY_RANGE[family(unit)]
    h = _nice_at_least(max(top - lo, 1.0) / ncells)
    lo = math.floor(lo / h) * h
    while lo + h * ncells < top:          # floor of lo may have cost the top a cell
        h = _nice_at_least(h * 1.0001)
        lo = math.floor((float(ymin) if ymin is not None else 0.0) / h) * h
    return lo + h * np.arange(ncells + 1), crop


def build_grid(qr, start: int, end: int, *, max_cols: int, ncells: int, keys=None,
               axis: str = "linear", ymin=None, ymax=None, outliers=None,
               percentiles=(), bins: TimeBins = None) -> Grid:
    """The drawable grid for a heat-map QueryResult over [start, end)."""
    if qr.kind != "heatmap":
        raise ValueError(f"{qr.name} is a {qr.kind}, not a heat-map statistic")
    if axis not in ("linear", "log"):
        raise ValueError(f"axis must be linear or log, not {axis!r}")
    ncells = max(int(ncells), 1)
    bins = bins or choose_bins(start, end, qr.step, max_cols)
    buckets = np.asarray(qr.buckets, dtype=np.int64)
    hist = column_histograms(qr, bins, keys)                       # (ncols, m)
    seconds = collected_seconds(qr, bins)                          # (ncols,) or None
    hist_total = hist.sum(axis=0)                                  # (m,)
    cells, crop = _value_range(buckets, hist_total, qr.unit, axis, ymin, ymax, outliers, ncells)
    edges, cell_row = snap_rows(cells)

    counts, is_below, is_above = row_counts(hist, buckets, edges)

    if axis == "log":
        row_h = np.diff(np.log10(edges))
        cell_h = (math.log10(cells[-1]) - math.log10(cells[0])) / ncells
    else:
        row_h = np.diff(edges)
        cell_h = (cells[-1] - cells[0]) / ncells
    density = counts * (cell_h / row_h)[:, None]

    return Grid(
        name=qr.name, statistic=qr.statistic, unit=qr.unit, keys=list(keys or []),
        bins=bins, span=qr.counted_span(start, end), axis=axis, cells=cells, edges=edges,
        cell_row=cell_row, counts=counts, density=density,
        column_totals=hist.sum(axis=1, dtype=np.uint64),
        total=int(hist_total.sum()), below=int(hist_total[is_below].sum()),
        above=int(hist_total[is_above].sum()), crop=crop,
        percentiles={float(p): percentile_of(buckets, hist, float(p)) for p in percentiles},
        spans=list(getattr(qr, "spans", [])), derived=getattr(qr, "derived", ""),
        collected=None if seconds is None else int(seconds.sum()),
        whole={p: float(percentile_of(buckets, hist_total, p)) for p in WHOLE_PERCENTILES} if hist_total.any() else {},
        bands=tier_bands(qr, bins, keys),
    )
