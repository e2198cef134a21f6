"""`strata heatmap --json`: a heat-map grid as plain data for scripts; the fields
are documented in heatmaps/JSON.md (strata.heatmap)."""
import numpy as np

from strata.datasets import llhist

from .rebin import column_histograms, row_counts

MAX_COLS = 400      # columns at most, as for HTML: --last 1h gives 9 s columns
CELLS = 120         # rows at most (unions of whole buckets); --rows sets it


def _number(x):
    return None if not np.isfinite(x) else float(x)


def raw_buckets(grid, qr) -> dict:
    """The llhist buckets of each column of the selected keys: the bucket table once
    (index, lower and upper value) and per column its non-empty [bucket, count] pairs."""
    hist = column_histograms(qr, grid.bins, grid.keys or None)
    used = np.nonzero(hist.sum(axis=0))[0]
    buckets = [int(qr.buckets[i]) for i in used]
    return {"buckets": [{"bucket": b, "lo": llhist.lower(b), "hi": llhist.upper(b)} for b in buckets],
            "columns": [[[buckets[j], int(hist[c, i])] for j, i in enumerate(used) if hist[c, i]]
                        for c in range(hist.shape[0])]}


def to_json(grid, qr, raw: bool = False) -> dict:
    """Plain data for the grid built from QueryResult qr (the raw buckets too if raw)."""
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
        **({"raw": raw_buckets(grid, qr)} if raw else {}),
    }
