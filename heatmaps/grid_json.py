"""`strata heatmap --json`: a heat-map grid as plain data for scripts.

- times: start of each column (unix seconds), each `step` seconds wide;
- edges: row edges in the dataset's unit (ns, bytes); row i holds the values in
  [edges[i], edges[i+1]), a union of whole llhist buckets;
- counts: events per row and column (rows x columns) of the keys selected;
- per_key: for each breakdown key, the same grid as [row, column, count]
  triples of its non-empty cells, so 10,000 clients stay proportional to data;
- below / above: events outside the rows (cropped by --ymin, --ymax, --outliers);
- derived: how the archive answered the name ("summed from nfs.latency[op=read][client]"),
  null when it holds that dataset.
"""
import numpy as np

from .rebin import column_histograms, row_counts

MAX_COLS = 400      # columns at most, as for HTML: --last 1h gives 9 s columns
CELLS = 120         # rows at most (unions of whole buckets); --rows sets it


def _number(x):
    return None if not np.isfinite(x) else float(x)


def to_json(grid, qr) -> dict:
    """Plain data for the grid built from QueryResult qr."""
    buckets = np.asarray(qr.buckets, dtype=np.int64)
    per_key = []
    for key in grid.keys or list(qr.keys):
        hist = column_histograms(qr, grid.bins, [key])
        counts, below, above = row_counts(hist, buckets, grid.edges)
        rows, cols = np.nonzero(counts)
        per_key.append({"key": key, "events": int(hist.sum()), "below": int(hist[:, below].sum()),
                        "above": int(hist[:, above].sum()),
                        "cells": [[int(r), int(c), int(counts[r, c])] for r, c in zip(rows, cols)]})
    return {
        "dataset": grid.name, "derived": grid.derived or None, "statistic": grid.statistic, "unit": grid.unit, "axis": grid.axis,
        "keys": list(grid.keys), "start": grid.span[0], "end": grid.span[1], "step": grid.bins.width,
        "times": [int(t) for t in grid.bins.starts()],
        "edges": [int(e) for e in grid.edges],
        "counts": grid.counts.astype(np.int64).tolist(),
        "events": grid.total, "below": grid.below, "above": grid.above,
        "percentiles": {f"p{p:g}": [_number(v) for v in values] for p, values in grid.percentiles.items()},
        "per_key": per_key,
        "spans": [{"start": int(a), "end": int(b), "cause": c} for a, b, c in grid.spans],
    }
