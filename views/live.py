"""One frame of `strata top`: a scrolling heat map (one column per second, newest
at the right) above a table of the busiest clients, sized to the terminal: the names
resolved once (views/lookup.py), each frame's seconds read by their Source."""
import time

from strata.heatmaps import grid_json, palette, term_breakdown, term_heatmap
from strata.heatmaps.breakdown import compute, to_json
from strata.heatmaps.clock import zone
from strata.heatmaps.errors import ViewError
from strata.heatmaps.figures import default_axis
from strata.heatmaps.rebin import build_grid
from strata.heatmaps.timebins import choose_bins

from .lookup import resolve
from .window import query

TABLE_ROWS = 6      # table rows at most: a 24-line terminal keeps 3, so the map keeps 8 lines
MAP_LINES = 8       # map lines kept at least before the table gives up rows


def pick_datasets(archive, heat_name, clients_name) -> tuple:
    """(heat map source, its keys, clients source or None) with sensible defaults."""
    infos = {i.name: i for i in archive.datasets()}
    if heat_name is None:
        heat_name = next((n for n in ("nfs.latency", "nfs.latency[client]") if n in infos),
                         next((n for n, i in infos.items() if i.kind == "heatmap"), "nfs.latency"))
    heat, keys = resolve(archive, heat_name)
    if heat.info.kind != "heatmap":
        raise ViewError(f"{heat.wanted} is a {heat.info.kind}, not a heat-map statistic "
                        f"(its graph: strata show '{heat.wanted}')")
    if clients_name is None:
        clients_name = next((n for n in ("nfs.ops[client]", "nfs.latency[client]") if n in infos), None)
        if clients_name is None:
            return heat, keys, None
    clients, _ = resolve(archive, clients_name)
    return heat, keys, clients


def table_rows(height: int) -> int:
    """Rows of the client table on a terminal `height` lines high (MAP_LINES kept for the map)."""
    spare = height - term_heatmap.CHROME - MAP_LINES - 4   # table header, rule, footer, spacing
    return max(min(TABLE_ROWS, spare), 1)


def window(archive, heat, keys, clients, end: int, max_cols: int, ncells: int,
           nrows: int = TABLE_ROWS) -> tuple:
    """(grid, its QueryResult, clients Breakdown or None) of the max_cols seconds before end."""
    bins = choose_bins(end - max_cols, end, 1, max_cols)
    start = bins.start
    qr = query(archive, heat, start, end, 1)
    selected = keys if not keys or set(keys) <= set(qr.keys) else []   # [] = that key is idle
    grid = build_grid(qr, start, end, max_cols=max_cols, ncells=ncells, keys=selected,
                      bins=bins, percentiles=(99.0,), axis=default_axis(qr))
    b = None
    if clients:
        cq = query(archive, clients, start, end, 1)
        b = compute(cq, start, end, max_cols=max_cols, top=max(nrows - 1, 1), by=clients.wanted.breakdown)
    return grid, qr, b


def snapshot(archive, heat, keys, clients, now: float, seconds: int) -> dict:
    """What the live view shows at `now` as plain data (`strata top --json`): the heat map
    of the last `seconds` (grid_json) and the busiest clients (breakdown.to_json)."""
    grid, qr, b = window(archive, heat, keys, clients, int(now), seconds, grid_json.CELLS)
    return {"heatmap": grid_json.to_json(grid, qr), "clients": to_json(b) if b else None}


MIN_WIDTH, MIN_HEIGHT = 60, term_heatmap.CHROME + 8   # below this the map and table wrap into noise


def too_small(width: int, height: int) -> str:
    """The screen of a terminal too small to draw in, each line within width."""
    words = ["strata top:", "terminal too", "small", f"({width}x{height});", "needs at least",
             f"{MIN_WIDTH}x{MIN_HEIGHT}:", "enlarge it", "(q quits)"]
    lines = []
    for w in words:
        if lines and len(lines[-1]) + 1 + len(w) <= width:
            lines[-1] += " " + w
        else:
            lines.append(w[:width])
    return "\n".join(lines[:max(height, 1)])


def frame(archive, heat, keys, clients, now: float, width: int, height: int, mode: str) -> str:
    """The whole screen as text, newest complete second at the right edge; a terminal
    under MIN_WIDTH x MIN_HEIGHT gets too_small's lines instead."""
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        return too_small(width, height)
    nrows = table_rows(height)
    table_lines = (nrows + 3) if clients else 1
    map_height = max(height - table_lines - 1, term_heatmap.CHROME + 4)
    max_cols, ncells = term_heatmap.geometry(width, map_height, mode)
    grid, _, b = window(archive, heat, keys, clients, int(now), max_cols, ncells, nrows)
    out = [term_heatmap.render(grid, mode, width)]
    if clients:
        out.append(term_breakdown.table(b, mode, width) if b.keys else f"no {clients.wanted.breakdown} data yet")
    dim, reset = (palette.DIM, palette.RESET) if mode != "none" else ("", "")
    out.append(f"{dim}q quit · refreshed {time.strftime('%H:%M:%S', time.localtime(now))} {zone(now)}"
               f" · {clients.wanted if clients else 'no per-client dataset'}{reset}")
    return "\n".join(out)
