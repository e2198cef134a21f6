"""Answering a query: choose the archive level, read its records, bin them into columns.
read_groups reads and decodes a level's records (the fast path other readers call too).

The level is the finest one whose data still reaches back to the start of the
range (nothing pruned after `start`); when a resolution is asked for, the
coarsest such level whose step divides it is read instead (same answer, far
fewer records), and records are summed into columns of `resolution` seconds
aligned to multiples of the step. At the minute level a resolution that is a
multiple of ten minutes reads the level's ten-minute records instead (and the
minutes after the last whole ten minutes before `end`: the same answer as from
minutes alone), from the first one on that holds all its minutes (an archive
written before they were stored has none, or a first one that began part way:
its minute records are read).

A second-level record that spans an outage (the spans table) is spread evenly
over the seconds it spans (heat maps and counters; a gauge's samples stay in
its first second); the result lists those spans so renderers can say so. In
minute and hour rollups such a record counts in the step holding its first
second. Each column also says how many of its seconds were collected (datasets/collected.py),
what a rate is divided by.
"""
import numpy as np

from . import codec, collected, llhist, periods, schema
from .errors import ArchiveError
from .query import QueryResult
from .retention import LEVELS, STEP, TEN_MINUTES

MAX_CELLS = 200_000_000


def choose(horizons: dict, start: int, resolution: int | None) -> tuple:
    """(level, step): the level to read and the seconds per column."""
    covering = [lv for lv in LEVELS if horizons[lv] <= start] or [LEVELS[-1]]
    level = covering[0]
    if resolution is None:
        return level, STEP[level]
    fits = [lv for lv in covering if resolution % STEP[lv] == 0]
    if fits:
        level = fits[-1]
    ls = STEP[level]
    return level, max(ls, -(-resolution // ls) * ls)


def query(conn, info, start: int, end: int, resolution: int | None = None) -> QueryResult:
    """The QueryResult (datasets/query.py) of dataset `info` over [start, end)."""
    start, end = _checked(start, end, resolution)
    level, step = choose(info.horizon, start, None if resolution is None else int(resolution))
    t0 = start - start % step
    spans = _spans(conn, info.id, t0, end)
    first = min([t0] + [t for t, _, _ in spans]) if level == "second" else t0
    ranges = [(STEP[level], first, end)]
    if level == "minute" and step % TEN_MINUTES == 0 and _ten_minutes_from(conn, info.id, t0):
        whole = end - end % TEN_MINUTES
        ranges = [(TEN_MINUTES, t0, whole), (STEP[level], whole, end)]
    ranges = [r for r in ranges if r[1] < r[2]]
    times, groups = read_ranges(conn, info, ranges)
    names = dict(conn.execute("SELECT idx, key FROM keys WHERE dataset = ?", (info.id,)).fetchall())
    return _columns(conn, info, level, step, t0, end, ranges, times, groups, spans, names)


def query_held(info, start: int, end: int, resolution: int | None, held: list, names: dict) -> QueryResult:
    """query() answered at the second level from second records held in memory (strata web's
    copy of what the collector stored: web/livefeed.py) instead of the archive: held is
    [(t, seconds, cause, record)], one per stored second, in time order, `record` encoded as
    the archive stores it (codec.py) with key indices named by `names` ({index: key}). It
    holds every record of the dataset overlapping [start, end), as the archive does."""
    start, end = _checked(start, end, resolution)
    step = 1 if resolution is None else int(resolution)
    t0 = start - start % step
    kept = [h for h in held if h[0] < end and h[0] + h[1] > t0]
    spans = [(t, k, cause) for t, k, cause, _ in kept if k > 1]
    first = min([t0] + [t for t, _, _ in spans])
    kept = [h for h in kept if h[0] >= first]
    times = np.fromiter((h[0] for h in kept), dtype=np.int64, count=len(kept))
    groups = codec.decode_groups(info.kind, [h[3] for h in kept])
    return _columns(None, info, "second", step, t0, end, [(1, first, end)], times, groups, spans, names)


def _checked(start, end, resolution) -> tuple:
    start, end = int(start), int(end)
    if end <= start:
        raise ArchiveError(f"empty time range: end {end} is not after start {start}")
    if resolution is not None and int(resolution) < 1:
        raise ArchiveError(f"resolution must be at least 1 second, not {resolution}")
    return start, end


def _columns(conn, info, level, step, t0, end, ranges, times, groups, spans, names) -> QueryResult:
    """The QueryResult of the records read (times, groups: read_ranges) of the level's `ranges`,
    binned into columns of `step` seconds from t0 to end; names: {key index: key}. conn counts
    the collected seconds of rollups at the edges of collection (none at the second level)."""
    n = -(-(end - t0) // step)
    at = times[groups.row]
    if level == "second" and spans and info.kind != "gauge":
        groups, at = _spread(groups.cells(), np.repeat(at, groups.ncells), {t: k for t, k, _ in spans}, t0, end)
    inside = (at >= t0) & (at < end)
    if not inside.all():
        groups, at = groups.select(inside), at[inside]
    col = (at - t0) // step
    present = np.zeros(n, dtype=bool)
    present[(times[times >= t0] - t0) // step] = True
    for t, k, _ in spans:
        present[max(t, t0) // step - t0 // step:-(-min(t + k, end) // step) - t0 // step] = True
    # one record per column when the level's step is the column's and no record was spread:
    # cells are then unique per (key, column, bucket) and can be placed; otherwise they are
    # summed into their column
    place = all(s == step for s, lo, hi in ranges) and not spans
    rows = [(s, times[(times >= lo) & (times < hi)]) for s, lo, hi in ranges]
    seconds = collected.per_column(conn, info, level, step, t0, n, end, rows, spans)
    shown = groups.key[groups.ncells > 0]   # a key whose group holds no cell is not shown
    used = [int(k) for k in np.flatnonzero(np.bincount(shown))] if len(shown) else []
    if any(k not in names for k in used):
        raise ArchiveError(f"dataset {info.name}: a record refers to an unknown breakdown key")
    used.sort(key=lambda k: names[k])
    keys = [names[k] for k in used] or ([""] if not info.breakdown else [])
    position = np.zeros(max(used, default=0) + 1, dtype=np.int64)
    position[used] = np.arange(len(used))
    cell = position[groups.key] * n + col  # index of (key, column), one per group

    result = QueryResult(name=info.name, statistic=info.statistic, kind=info.kind, unit=info.unit,
                         breakdown=info.breakdown or "",
                         step=step, times=t0 + step * np.arange(n, dtype=np.int64), keys=keys,
                         level=level, present=present, collected=seconds,
                         spans=[(t, t + k, cause) for t, k, cause in spans])
    if info.kind == "heatmap":
        seen = np.bincount(groups.bucket, minlength=llhist.NBUCKETS) > 0
        buckets = np.flatnonzero(seen)
        if len(keys) * n * len(buckets) > MAX_CELLS:
            raise ArchiveError("query too large: use a coarser resolution or a shorter range")
        bpos = np.cumsum(seen) - 1
        counts = np.zeros(len(keys) * n * len(buckets), dtype=np.uint64)
        index = np.repeat(cell * len(buckets), groups.ncells)
        index += bpos[groups.bucket]
        _put(counts, index, groups.count, place)
        result.buckets, result.counts = buckets.astype(np.int64), counts.reshape(len(keys), n, len(buckets))
    elif info.kind == "counter":
        values = np.zeros(len(keys) * n, dtype=np.uint64)
        _put(values, cell, groups.count, place)
        result.values = values.astype(np.int64).reshape(len(keys), n)
    else:
        samples, sums = np.zeros(len(keys) * n, dtype=np.uint64), np.zeros(len(keys) * n)
        _put(samples, cell, groups.count, place)
        _put(sums, cell, groups.total, place)
        with np.errstate(invalid="ignore", divide="ignore"):
            result.values = np.where(samples > 0, sums / samples, np.nan).reshape(len(keys), n)
    return result


def read_groups(conn, info, step: int, first: int, end: int) -> tuple:
    """(times, groups): the records of dataset `info` of step `step` (1, 60, 600, 3600) with
    first <= t < end, in time order, decoded (codec.Groups; group.row indexes times)."""
    return read_ranges(conn, info, [(step, first, end)])


def read_ranges(conn, info, ranges: list) -> tuple:
    """read_groups of each (step, first, end) in ranges (in time order), as one. A period still
    open is read as its record plus its pending seconds (datasets/periods.py)."""
    rows = [r for step, first, end in ranges for r in _records(conn, info, step, first, end)]
    times = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return times, codec.decode_groups(info.kind, [r[1] for r in rows])


def _records(conn, info, step, first, end) -> list:
    """(t, data) of the records of one step with first <= t < end, open periods rebuilt."""
    rows = conn.execute("SELECT t, data FROM records WHERE dataset = ? AND step = ? AND t >= ? AND t < ? ORDER BY t",
                        (info.id, step, first, end)).fetchall()
    if step == 1:
        return rows
    rebuilt = {t: periods.rebuild(conn, info.kind, info.id, step, t, through).encode(info.kind)
               for _, t, through in periods.pending_rows(conn, info.id, step, first, end)}
    if not rebuilt:
        return rows
    return sorted([r for r in rows if r[0] not in rebuilt] + list(rebuilt.items()))


def _ten_minutes_from(conn, dataset, t0) -> bool:
    """Whether the dataset's ten-minute records answer for [t0, ...): the first is before t0,
    or at t0 and no minute record precedes it (it was written from its first second)."""
    first_ten, first_minute = (conn.execute("SELECT MIN(t) FROM records WHERE dataset = ? AND step = ?",
                                            (dataset, s)).fetchone()[0] for s in (TEN_MINUTES, 60))
    return first_ten is not None and (first_ten < t0 or first_ten == t0 and first_minute is not None
                                      and first_minute >= first_ten)


def _spans(conn, dataset, start, end) -> list:
    """(t, seconds, cause) of the records of dataset spanning an outage that overlaps [start, end)."""
    if not schema.has_spans(conn):
        return []
    return conn.execute("SELECT t, seconds, cause FROM spans WHERE dataset = ? AND t < ? AND t + seconds > ? "
                        "ORDER BY t", (dataset, end, start)).fetchall()


def _spread(cells, at, seconds, start, end):
    """Each count of a record spanning k seconds spread evenly over them (the first c % k
    seconds one more), kept only for the seconds inside [start, end): a window holding the
    whole outage has every event, a window over part of it a share."""
    k = np.array([seconds.get(int(t), 1) for t in at], dtype=np.int64)
    if not (k > 1).any():
        return codec.Groups.of_cells(cells), at
    lo = np.maximum(at, start) - at                 # first and last offset kept inside the range
    hi = np.minimum(at + k, end) - at
    span = k > 1
    one = ~span
    idx = np.flatnonzero(span)
    reps = np.maximum(hi[idx] - lo[idx], 0)
    src = np.repeat(idx, reps)
    offset = lo[src] + (np.arange(len(src)) - np.repeat(np.cumsum(reps) - reps, reps))
    kk = k[src].astype(np.uint64)
    count = cells.count[src] // kk + (offset.astype(np.uint64) < cells.count[src] % kk)
    pick = np.concatenate([np.flatnonzero(one), src])
    out = codec.Cells(cells.row[pick], cells.key[pick], cells.bucket[pick],
                      np.concatenate([cells.count[one], count]).astype(np.uint64), cells.total[pick])
    return codec.Groups.of_cells(out), np.concatenate([at[one], at[src] + offset])


def _put(out, index, values, place):
    if place:
        out[index] = values
    else:
        np.add.at(out, index, values)
