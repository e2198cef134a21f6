"""The ganesha demo's pictures, drawn from its archive: wire latency by client, the
file-system latency by operation and the ext4 loop device's latency (log axis, one
y-range: the page-cache band sits at the wire and fs layers only, the disk band at
all three after the drop), and wire ops/s by client. HTML and PNG files, plus the
heat maps in the terminal."""
import sys
from pathlib import Path

from strata.cli.demo.pictures import write_figures
from strata.datasets.archive import Archive
from strata.heatmaps import plot_breakdown, plot_heatmap, term_breakdown, term_heatmap, termcaps
from strata.heatmaps.breakdown import compute
from strata.heatmaps.rebin import build_grid
from strata.heatmaps.timebins import choose_bins


def _query(archive, name, start, end, max_cols):
    return archive.query(name, start, end, choose_bins(start, end, 1, max_cols).width)


def _grids(archive, start, end, facts, max_cols, ncells):
    """(wire grid, fs grid, disk grid of the export's device), all on the fs grid's
    y-range: the lowest, as page-cache hits take microseconds."""
    fs = build_grid(_query(archive, "fs.latency[op]", start, end, max_cols), start, end,
                    max_cols=max_cols, ncells=ncells, axis="log")
    same_y = dict(max_cols=max_cols, ncells=ncells, axis="log", ymin=float(fs.edges[0]), ymax=float(fs.edges[-1]))
    wire = build_grid(_query(archive, "wire.latency[client]", start, end, max_cols), start, end, **same_y)
    disk_q = _query(archive, "disk.latency[device]", start, end, max_cols)
    keys = [facts.device] if facts.device in disk_q.keys else None
    disk = build_grid(disk_q, start, end, keys=keys, **same_y)
    return wire, fs, disk


def _clients(archive, start, end, max_cols):
    qr = _query(archive, "wire.ops[client]", start, end, max_cols)
    return compute(qr, start, end, max_cols=max_cols, top=12, by="client")


def write_files(archive_path: str, facts, start: int, end: int, outdir: Path) -> list:
    """Writes NAME.html and NAME.png for each picture; returns the paths written."""
    with Archive.open(archive_path) as archive:
        wire, fs, disk = _grids(archive, start, end, facts, plot_heatmap.HTML_MAX_COLS, plot_heatmap.HTML_CELLS)
        figures = {
            "wire-latency": plot_heatmap.figure(wire),
            "fs-latency": plot_heatmap.figure(fs),
            "disk-latency": plot_heatmap.figure(disk),
            "wire-ops-by-client": plot_breakdown.figure(
                _clients(archive, start, end, plot_breakdown.BREAKDOWN_MAX_COLS), "stacked"),
        }
    return write_figures(figures, outdir)


def terminal(archive_path: str, facts, start: int, end: int, colour: str = "auto") -> str:
    """The wire, fs and disk heat maps and the by-client table, as terminal text."""
    mode = termcaps.colour_mode(sys.stdout, colour)
    width, height = termcaps.size()
    per_line = 1 if mode == "none" else 2
    max_cols, _ = term_heatmap.geometry(width, height, mode)
    ncells = max(min((height - 12) // 3, 16), 6) * per_line
    with Archive.open(archive_path) as archive:
        grids = _grids(archive, start, end, facts, max_cols, ncells)
        clients = _clients(archive, start, end, width - term_breakdown.LEFT - 1)
    parts = []
    for grid in grids:
        parts += [term_heatmap.render(grid, mode, width), ""]
    return "\n".join(parts + [term_breakdown.table(clients, mode, width)])
