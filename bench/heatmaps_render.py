#!/usr/bin/env python3
"""Benchmark: render 24 h of per-second data (86,400 seconds, 50 client keys) to the
terminal and to HTML, archive query included; HTML file size.

The peer, measured in the same run, is the naive path: the same 24 h read at
per-second resolution (86,400 columns) from a dataset without breakdown, then
re-binned — what rendering would cost without asking the archive for columns of
the output's width (its minute rollups).

The archive is written once through the datasets API (about 8 minutes) and kept
in $STRATA_BENCH_CACHE (default /tmp/strata-bench-heatmaps.db) for later runs.
Usage: .venv/bin/python bench/heatmaps_render.py   (BENCH_SMOKE=1: 2 minutes, uncached, once; bench/run.sh)
"""
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from heatmaps_util import T0, build_archive, histogram, seed_latencies   # noqa: E402
from strata.datasets.archive import Archive                                # noqa: E402
from strata.heatmaps import export, plot_heatmap, term_heatmap             # noqa: E402
from strata.heatmaps.rebin import build_grid                               # noqa: E402
from strata.heatmaps.timebins import choose_bins                           # noqa: E402

SMOKE = os.environ.get("BENCH_SMOKE") == "1"   # smoke mode (bench/run.sh): 2 minutes, not cached, once
SPAN = 120 if SMOKE else 86_400
KEYS = [f"10.0.{i // 256}.{i % 256}" for i in range(50)]
CACHE = Path(tempfile.mkdtemp(prefix="strata-bench-smoke-"), "span.db") if SMOKE else \
    Path(os.environ.get("STRATA_BENCH_CACHE", "/tmp/strata-bench-heatmaps.db"))


def ensure_archive() -> float:
    """Build the 24 h archive unless cached; returns the build time (0 when cached)."""
    if CACHE.exists():
        return 0.0
    rng = np.random.default_rng(1)
    pool = [{k: histogram(seed_latencies(rng, 40)) for k in KEYS} for _ in range(32)]
    total = [{"": histogram(seed_latencies(rng, 2000))} for _ in range(32)]
    tmp = CACHE.with_suffix(".tmp")
    for p in tmp.parent.glob(tmp.name + "*"):
        p.unlink()
    t = time.perf_counter()
    build_archive(tmp, {"nfs.latency[client]": lambda s: pool[(s * 7) % 32],
                        "nfs.latency": lambda s: total[(s * 7) % 32]}, start=T0, seconds=SPAN)
    elapsed = time.perf_counter() - t
    with Archive.open(str(tmp), readonly=False) as a:       # fold the WAL in: one self-contained file
        a.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    tmp.rename(CACHE)
    return elapsed


QUERY = {}   # last archive query time per call kind, to split the total


def render_term(name, width=200, height=50, resolution=True):
    with Archive.open(str(CACHE), readonly=True) as a:
        info = a.dataset(name)
        max_cols, ncells = term_heatmap.geometry(width, height, "truecolor")
        res = choose_bins(T0, T0 + SPAN, 1, max_cols).width if resolution else None
        t = time.perf_counter()
        qr = a.query(info.name, T0, T0 + SPAN, res)
        QUERY["term"] = time.perf_counter() - t
        grid = build_grid(qr, T0, T0 + SPAN, max_cols=max_cols, ncells=ncells, percentiles=(50, 99))
        return term_heatmap.render(grid, "truecolor", width)


def render_html(name, path):
    with Archive.open(str(CACHE), readonly=True) as a:
        info = a.dataset(name)
        res = choose_bins(T0, T0 + SPAN, 1, plot_heatmap.HTML_MAX_COLS).width
        t = time.perf_counter()
        qr = a.query(info.name, T0, T0 + SPAN, res)
        QUERY["html"] = time.perf_counter() - t
        grid = build_grid(qr, T0, T0 + SPAN, max_cols=plot_heatmap.HTML_MAX_COLS,
                          ncells=plot_heatmap.HTML_CELLS, percentiles=(50, 99))
        export.write_html(plot_heatmap.figure(grid), path)


def timed(fn, *args, repeat=1 if SMOKE else 3):
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t)
    return best


def main():
    built = ensure_archive()
    if built:
        print(f"built the 24 h x 50 keys archive in {built:.0f} s ({CACHE}, {CACHE.stat().st_size / 1e6:.1f} MB)")
    render_term("nfs.latency[client]")                      # warm imports and the page cache
    term = timed(render_term, "nfs.latency[client]")
    term_query = QUERY["term"]
    with tempfile.TemporaryDirectory() as d:
        html_path = os.path.join(d, "day.html")
        html = timed(render_html, "nfs.latency[client]", html_path)
        size = os.path.getsize(html_path)
    html_query = QUERY["html"]
    naive = timed(render_term, "nfs.latency", 200, 50, False, repeat=1)
    rolled = timed(render_term, "nfs.latency")
    print("heatmaps: 24 h of per-second data, 50 keys (86,400 s), 200x50 terminal, best of 3")
    print(f"  terminal render incl. query : {term * 1000:7.0f} ms   (goal < 1000 ms); "
          f"archive query {term_query * 1000:.0f} ms, re-bin + render {(term - term_query) * 1000:.0f} ms")
    print(f"  HTML render incl. query     : {html * 1000:7.0f} ms   (goal < 1000 ms); "
          f"archive query {html_query * 1000:.0f} ms, re-bin + figure + write {(html - html_query) * 1000:.0f} ms")
    print(f"  HTML file size              : {size / 1e6:.2f} MB (plotly.js inline is ~4.7 MB of it)")
    print(f"  peer, per-second read (no breakdown, 86,400 columns): {naive * 1000:.0f} ms"
          f" vs {rolled * 1000:.0f} ms with output-width columns: {naive / rolled:.1f}x slower")
    if SMOKE:
        shutil.rmtree(CACHE.parent)


if __name__ == "__main__":
    main()
