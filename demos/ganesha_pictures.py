"""The ganesha demo's pictures, drawn from its archive: wire latency by client, the
file-system latency by tier (its bands named: cache, disk) and the ext4 loop device's latency (log axis, one
y-range: the page-cache band sits at the wire and fs layers only, the disk band at
all three after the drop), wire ops/s by client, and where the time went (`strata show
time:fs`: the file system's own time against the disk's; `time:disk`: the disk's queue
against its device time). HTML and PNG files, plus the heat maps in the terminal."""
from pathlib import Path

from strata.demos.pictures import by_client, query, terminal_text, time_went_figure, write_figures
from strata.datasets.archive import Archive
from strata.heatmaps import plot_breakdown, plot_heatmap
from strata.heatmaps.rebin import build_grid


def _grids(archive, start, end, facts, max_cols, ncells):
    """(wire grid, fs grid, disk grid of the export's device), all on the fs grid's
    y-range: the lowest, as page-cache hits take microseconds."""
    fs = build_grid(query(archive, "fs.latency[tier]", start, end, max_cols), start, end,
                    max_cols=max_cols, ncells=ncells, axis="log")
    same_y = dict(max_cols=max_cols, ncells=ncells, axis="log", ymin=float(fs.edges[0]), ymax=float(fs.edges[-1]))
    wire = build_grid(query(archive, "wire.latency[client]", start, end, max_cols), start, end, **same_y)
    disk_q = query(archive, "disk.latency[device]", start, end, max_cols)
    keys = [facts.device] if facts.device in disk_q.keys else None
    disk = build_grid(disk_q, start, end, keys=keys, **same_y)
    return wire, fs, disk


def write_files(archive_path: str, facts, start: int, end: int, outdir: Path, png: bool = True) -> list:
    """Writes NAME.html and (png) NAME.png for each picture; returns the paths written."""
    with Archive.open(archive_path) as archive:
        wire, fs, disk = _grids(archive, start, end, facts, plot_heatmap.HTML_MAX_COLS, plot_heatmap.HTML_CELLS)
        figures = {
            "wire-latency": plot_heatmap.figure(wire),
            "fs-latency": plot_heatmap.figure(fs),
            "disk-latency": plot_heatmap.figure(disk),
            "wire-ops-by-client": plot_breakdown.figure(
                by_client(archive, "wire.ops[client]", start, end, plot_breakdown.BREAKDOWN_MAX_COLS), "stacked"),
            "time-fs": time_went_figure(archive, "fs", start, end),
            "time-disk": time_went_figure(archive, "disk", start, end),
        }
    return write_figures(figures, outdir, png)


def terminal(archive_path: str, facts, start: int, end: int, colour: str = "auto") -> str:
    """The wire, fs and disk heat maps and the by-client table, as terminal text."""
    return terminal_text(archive_path, start, end, colour,
                         lambda archive, max_cols, ncells: _grids(archive, start, end, facts, max_cols, ncells),
                         "wire.ops[client]")
