"""Seconds collected per query column: what a rate is divided by (events per collected second).

A second was collected when the second level holds its record, or an outage's record spans
it (the spans table). At the second level this is exact. A minute, ten-minute or hour
record does not say how many of its seconds were collected, so each counts whole, except
where collection may have started or stopped inside it (a row beside a step without a row,
or at either end of the range: the collector started, was suspended or stopped, or the
step is still filling): there the second level's records are counted while it still holds
them. A row between two rows whose collector was stopped and restarted inside it counts
whole.
"""
import numpy as np

from .retention import STEP


def per_column(conn, info, level: str, step: int, t0: int, n: int, end: int, rows: list, spans: list) -> np.ndarray:
    """int64 (n,): the collected seconds of each column [t0 + i*step, ...) before end; rows:
    (step of the records, times of the records) read for the query; spans: (t, seconds, cause)."""
    unit = STEP[level]
    have = np.zeros(n * step // unit, dtype=bool)            # per step of the level: a row holds it
    parts = [(times[(times >= t0) & (times < end)], row_step) for row_step, times in rows]
    starts = np.concatenate([t for t, _ in parts] + [np.zeros(0, np.int64)])
    widths = np.concatenate([np.full(len(t), w, np.int64) for t, w in parts] + [np.zeros(0, np.int64)])
    order = np.argsort(starts, kind="stable")
    starts, widths = starts[order], widths[order]
    counts = widths.copy()
    if unit > 1 and len(starts):
        _count_edges(conn, info, starts, widths, counts, end, spans)
    first = (starts - t0) // unit
    for i in range(int(widths.max(initial=unit)) // unit):
        have[first[widths > i * unit] + i] = True
    per_unit = np.bincount(first, weights=counts, minlength=len(have)).astype(np.int64)
    for t, k, _ in spans:                                    # steps an outage's record spans, no row
        _add_overlap(per_unit, ~have, unit, t0, max(t, t0), min(t + k, end))
    return per_unit.reshape(n, step // unit).sum(axis=1)


def _add_overlap(seconds, where, unit, t0, lo, hi):
    """Add to seconds[u] (where[u]) how many of [lo, hi) lie in step u."""
    if hi <= lo:
        return
    u = np.arange((lo - t0) // unit, (hi - 1 - t0) // unit + 1)
    u = u[u < len(seconds)]
    start = t0 + u * unit
    overlap = np.minimum(start + unit, hi) - np.maximum(start, lo)
    seconds[u] += np.where(where[u], overlap, 0)


def _count_edges(conn, info, starts, widths, counts, end, spans):
    """Replace the whole-row guess of each row at an edge of collection (no row right before
    or right after it) by its second-level records and outage seconds, where the second
    level still holds that row's seconds."""
    ends = starts + widths
    joined = ends[:-1] == starts[1:]
    edge = ~(np.r_[False, joined] & np.r_[joined, False])
    horizon = info.horizon.get("second", 0)
    for i in np.flatnonzero(edge & (starts >= horizon)):
        lo, hi = int(starts[i]), int(min(ends[i], end))
        held = conn.execute("SELECT COUNT(*) FROM records WHERE dataset = ? AND step = 1 AND t >= ? AND t < ?",
                            (info.id, lo, hi)).fetchone()[0]
        extra = sum(max(min(t + k, hi) - max(t + 1, lo), 0) for t, k, _ in spans)
        if held:   # none held (a late second kept only in the rollups): the row counts whole
            counts[i] = min(held + extra, widths[i])
