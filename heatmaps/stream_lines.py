"""`strata stream`: one line per second per dataset and key, as `iostat 1` prints,
from a query at one-second resolution: ops/s (counters, heat maps), the p50, p99
and p99.9 of heat maps in their unit, a gauge's value. Lines are records first
(for JSON and CSV) and text second, so every format says the same."""
import datetime as dt
from dataclasses import dataclass

import numpy as np

from .rebin import percentile_of
from .units import format_count, format_value

PERCENTILES = (50.0, 99.0, 99.9)
COLUMNS = ("time", "dataset", "key", "ops_per_s", "p50", "p99", "p99.9", "value", "unit")


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
            "value": None, "unit": qr.unit}


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
        elif qr.kind == "counter":
            r["ops_per_s"] = float(np.asarray(qr.values)[k, col]) / qr.step if np.asarray(qr.values).size else 0
        else:
            v = float(np.asarray(qr.values)[k, col]) if np.asarray(qr.values).size else np.nan
            r["value"] = v if np.isfinite(v) else None
        rows.append(r)
    return rows


@dataclass(frozen=True)
class TextColumns:
    """Widths of the text lines' time and name columns, and whether VALUE (gauges) is shown."""
    dataset: int
    key: int = 16
    value: bool = True
    time: int = 25


NUMBER_WIDTH, MIN_DATASET, MIN_KEY = 8, len("DATASET"), 6


def fit(names: list, gauges: bool, total: int, utc: bool) -> TextColumns:
    """Columns for lines of at most total characters where the names allow: VALUE only when
    a dataset is a gauge, then the dataset and key columns narrowed (to MIN_DATASET and MIN_KEY at least,
    values cut with '…'); the time with its zone and the numbers are never cut."""
    numbers = 4 + gauges
    time_width = len(stamp(0, utc))
    room = total - time_width - numbers * (NUMBER_WIDTH + 1) - 2
    dataset, key = max(len(n) for n in names), 16
    while dataset + key > room and (dataset > MIN_DATASET or key > MIN_KEY):
        if (dataset >= key and dataset > MIN_DATASET) or key <= MIN_KEY:
            dataset -= 1
        else:
            key -= 1
    return TextColumns(dataset, key, gauges, time_width)


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def text_header(cols: TextColumns) -> str:
    value = f" {'VALUE':>8}" if cols.value else ""
    return (f"{'TIME':<{cols.time}} {'DATASET':<{cols.dataset}} {'KEY':<{cols.key}} {'OPS/S':>8} {'P50':>8} {'P99':>8} "
            f"{'P99.9':>8}{value}").rstrip()


def text_line(r: dict, utc: bool, cols: TextColumns) -> str:
    def v(x):
        return "-" if x is None else format_value(x, r["unit"])
    ops = "-" if r["ops_per_s"] is None else format_count(r["ops_per_s"])
    value = f" {v(r['value']):>8}" if cols.value else ""
    return (f"{stamp(r['time'], utc):<{cols.time}} {_cut(r['dataset'], cols.dataset):<{cols.dataset}} "
            f"{_cut(r['key'] or '-', cols.key):<{cols.key}} {ops:>8} "
            f"{v(r['p50']):>8} {v(r['p99']):>8} {v(r['p99.9']):>8}{value}").rstrip()
