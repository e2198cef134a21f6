"""The nfsd demo's pictures, drawn from its archive: nfsd's latency, its reads of the
files under it (nfsd.io.latency) and the ext4 loop device's latency (log axis, one
y-range: the page-cache band sits at the nfsd layers only, the disk band at all three
after the drop), nfsd ops/s by client, and where each request's time went (`strata show
time:nfsd`: network, the wait for a thread, nfsd's service, its file reads, the disk).
HTML and PNG files, plus the heat maps in the terminal."""
from pathlib import Path

from strata.demos.pictures import by_client, query, terminal_text, time_went_figure, write_figures
from strata.datasets.archive import Archive
from strata.heatmaps import plot_breakdown, plot_heatmap
from strata.heatmaps.rebin import build_grid


def _grids(archive, start, end, facts, max_cols, ncells):
    """(nfsd grid, nfsd I/O grid, disk grid of the export's device), all on the nfsd I/O
    grid's y-range: the lowest, as page-cache reads take microseconds."""
    io = build_grid(query(archive, "nfsd.io.latency[op]", start, end, max_cols), start, end,
                    max_cols=max_cols, ncells=ncells, axis="log")
    same_y = dict(max_cols=max_cols, ncells=ncells, axis="log", ymin=float(io.edges[0]), ymax=float(io.edges[-1]))
    nfsd = build_grid(query(archive, "nfsd.latency[client]", start, end, max_cols), start, end, **same_y)
    disk_q = query(archive, "disk.latency[device]", start, end, max_cols)
    keys = [facts.device] if facts.device in disk_q.keys else None
    return nfsd, io, build_grid(disk_q, start, end, keys=keys, **same_y)


def write_files(archive_path: str, facts, start: int, end: int, outdir: Path, png: bool = True) -> list:
    """Writes NAME.html and (png) NAME.png for each picture; returns the paths written."""
    with Archive.open(archive_path) as archive:
        nfsd, io, disk = _grids(archive, start, end, facts, plot_heatmap.HTML_MAX_COLS, plot_heatmap.HTML_CELLS)
        figures = {
            "nfsd-latency": plot_heatmap.figure(nfsd),
            "nfsd-io-latency": plot_heatmap.figure(io),
            "disk-latency": plot_heatmap.figure(disk),
            "nfsd-ops-by-client": plot_breakdown.figure(
                by_client(archive, "nfsd.ops[client]", start, end, plot_breakdown.BREAKDOWN_MAX_COLS), "stacked"),
            "time-nfsd": time_went_figure(archive, "nfsd", start, end),
        }
    return write_figures(figures, outdir, png)


def terminal(archive_path: str, facts, start: int, end: int, colour: str = "auto") -> str:
    """The nfsd, nfsd I/O and disk heat maps and the by-client table, as terminal text."""
    return terminal_text(archive_path, start, end, colour,
                         lambda archive, max_cols, ncells: _grids(archive, start, end, facts, max_cols, ncells),
                         "nfsd.ops[client]")
