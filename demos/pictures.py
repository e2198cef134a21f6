"""The demo's pictures, drawn from its archive with the heatmaps renderers: NFS, vdev
and disk latency heat maps (same y-range, so the DRAM band shows at the NFS layer
only, and the modelled disk band at the vdev layer but not at the block layer of
the loop devices below it), NFS and disk also on a log axis, NFS ops/s by client, and the cache
sizes over time, and where the disk's time went (`strata show time:disk`: the pool's
requests queued against at the device). HTML and PNG files, plus the heat maps in the terminal.
"""
import datetime as dt
import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from strata.datasets.archive import Archive
from strata.heatmaps import clock, export, plot_breakdown, plot_heatmap, term_breakdown, term_heatmap, termcaps
from strata.heatmaps.breakdown import compute
from strata.heatmaps.rebin import build_grid
from strata.heatmaps.timebins import choose_bins
from strata.views import lookup, window
from strata.views import time_went as time_went_read

CROP = 99.5          # outliers above this percentile are cut off the linear maps' y-range
GAUGES = ("arc.size", "l2arc.size")


def query(archive, name, start, end, max_cols=None):
    """name over [start, end) read as every command reads it (views/), in bins wide enough
    for max_cols columns (the finest level's without)."""
    resolution = choose_bins(start, end, 1, max_cols).width if max_cols else None
    return window.query(archive, lookup.resolve(archive, name)[0], start, end, resolution)


def _grids(archive, start, end, facts, max_cols, ncells, axis):
    """(NFS grid, vdev grid, disk grid of the engine's devices), the last two on the NFS
    grid's y-range."""
    nfs_q = query(archive, "nfs.latency[tier]", start, end, max_cols)
    nfs = build_grid(nfs_q, start, end, max_cols=max_cols, ncells=ncells, axis=axis,
                     outliers=CROP if axis == "linear" else None)
    same_y = dict(max_cols=max_cols, ncells=ncells, axis=axis, ymax=float(nfs.edges[-1]),
                  ymin=float(nfs.edges[0]) if axis == "log" else None)
    vdev = build_grid(query(archive, "vdev.latency[vdev]", start, end, max_cols), start, end, **same_y)
    disk_q = query(archive, "disk.latency[device]", start, end, max_cols)
    devices = [d for d in facts.pool_devices + [facts.cache_device] if d in disk_q.keys]
    disk = build_grid(disk_q, start, end, keys=devices or None, **same_y)
    return nfs, vdev, disk


def by_client(archive, name, start, end, max_cols):
    """The ops dataset name broken down by client, the 12 busiest."""
    return compute(query(archive, name, start, end, max_cols), start, end, max_cols=max_cols, top=12, by="client")


def time_went_figure(archive, family: str, start: int, end: int) -> go.Figure:
    """Where each op's time went, `strata show time:FAMILY` as a figure (heatmaps/time_went.py)."""
    bins, results = time_went_read.read(archive, family, start, end, plot_breakdown.BREAKDOWN_MAX_COLS)
    return plot_breakdown.figure(time_went_read.build(family, bins, results).mean)


def _cache_figure(archive, start, end) -> go.Figure:
    fig = go.Figure()
    for name, colour in zip(GAUGES, ("#4e79a7", "#e15759")):
        qr = query(archive, name, start, end)
        values = qr.values[0] if qr.values.size else np.full(len(qr.times), np.nan)
        label = name if np.isfinite(values).any() else f"{name} (no data: no L2ARC)"
        fig.add_trace(go.Scatter(x=[dt.datetime.fromtimestamp(int(t)) for t in qr.times], y=values / 2**20,
                                 name=label, mode="lines", line=dict(color=colour, width=2, shape="hv"),
                                 connectgaps=False))
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(template="plotly_white", font=dict(family="DejaVu Sans, Arial, sans-serif", size=13),
                      title=dict(text="<b>cache sizes</b>: ARC (DRAM) and L2ARC (flash) over time", x=0.01),
                      yaxis_title="MiB", xaxis_title=f"time ({clock.zone()})",
                      legend=dict(orientation="h", y=1.02, x=1, xanchor="right", yanchor="bottom"))
    return fig


def write_files(archive_path: str, facts, start: int, end: int, outdir: Path, png: bool = True) -> list:
    """Writes NAME.html and (png) NAME.png for each picture; returns the paths written."""
    with Archive.open(archive_path) as archive:
        size = (plot_heatmap.HTML_MAX_COLS, plot_heatmap.HTML_CELLS)
        nfs, vdev, disk = _grids(archive, start, end, facts, *size, "linear")
        nfs_log, _, disk_log = _grids(archive, start, end, facts, *size, "log")
        figures = {
            "nfs-latency": plot_heatmap.figure(nfs),
            "vdev-latency": plot_heatmap.figure(vdev),
            "disk-latency": plot_heatmap.figure(disk),
            "nfs-latency-log": plot_heatmap.figure(nfs_log),
            "disk-latency-log": plot_heatmap.figure(disk_log),
            "nfs-ops-by-client": plot_breakdown.figure(
                by_client(archive, "nfs.ops[client]", start, end, plot_breakdown.BREAKDOWN_MAX_COLS), "stacked"),
            "cache-sizes": _cache_figure(archive, start, end),
            "time-disk": time_went_figure(archive, "disk", start, end),
        }
    return write_figures(figures, outdir, png)


def write_figures(figures: dict, outdir: Path, png: bool = True) -> list:
    """STEM.html and (png) STEM.png in outdir for each {stem: figure}; returns the paths written."""
    written = []
    for stem, fig in figures.items():
        path = outdir / f"{stem}.html"
        export.write_html(fig, str(path))
        written.append(path)
    if not png:
        return written
    pngs = [outdir / f"{stem}.png" for stem in figures]
    for fig, path in zip(figures.values(), pngs):   # one Chromium for all (heatmaps/export.py)
        export.write_image(fig, str(path), "png")
    return written + pngs


def terminal_text(archive_path: str, start: int, end: int, colour: str, grids, ops: str) -> str:
    """The heat maps grids(archive, max_cols, ncells) returns, sized for this terminal,
    then the table of the ops dataset by client, as terminal text."""
    mode = termcaps.colour_mode(sys.stdout, colour)
    width, height = termcaps.size()
    per_line = 1 if mode == "none" else 2
    max_cols, _ = term_heatmap.geometry(width, height, mode)
    ncells = max(min((height - 12) // 3, 16), 6) * per_line
    with Archive.open(archive_path) as archive:
        maps = grids(archive, max_cols, ncells)
        clients = by_client(archive, ops, start, end, width - term_breakdown.LEFT - 1)
    parts = []
    for grid in maps:
        parts += [term_heatmap.render(grid, mode, width), ""]
    return "\n".join(parts + [term_breakdown.table(clients, mode, width)])


def terminal(archive_path: str, facts, start: int, end: int, colour: str = "auto") -> str:
    """The NFS, vdev and disk heat maps (log axis: a terminal has few rows) and the
    by-client table, as terminal text."""
    return terminal_text(archive_path, start, end, colour,
                         lambda archive, max_cols, ncells: _grids(archive, start, end, facts, max_cols, ncells, "log"),
                         "nfs.ops[client]")
