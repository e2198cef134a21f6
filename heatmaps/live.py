"""One frame of `strata top`: a scrolling heat map (one column per second, newest
at the right) above a table of the busiest clients, sized to the terminal."""
import time

from . import grid_json, palette, source, term_breakdown, term_heatmap
from .breakdown import compute, to_json
from .clock import zone
from .rebin import build_grid
from .timebins import choose_bins

TABLE_ROWS = 6


def pick_datasets(archive, heat_name, clients_name) -> tuple:
    """(heat map info, its keys, clients info or None) with sensible defaults."""
    infos = {i.name: i for i in archive.datasets()}
    if heat_name is None:
        heat_name = next((n for n in ("nfs.latency", "nfs.latency[client]") if n in infos),
                         next((n for n, i in infos.items() if i.kind == "heatmap"), "nfs.latency"))
    heat, keys = source.resolve(archive, heat_name)
    if heat.kind != "heatmap":
        raise ValueError(f"{heat.name} is a {heat.kind}, not a heat-map statistic")
    if clients_name is None:
        clients_name = next((n for n in ("nfs.ops[client]", "nfs.latency[client]") if n in infos), None)
        return heat, keys, infos.get(clients_name) if clients_name else None
    clients, _ = source.resolve(archive, clients_name)
    return heat, keys, clients


def window(archive, heat, keys, clients, end: int, max_cols: int, ncells: int) -> tuple:
    """(grid, its QueryResult, clients Breakdown or None) of the max_cols seconds before end."""
    bins = choose_bins(end - max_cols, end, 1, max_cols)
    start = bins.start
    qr = source.query(archive, heat, start, end, 1)
    selected = keys if not keys or set(keys) <= set(qr.keys) else []   # [] = that key is idle
    grid = build_grid(qr, start, end, max_cols=max_cols, ncells=ncells, keys=selected,
                      bins=bins, percentiles=(99.0,))
    b = None
    if clients:
        cq = source.query(archive, clients, start, end, 1)
        b = compute(cq, start, end, max_cols=max_cols, top=TABLE_ROWS - 1, by=clients.breakdown)
    return grid, qr, b


def snapshot(archive, heat, keys, clients, now: float, seconds: int) -> dict:
    """What the live view shows at `now` as plain data (`strata top --json`): the heat map
    of the last `seconds` (grid_json) and the busiest clients (breakdown.to_json)."""
    grid, qr, b = window(archive, heat, keys, clients, int(now), seconds, grid_json.CELLS)
    return {"heatmap": grid_json.to_json(grid, qr), "clients": to_json(b) if b else None}


def frame(archive, heat, keys, clients, now: float, width: int, height: int, mode: str) -> str:
    """The whole screen as text, newest complete second at the right edge."""
    table_lines = (TABLE_ROWS + 3) if clients else 1
    map_height = max(height - table_lines - 2, 12)
    max_cols, ncells = term_heatmap.geometry(width, map_height, mode)
    grid, _, b = window(archive, heat, keys, clients, int(now), max_cols, ncells)
    out = [term_heatmap.render(grid, mode, width)]
    if clients:
        out.append(term_breakdown.table(b, mode, width) if b.keys else f"no {clients.breakdown} data yet")
    dim, reset = (palette.DIM, palette.RESET) if mode != "none" else ("", "")
    out.append(f"{dim}q quit · refreshed {time.strftime('%H:%M:%S', time.localtime(now))} {zone(now)}"
               f" · {clients.name if clients else 'no per-client dataset'}{reset}")
    return "\n".join(out)
