"""A cumulative count known at some instants, spread over fixed-width columns of whole seconds.

The reader (reader.py) knows each series at its column edges t_k = start + k * step: the last
sample at or before t_k, its value and its time. Two consecutive distinct samples (a, va) and
(b, vb) say that vb - va events were counted between them (vb itself when the value fell: the
collector restarted, or the series was created again); where in between, the samples do not
say. That increase is spread evenly over the seconds its interval covers: each column gets the
share of its overlap with the interval. So a column is empty only if no interval that covers it
counted anything, and a late or missed scrape (one interval of two seconds instead of two of
one) puts half of its increase in each of its seconds instead of nothing in one and both in the
other.

Sample times are taken down to the whole second: the collector counts whole seconds, so a
sample holds seconds that ended at or before it was taken. `strata collect --metrics` stamps
each sample with the end of the last second it holds (openmetrics.py): with those, an interval
between samples of consecutive seconds is that second, and a column of any width whose two
edges were each stamped on a sample (their scrapes not missed) equals the archive's exactly.
Samples stamped with the scrape's time (other collectors, `honor_timestamps: false`) hold the
seconds closed before it, taken to be those ended by the whole second before the scrape; an
interval that snaps to no time at all is put in the second before its end.

A series' first sample (no sample at the edge before it) holds all it counted since its
`_created` time: that is spread over [created, sample) when the series was created within
Prometheus' lookback (5 minutes) of the previous edge, which Prometheus would have seen it at;
created earlier, what it holds is outside the range's knowledge (Prometheus began scraping long
after the collector) and is not counted. Without a created time (native histograms: the
protobuf's does not reach Prometheus' API) the sample is put in the second before it. A fall of
the value, or a new created time, starts the count again from zero (at the created time when
known). Counts stay integers: each increase is split over its columns by largest remainders
(ties to the later column), so every increase is counted once, whole, and a column's count is
within one of its exact share of each interval that covers it.
"""
import numpy as np

LOOKBACK_S = 300      # Prometheus' default lookback: an instant query sees samples this old


def spread(values: np.ndarray, times: np.ndarray, created: np.ndarray, start: int, step: int, n: int):
    """values: (rows, edges) cumulative counts of rows that share their sample times (one counter,
    or one histogram's buckets) read at the column edges start + k * step, with times (edges,) the
    time of the sample each edge read (NaN: none) and created (edges,) its series' created time
    (NaN: unknown); edges past the n columns' last may hold samples of their last seconds.
    -> (counts (rows, n) int64, covered (n,) bool: the columns some counted interval overlaps)."""
    rows = values.shape[0]
    counts, covered = np.zeros((rows, n), np.int64), np.zeros(n, bool)
    edges = start + step * np.arange(values.shape[1])
    known = np.flatnonzero(~np.isnan(times))
    if not known.size:
        return counts, covered
    keep = known[np.r_[True, times[known[1:]] != times[known[:-1]]]]     # each sample once
    at = np.floor(times[keep]).astype(np.int64)
    v, c = np.nan_to_num(values[:, keep]), created[keep]
    begin, end, inc = _intervals(at, v, c)
    if keep[0] > 0 and _born(c[0], edges[keep[0] - 1]):
        born = at[0] - 1 if np.isnan(c[0]) else min(int(np.floor(c[0])), at[0] - 1)
        begin, end, inc = np.r_[born, begin], np.r_[at[0], end], np.hstack([v[:, :1], inc])
    if not begin.size:
        return counts, covered
    column, row_share = _apportion(begin, end, np.rint(inc).astype(np.int64).clip(min=0), start, step)
    inside = (column >= 0) & (column < n)
    np.add.at(counts, (slice(None), column[inside]), row_share[:, inside])
    covered[column[inside]] = True
    return counts, covered


def _born(created: float, previous_edge: float) -> bool:
    """Whether a first sample's count is news: unknown creation, or inside the lookback."""
    return bool(np.isnan(created) or created >= previous_edge - LOOKBACK_S)


def _intervals(at, v, c):
    """(begin, end, increase per row) between consecutive samples, whole seconds."""
    prev, cur = v[:, :-1], v[:, 1:]
    renewed = (cur < prev).any(axis=0) | (c[1:] > c[:-1])        # restarted, or created again
    inc = np.where(renewed, cur, cur - prev)
    begin, end = at[:-1].copy(), at[1:]
    since = np.floor(np.nan_to_num(c[1:], nan=-np.inf))
    later = renewed & (since > begin)
    begin[later] = np.minimum(since[later], end[later]).astype(np.int64)
    begin = np.where(begin >= end, end - 1, begin)               # snapped to nothing: its last second
    return begin, end, inc


def _apportion(begin, end, inc, start: int, step: int):
    """Each interval [begin, end) of integer increases inc (rows, intervals) split over the columns
    of the grid start + k * step it overlaps, in proportion to the overlap, by largest remainders.
    -> (column of each piece, (rows, pieces) counts)."""
    first = (begin - start) // step
    last = (end - 1 - start) // step
    parts = last - first + 1
    owner = np.repeat(np.arange(begin.size), parts)
    column = first[owner] + np.arange(owner.size) - np.repeat(np.cumsum(parts) - parts, parts)
    overlap = np.minimum(end[owner], start + (column + 1) * step) - np.maximum(begin[owner], start + column * step)
    length = (end - begin)[owner]
    share, remainder = np.divmod(inc[:, owner] * overlap, length)
    if (parts == 1).all():
        return column, share
    left = inc - np.add.reduceat(share, np.cumsum(parts) - parts, axis=1)   # 0 <= left < parts
    rows = inc.shape[0]
    row = np.repeat(np.arange(rows), owner.size)
    group = row * begin.size + np.tile(owner, rows)
    order = np.lexsort((-np.tile(column, rows), -remainder.ravel(), group))
    rank = np.empty(order.size, np.int64)
    starts = np.r_[0, np.flatnonzero(np.diff(group[order])) + 1]
    rank[order] = np.arange(order.size) - np.repeat(starts, np.diff(np.r_[starts, order.size]))
    extra = rank.reshape(rows, -1) < left[:, owner]
    return column, share + extra
