"""`--csv`: a figure model as CSV for spreadsheets and scripts.

- Heat map (rebin.Grid): one line per non-empty llhist bucket of each display column
  of the keys selected: time (unix seconds, column start), seconds (column width),
  low, high (the bucket's value range in the dataset's unit: [low, high)), count.
  These are the exact buckets, cropped ones included: the counts sum to every event.
- Graph (breakdown.Breakdown): one line per column, time, seconds, then one column
  per series key; values in the graph's unit (ops/s for counters and value ranges,
  the mean for gauges, the percentile for heat-map statistics); empty where none (a
  column nothing was collected in, as JSON's null; a collected quiet one is 0).
- Table (--table): the graph's top-N table, a line per key (heatmaps/JSON.md).
"""
import csv
import io

import numpy as np

from strata.datasets import llhist

from .rebin import column_histograms

_LOWER = llhist.lower_bounds()
_UPPER = llhist.upper_bounds()


def _number(x) -> str:
    if x is None or not np.isfinite(x):
        return ""
    x = float(x)
    return str(int(x)) if x.is_integer() else f"{x:.6g}"


def heat_map(grid, qr) -> str:
    """CSV of the exact buckets per column of grid (built from QueryResult qr)."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["time", "seconds", "low", "high", "count"])
    hist = column_histograms(qr, grid.bins, grid.keys or None)      # (ncols, m)
    buckets = np.asarray(qr.buckets, dtype=np.int64)
    for c, t in enumerate(grid.bins.starts()):
        for j in np.flatnonzero(hist[c]):
            b = int(buckets[j])
            w.writerow([int(t), grid.bins.width, int(_LOWER[b]), int(_UPPER[b]), int(hist[c, j])])
    return out.getvalue().rstrip("\n")


def graph(b) -> str:
    """CSV of the series of Breakdown b, a column per key."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(["time", "seconds", *b.keys])
    for c, t in enumerate(b.bins.starts()):
        w.writerow([int(t), b.bins.width, *(_number(b.series[k, c]) for k in range(len(b.keys)))])
    return out.getvalue().rstrip("\n")


def table(b) -> str:
    """CSV of the top-N table of Breakdown b (--csv --table): one line per series key with
    its events, rate (per collected second), share (%), peak, and p50 / pN / max for heat maps."""
    from .breakdown import to_json
    rows = to_json(b)["table"]
    head = list(dict.fromkeys(c for r in rows for c in r)) or ["key"]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(head)
    for r in rows:
        w.writerow([r.get(c) if isinstance(r.get(c), str) else _number(r.get(c)) for c in head])
    return out.getvalue().rstrip("\n")
