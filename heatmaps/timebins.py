"""Time columns: aggregate a query's per-step columns into at most N display columns.

A display column spans a whole number of query steps (the fewest that fit the
width; whole minutes or hours once wider than that, so that the archive reads
its rollups), starting on a multiple of its width since the epoch; data is
summed, never sampled, so no event is dropped.
"""
from dataclasses import dataclass
import math

import numpy as np


@dataclass(frozen=True)
class TimeBins:
    start: int   # unix seconds, start of the first column
    width: int   # seconds per column
    ncols: int

    @property
    def end(self) -> int:
        return self.start + self.width * self.ncols

    def starts(self) -> np.ndarray:
        return self.start + self.width * np.arange(self.ncols, dtype=np.int64)


def _round_width(need: float, step: int) -> int:
    """Smallest multiple of step >= need; above a minute (an hour) a whole number of
    minutes (hours), so the archive can answer from its minute (hour) rollups."""
    width = step * max(math.ceil(need / step), 1)
    for unit in (3600, 60):
        if width > unit and unit % step == 0:
            return unit * math.ceil(width / unit)
    return width


def choose_bins(start: int, end: int, step: int, max_cols: int) -> TimeBins:
    """Columns covering [start, end): each a multiple of `step` wide, at most max_cols of them."""
    step = max(int(step), 1)
    start, end = int(start), max(int(end), int(start) + 1)
    max_cols = max(int(max_cols), 1)
    need = (end - start) / max_cols
    while True:
        width = _round_width(need, step)
        first = start - start % width
        ncols = math.ceil((end - first) / width)
        if ncols <= max_cols:
            return TimeBins(first, width, ncols)
        need = width + 1


def column_of(times: np.ndarray, bins: TimeBins) -> np.ndarray:
    """Display column of each query time; -1 when outside the bins."""
    col = (np.asarray(times, dtype=np.int64) - bins.start) // bins.width
    col[(col < 0) | (col >= bins.ncols)] = -1
    return col


def sum_columns(data: np.ndarray, times: np.ndarray, bins: TimeBins, axis: int) -> np.ndarray:
    """Sum `data` along `axis` (one entry per query time) into bins.ncols display columns."""
    data = np.asarray(data)
    col = column_of(times, bins)
    shape = list(data.shape)
    shape[axis] = bins.ncols
    out = np.zeros(shape, dtype=data.dtype)
    keep = col >= 0
    if not keep.any():
        return out
    data = np.compress(keep, data, axis=axis)
    col = col[keep]
    if np.all(col[1:] >= col[:-1]):
        # sorted times (the normal case): one reduceat over runs of equal columns
        starts = np.flatnonzero(np.r_[True, col[1:] != col[:-1]])
        sums = np.add.reduceat(data, starts, axis=axis)
        index = [slice(None)] * data.ndim
        index[axis] = col[starts]
        out[tuple(index)] = sums
    else:
        moved = np.moveaxis(out, axis, 0)
        np.add.at(moved, col, np.moveaxis(data, axis, 0))
    return out


def rate_seconds(collected, span) -> int:
    """What a rate over a range is divided by: the seconds collected in it (None: the reader
    does not say), else the span's length."""
    return max(collected if collected is not None else span[1] - span[0], 1)


def collected_seconds(qr, bins: TimeBins):
    """Per display column, how many of its seconds were collected (QueryResult.seconds_collected);
    None when the reader does not say."""
    seconds = qr.seconds_collected()
    return None if seconds is None else sum_columns(seconds, qr.times, bins, axis=0)
