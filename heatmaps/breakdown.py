"""Breakdowns: one series per breakdown key over time, the top N keys plus "other".

Counters give events per collected second; heat-map statistics give a chosen percentile
per key (and their event rates for ranking); gauges give their mean. Keys are
ranked by events over the range (gauges: by mean value); every key past the
top N is folded into one "other" series, so 10,000 clients stay readable.

A column in which no second was collected (no record: before the dataset, the collector
stopped) is NaN in every series, a gap and not zeros, as `strata stream` prints it; a
collected quiet second is 0. A rate is events per collected second: a column (and the
range) of which only part was collected (the collector started, was suspended or stopped
inside it, or it is still filling) is divided by its collected seconds, not its width.

A heat-map statistic with a value range (drill-down: "which clients made the
ops slower than 10 ms?") gives, per key, the events whose value lies in the
range, per second, and each key's share of its own events that fell there.
"""
from dataclasses import dataclass, field, replace

import numpy as np

from .rebin import percentile_of, select_keys
from .timebins import TimeBins, choose_bins, collected_seconds, rate_seconds, sum_columns

OTHER = "other"
ALL = "all"          # the one series of a dataset without a breakdown


@dataclass
class Row:
    key: str
    events: int             # events over the range (0 for gauges)
    rate: float             # events per collected second over the range (mean value for gauges)
    share: float            # percent of all events (of the sum of means for gauges)
    peak: float             # highest column value of the series
    quantiles: dict = field(default_factory=dict)   # heat maps: {50: v, P: v, 100: v}
    of_key: float | None = None   # with a value range: percent of the key's events inside it


@dataclass
class Breakdown:
    name: str
    statistic: str
    kind: str
    unit: str               # unit of the series values: "ops/s" for rates, else the dataset unit
    by: str
    bins: TimeBins
    span: tuple
    metric: str             # "rate" | "percentile" | "mean"
    percentile: float
    keys: list              # series order: top keys by rank, then OTHER if any was folded
    series: np.ndarray      # (len(keys), ncols) float64; NaN where a key has no events or
                            # nothing was collected
    rows: list              # Row per series key, same order
    folded: int             # how many keys went into OTHER
    total_keys: int
    total_events: int
    value_range: object = None   # value_range.ValueRange the events were selected by, if any
    style: str = "stacked"       # stacked | line: how renderers draw the series
    derived: str = ""            # how the archive answered the name (QueryResult.derived)
    collected: int | None = None  # seconds collected in the columns (None: the reader does not say)

    @property
    def seconds(self) -> int:
        return rate_seconds(self.collected, self.span)


def _ranked(weights: np.ndarray, top: int) -> tuple:
    order = np.argsort(-weights, kind="stable")
    return order[:top], order[top:]


def _counter(qr, bins, top, keys):
    idx = select_keys(qr, keys)
    values = np.asarray(qr.values, dtype=np.int64)[idx]
    cols = sum_columns(values, qr.times, bins, axis=1).astype(np.float64)   # (K, ncols)
    totals = cols.sum(axis=1)
    head, tail = _ranked(totals, top)
    names = [qr.keys[i] for i in idx[head]]
    series = cols[head]
    if len(tail):
        names.append(OTHER)
        series = np.vstack([series, cols[tail].sum(axis=0)])
    events = series.sum(axis=1)
    return names, series, events, len(tail), None


def _heatmap(qr, bins, top, keys, p):
    idx = select_keys(qr, keys)
    counts = np.asarray(qr.counts)
    m = len(qr.buckets)
    if counts.size == 0 or m == 0:
        return [], np.zeros((0, bins.ncols)), np.zeros(0), 0, []
    per_key = counts[idx].sum(axis=(1, 2), dtype=np.uint64).astype(np.float64)
    head, tail = _ranked(per_key, top)
    hists = [sum_columns(counts[i], qr.times, bins, axis=0) for i in idx[head]]   # (ncols, m) each
    names = [qr.keys[i] for i in idx[head]]
    if len(tail):
        rest = counts[idx[tail]].sum(axis=0, dtype=np.uint64)
        hists.append(sum_columns(rest, qr.times, bins, axis=0))
        names.append(OTHER)
    buckets = np.asarray(qr.buckets, dtype=np.int64)
    series = np.array([percentile_of(buckets, h, p) for h in hists]).reshape(len(hists), bins.ncols)
    events = np.array([float(h.sum()) for h in hists])
    quantiles = []
    for h in hists:
        whole = h.sum(axis=0)
        quantiles.append({q: float(percentile_of(buckets, whole, q)) for q in (50.0, float(p), 100.0)})
    return names, series, events, len(tail), quantiles


def in_range(qr, value_range):
    """The events of a heat-map QueryResult whose value lies in value_range, per key and
    column, as a counter QueryResult (value_range.ValueRange snaps to whole buckets)."""
    counts = np.asarray(qr.counts)
    if counts.size == 0 or len(qr.buckets) == 0:
        values = np.zeros((len(qr.keys), len(qr.times)), np.int64)
    else:
        values = counts[:, :, value_range.buckets(qr.buckets)].sum(axis=2, dtype=np.uint64).astype(np.int64)
    return replace(qr, kind="counter", unit="ops", buckets=np.zeros(0, np.int64),
                   counts=np.zeros((0, 0, 0), np.uint64), values=values)


def _key_shares(qr, keys, names, events) -> list:
    """Percent of each series key's events (all values) that the in-range events are."""
    counts = np.asarray(qr.counts)
    idx = select_keys(qr, keys)
    totals = (counts[idx].sum(axis=(1, 2), dtype=np.uint64) if counts.size else np.zeros(len(idx), np.uint64))
    by_key = {qr.keys[i]: int(t) for i, t in zip(idx, totals)}
    named = sum(by_key.get(k, 0) for k in names if k != OTHER)
    whole = [by_key[k] if k != OTHER else int(totals.sum()) - named for k in names]
    return [100.0 * e / w if w else None for e, w in zip(events, whole)]


def _gauge(qr, bins, top, keys):
    idx = select_keys(qr, keys)
    values = np.asarray(qr.values, dtype=np.float64)[idx]
    have = np.isfinite(values)
    sums = sum_columns(np.where(have, values, 0.0), qr.times, bins, axis=1)
    samples = sum_columns(have.astype(np.int64), qr.times, bins, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        cols = np.where(samples > 0, sums / np.maximum(samples, 1), np.nan)
        means = np.where(have.any(axis=1), np.nansum(values, axis=1) / np.maximum(have.sum(axis=1), 1), 0.0)
    head, tail = _ranked(means, top)
    names = [qr.keys[i] for i in idx[head]]
    series = cols[head]
    if len(tail):
        names.append(OTHER)
        series = np.vstack([series, np.nansum(cols[tail], axis=0)])
    return names, series, np.zeros(len(names)), len(tail), None


def _not_collected(qr, bins: TimeBins):
    """Per display column, whether none of its seconds was collected; None when the reader
    does not say (qr.present empty)."""
    present = np.asarray(qr.present, dtype=bool)
    if not present.size:
        return None
    return sum_columns(present.astype(np.int64), qr.times, bins, axis=0) == 0


def _time_mean(values: np.ndarray, collected) -> float:
    """Mean of a series over the seconds collected in its columns (every column alike when
    the reader does not say); 0.0 when it has no value."""
    have = np.isfinite(values)
    weights = np.where(have, collected if collected is not None else 1, 0).astype(np.float64)
    if not weights.sum():
        return float(np.nanmean(values)) if have.any() else 0.0
    return float(np.sum(np.where(have, values, 0.0) * weights) / weights.sum())


def compute(qr, start: int, end: int, *, max_cols: int, top: int = 8, percentile: float = 99.0,
            keys=None, by: str = "", bins: TimeBins = None, value_range=None) -> Breakdown:
    """The breakdown of a QueryResult over [start, end) in at most max_cols columns; of a
    heat map's events in value_range (value_range.ValueRange) when one is given."""
    bins = bins or choose_bins(start, end, qr.step, max_cols)
    top = int(top) if int(top) > 0 else max(len(qr.keys), 1)   # 0: every key
    quantiles = None
    if value_range is not None:
        if qr.kind != "heatmap":
            raise ValueError(f"{qr.name} is a {qr.kind}: a value range needs a heat-map statistic")
        whole, qr = qr, in_range(qr, value_range)
    if qr.kind == "counter":
        names, series, events, folded, _ = _counter(qr, bins, top, keys)
        metric, unit = "rate", "ops/s"
    elif qr.kind == "heatmap":
        names, series, events, folded, quantiles = _heatmap(qr, bins, top, keys, percentile)
        metric, unit = "percentile", qr.unit
    else:
        names, series, events, folded, _ = _gauge(qr, bins, top, keys)
        metric, unit = "mean", qr.unit
    collected = collected_seconds(qr, bins)
    if metric == "rate":
        per = collected if collected is not None else np.full(bins.ncols, bins.width)
        series = np.where(per > 0, series / np.maximum(per, 1), np.nan)
    gaps = _not_collected(qr, bins)
    if gaps is not None:
        series = np.asarray(series, dtype=np.float64)
        series[:, gaps] = np.nan
    total_collected = int(collected.sum()) if collected is not None else None
    span = qr.counted_span(start, end)
    seconds = rate_seconds(total_collected, span)
    total_events = int(events.sum()) if len(events) else 0
    rows = []
    means = [_time_mean(s, collected) for s in series]
    for i, key in enumerate(names):
        finite = series[i][np.isfinite(series[i])]
        peak = float(finite.max()) if finite.size else float("nan")
        if metric == "mean":
            rows.append(Row(key, 0, means[i], 100.0 * means[i] / sum(means) if sum(means) else 0.0, peak))
        else:
            rows.append(Row(key, int(events[i]), events[i] / seconds,
                            100.0 * events[i] / total_events if total_events else 0.0, peak,
                            quantiles[i] if quantiles else {}))
    if value_range is not None:
        for row, share in zip(rows, _key_shares(whole, keys, names, events)):
            row.of_key = share
    names = [k or ALL for k in names]
    for row in rows:
        row.key = row.key or ALL
    return Breakdown(name=qr.name, statistic=qr.statistic, kind="heatmap" if value_range else qr.kind,
                     unit=unit, by=by, bins=bins, span=span, metric=metric,
                     percentile=float(percentile), keys=names, series=series.reshape(len(names), bins.ncols),
                     rows=rows, folded=folded, total_keys=len(qr.keys) if keys is None else len(keys),
                     total_events=total_events, value_range=value_range, derived=qr.derived,
                     collected=total_collected)


def to_json(b: Breakdown) -> dict:
    """Plain data for --json: times, one series per key, the table; derived says how the
    archive answered the name ('summed from nfs.ops[client]'), null when it holds it."""
    def num(x):
        return None if x is None or not np.isfinite(x) else (int(x) if float(x).is_integer() else float(x))
    return {
        "dataset": b.name, "derived": b.derived or None, "by": b.by, "kind": b.kind, "metric": b.metric,
        "style": b.style,
        "range": b.value_range.to_json() if b.value_range else None,
        "percentile": b.percentile if b.metric == "percentile" else None, "unit": b.unit,
        "start": b.span[0], "end": b.span[1], "step": b.bins.width,
        "times": [int(t) for t in b.bins.starts()],
        "series": [{"key": k, "values": [num(v) for v in b.series[i]]} for i, k in enumerate(b.keys)],
        "table": [{"key": r.key, "events": r.events, "rate": num(r.rate), "share": num(r.share),
                   "peak": num(r.peak), **({"of_key": num(r.of_key)} if b.value_range else {}),
                   **({"p50": num(r.quantiles.get(50.0)),
                                            f"p{b.percentile:g}": num(r.quantiles.get(b.percentile)),
                                            "max": num(r.quantiles.get(100.0))} if r.quantiles else {})}
                  for r in b.rows],
        "keys": b.total_keys, "folded_into_other": b.folded, "events": b.total_events,
    }
