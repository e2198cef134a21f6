"""`strata stream`: one line per second per dataset and key, as `iostat 1` prints,
from a query at one-second resolution: ops/s (counters, heat maps), the p50, p99
and p99.9 of heat maps in their unit, a gauge's value; and iostat -x's throughput
and queue columns: bytes/s of a size heat map (rMB/s, wMB/s with [op]) and the
average number of requests in a latency heat map's layer (Little's law: its events'
summed latency per second; aqu-sz from disk.queue + disk.latency), both from bucket
midpoints (within llhist's 5%). Lines are records first (for JSON and CSV) and text
second, so every format says the same."""
import datetime as dt
from dataclasses import dataclass

import numpy as np

from strata.datasets import llhist

from .rebin import percentile_of
from .units import format_count, format_value

PERCENTILES = (50.0, 99.0, 99.9)
COLUMNS = ("time", "dataset", "key", "ops_per_s", "p50", "p99", "p99.9", "value", "unit", "bytes_per_s",
           "in_flight")
_MID = llhist.midpoints()


def sums_what(qr) -> str:
    """What the summed values of heat map qr say each second: 'bytes' (a size: throughput),
    'in_flight' (a latency: requests in its layer on average), or '' (offsets, other kinds)."""
    if qr.kind != "heatmap":
        return ""
    if qr.unit == "bytes" and qr.statistic.endswith(".size"):
        return "bytes"
    return "in_flight" if qr.unit == "ns" else ""


def stamp(t: int, utc: bool) -> str:
    """The second t as ISO 8601 with its zone: 2026-11-26T19:40:01Z, or +01:00 offsets."""
    when = dt.datetime.fromtimestamp(int(t), dt.timezone.utc if utc else None).astimezone(
        dt.timezone.utc if utc else None)
    text = when.isoformat(timespec="seconds")
    return text.replace("+00:00", "Z") if utc else text


def records(qr, t_from: int, t_to: int, top: int) -> list:
    """Records of the seconds in [t_from, t_to) of QueryResult qr (step 1), each second's
    keys by events (or value) descending, at most top of them (0: all); a second without
    events gives one zero record for the whole dataset, so a quiet second still shows, and a
    second nothing was collected in (no record: before the dataset, the collector stopped)
    one with no ops (null, '-'), a gap and not zeros."""
    out = []
    present = np.asarray(qr.present, dtype=bool)
    for col, t in enumerate(np.asarray(qr.times, dtype=np.int64)):
        if not t_from <= t < t_to:
            continue
        if present.size and not present[col]:
            out.append(dict(_empty(qr), ops_per_s=None, time=int(t)))
            continue
        rows = _second(qr, col)
        rows.sort(key=lambda r: -(r["ops_per_s"] if r["ops_per_s"] is not None else r["value"] or 0))
        rows = [r for r in rows if r["ops_per_s"] or r["value"] is not None] or [_empty(qr)]
        for r in rows[:top or None]:
            out.append(dict(r, time=int(t)))
    return out


def _empty(qr) -> dict:
    kind_ops = 0 if qr.kind != "gauge" else None
    return {"dataset": qr.name, "key": "", "ops_per_s": kind_ops, "p50": None, "p99": None, "p99.9": None,
            "value": None, "unit": qr.unit, "bytes_per_s": None, "in_flight": None}


def _second(qr, col) -> list:
    rows = []
    for k, key in enumerate(qr.keys):
        r = dict(_empty(qr), key=key)
        if qr.kind == "heatmap":
            counts = np.asarray(qr.counts)[k, col] if np.asarray(qr.counts).size else np.zeros(0)
            r["ops_per_s"] = float(counts.sum()) / qr.step
            for p in PERCENTILES:
                v = percentile_of(np.asarray(qr.buckets), counts, p) if counts.size else np.nan
                r[f"p{p:g}"] = None if not np.isfinite(v) else float(v)
            summed = float(np.dot(counts, _MID[np.asarray(qr.buckets, dtype=np.int64)])) / qr.step \
                if counts.size else 0.0
            what = sums_what(qr)
            if what == "bytes":
                r["bytes_per_s"] = summed
            elif what == "in_flight":
                r["in_flight"] = summed / 1e9
        elif qr.kind == "counter":
            r["ops_per_s"] = float(np.asarray(qr.values)[k, col]) / qr.step if np.asarray(qr.values).size else 0
        else:
            v = float(np.asarray(qr.values)[k, col]) if np.asarray(qr.values).size else np.nan
            r["value"] = v if np.isfinite(v) else None
        rows.append(r)
    return rows


@dataclass(frozen=True)
class TextColumns:
    """Widths of the text lines' time and name columns, and which columns beyond OPS/S and
    the percentiles are shown: VALUE (gauges), BYTES/S (size heat maps), DEPTH (latency)."""
    dataset: int
    key: int = 16
    value: bool = True
    time: int = 25
    bytes: bool = False
    depth: bool = False


NUMBER_WIDTH, MIN_DATASET, MIN_KEY = 7, len("DATASET"), 6    # a number is at most 7 characters: 1.02MiB


def fit(names: list, gauges: bool, total: int, utc: bool, sums=()) -> TextColumns:
    """Columns for lines of at most total characters where the names allow: VALUE only when
    a dataset is a gauge, BYTES/S and DEPTH only when one sums so (sums: sums_what of each)
    and the width has room for them beside the names at their narrowest; then the dataset
    and key columns narrowed (to MIN_DATASET and MIN_KEY at least, values cut with '…');
    the time with its zone and the numbers are never cut."""
    time_width = len(stamp(0, utc))
    extra = [w for w in ("bytes", "in_flight") if w in sums]
    while True:
        numbers = 4 + gauges + len(extra)
        room = total - time_width - numbers * (NUMBER_WIDTH + 1) - 2
        if room >= MIN_DATASET + MIN_KEY or not extra:
            break
        extra.pop()
    dataset, key = max(len(n) for n in names), 16
    while dataset + key > room and (dataset > MIN_DATASET or key > MIN_KEY):
        if (dataset >= key and dataset > MIN_DATASET) or key <= MIN_KEY:
            dataset -= 1
        else:
            key -= 1
    return TextColumns(dataset, key, gauges, time_width, "bytes" in extra, "in_flight" in extra)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def _numbers(cols: TextColumns, ops, p50, p99, p999, value, bytes_s, depth) -> str:
    shown = [ops, p50, p99, p999] + [value] * cols.value + [bytes_s] * cols.bytes + [depth] * cols.depth
    return " ".join(f"{x:>{NUMBER_WIDTH}}" for x in shown)


def text_header(cols: TextColumns) -> str:
    return (f"{'TIME':<{cols.time}} {'DATASET':<{cols.dataset}} {'KEY':<{cols.key}} " +
            _numbers(cols, "OPS/S", "P50", "P99", "P99.9", "VALUE", "BYTES/S", "DEPTH")).rstrip()


def text_line(r: dict, utc: bool, cols: TextColumns) -> str:
    def v(x):
        return "-" if x is None else format_value(x, r["unit"])
    ops = "-" if r["ops_per_s"] is None else format_count(r["ops_per_s"])
    bytes_s = "-" if r["bytes_per_s"] is None else format_value(r["bytes_per_s"], "bytes")
    depth = "-" if r["in_flight"] is None else f"{r['in_flight']:.2f}"
    return (f"{stamp(r['time'], utc):<{cols.time}} {_cut(r['dataset'], cols.dataset):<{cols.dataset}} "
            f"{_cut(r['key'] or '-', cols.key):<{cols.key}} " +
            _numbers(cols, ops, v(r["p50"]), v(r["p99"]), v(r["p99.9"]), v(r["value"]), bytes_s, depth)).rstrip()
