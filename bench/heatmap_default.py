#!/usr/bin/env python3
"""Measurement: which default y-axis shows the seed's three latency bands (DRAM 1-10 µs,
flash 128-260 µs, disk 1.9-9.7 ms) on rows of their own, on the demo's kind of data
(slow ops of 40-240 ms every 5 s) and on a run with 0.1 % slow outliers.

For each candidate (linear auto, linear cropped at p99.9 / p99, log, log cropped at
p99.9) and each output's height (terminal of 24 lines: 16 cells plain, 32 in colour;
HTML and JSON: 120), prints whether the bands are apart and the rows each band gets. The candidates are
measured against each other in the same run. Usage: .venv/bin/python bench/heatmap_default.py
(seconds long: BENCH_SMOKE=1, bench/run.sh, runs it whole)
"""
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from heatmaps_util import T0, band_rows, bands_apart, heatmap_result, seed_with_outliers   # noqa: E402
from strata.heatmaps import grid_json                                                       # noqa: E402
from strata.heatmaps.rebin import build_grid                                                # noqa: E402

SECONDS, PER_SECOND = 120, 2000
CANDIDATES = {"linear": dict(axis="linear"), "linear p99.9": dict(axis="linear", outliers=99.9),
              "linear p99": dict(axis="linear", outliers=99.0), "log": dict(axis="log"),
              "log p99.9": dict(axis="log", outliers=99.9)}
RUNS = {"demo-like (slow op every 5 s)": 0.0, "0.1 % slow outliers": 0.001}


def main():
    rng = np.random.default_rng(7)
    for run, share in RUNS.items():
        data = seed_with_outliers(rng, SECONDS, PER_SECOND, share)
        qr = heatmap_result({"": [(t, int(v), 1) for t, vs in data.items() for v in vs]}, SECONDS,
                            name="nfs.latency")
        print(f"{run}: {sum(len(v) for v in data.values()):,} ops")
        for label, kw in CANDIDATES.items():
            for cells in (16, 32, 120):
                grid = build_grid(qr, T0, T0 + SECONDS, max_cols=SECONDS, ncells=cells, **kw)
                doc = grid_json.to_json(grid, qr)
                rows = [len(r) for r in band_rows(doc)]
                print(f"  {label:13} {cells:4} cells: apart={bands_apart(doc)!s:5} rows per band {rows} "
                      f"rows {len(doc['edges']) - 1} above {doc['above']}")


if __name__ == "__main__":
    main()
