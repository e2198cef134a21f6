"""Terminal heat map: half-block cells (two rows per character), y labels with units,
a left panel with the rate per line, a time axis, a colour legend.

In colour modes each character is '▀' with the upper cell as foreground and the
lower cell as background; with no colour (NO_COLOR, pipes) one cell per line is
drawn from the density ramp " .:-=+*#%@" and percentile lines are digits.
"""
import math

import numpy as np

from . import describe, halfblock, palette
from .ticks import linear_ticks, log_ticks, time_axis
from .units import event_noun, family, format_count, format_value, quantity_name

PANEL = 7           # rate column width
LABEL = 7           # y label width
LEFT = PANEL + 1 + LABEL + 2   # "  12.3k 1.5ms ┤"
CHROME = 9          # not map: header 3-4 (title, totals, percentiles), panel header 1, axis 2, legend 1, prompt 1


def geometry(width: int, height: int, mode: str, rows: int = None) -> tuple:
    """(max display columns, display cells) for a terminal of width x height."""
    per_line = 1 if mode == "none" else 2
    ncells = rows if rows else max(height - CHROME, 4) * per_line
    return max(width - LEFT - 1, 10), max(int(ncells), 2)


def cell_of(grid, values: np.ndarray) -> np.ndarray:
    """Display cell showing each value: the cell of the row (whole buckets) holding it, so
    labels and percentile marks sit exactly where that value's data is drawn; within a row
    taller than one cell, in proportion. -1 outside the y-range or NaN."""
    values = np.asarray(values, dtype=np.float64)
    out = np.full(values.shape, -1, dtype=np.int64)
    ok = np.isfinite(values) & (values >= grid.edges[0]) & (values < grid.edges[-1])
    if not ok.any():
        return out
    v = values[ok]
    row = np.searchsorted(grid.edges, v, side="right") - 1
    first = np.searchsorted(grid.cell_row, row, side="left")
    last = np.searchsorted(grid.cell_row, row, side="right")
    lo, hi = grid.edges[row], grid.edges[row + 1]
    if grid.axis == "log":
        frac = np.log(np.maximum(v, 1e-300) / lo) / np.log(hi / lo)
    else:
        frac = (v - lo) / (hi - lo)
    out[ok] = np.minimum(first + np.floor(frac * (last - first)).astype(np.int64), last - 1)
    return out


def cell_matrix(grid, nlevels: int) -> np.ndarray:
    """(ncells, ncols) colour index per cell: -1 empty, 0..nlevels-1 count level,
    nlevels + j for percentile line j."""
    dens = grid.density[grid.cell_row, :] if grid.density.size else np.zeros((len(grid.cell_row), grid.bins.ncols))
    top = float(dens.max()) if dens.size else 0.0
    cells = palette.levels(dens, top, nlevels)
    for j, values in enumerate(grid.percentiles.values()):
        at = cell_of(grid, values)
        cols = np.flatnonzero(at >= 0)
        cells[at[cols], cols] = nlevels + j
    return cells


def _y_labels(grid, nlines: int, per_line: int) -> dict:
    """line index (from the top) -> label, for round values spread over the axis."""
    lo, hi = float(grid.cells[0]), float(grid.cells[-1])
    want = max(nlines // 4, 2)
    binary = family(grid.unit) == "bytes"
    values = log_ticks(lo, hi, want, binary) if grid.axis == "log" else linear_ticks(lo, hi, want, binary)
    padded = nlines * per_line
    labels = {}
    for v in sorted(values, reverse=True):
        cell = int(cell_of(grid, np.array([min(v, grid.edges[-1] - 1e-9)]))[0])
        if cell < 0:
            continue
        line = (padded - 1 - cell) // per_line
        if all(abs(line - other) >= 2 for other in labels):
            labels[line] = format_value(v, grid.unit)
    return labels


def _panel(grid, nlines: int, per_line: int) -> list:
    """Per line: the rate (events/s) of the rows starting in it, '┊' under a tall row, or ''."""
    ncells = len(grid.cell_row)
    padded = nlines * per_line
    first_cell = np.searchsorted(grid.cell_row, np.arange(len(grid.edges) - 1), side="left")
    line_of_row = (padded - 1 - first_cell) // per_line
    rates = np.zeros(nlines)
    np.add.at(rates, line_of_row, grid.row_counts.astype(np.float64))
    starts = set(line_of_row.tolist())
    row_total = grid.row_counts
    out = []
    for line in range(nlines):
        if rates[line] > 0:
            out.append(format_count(rates[line] / grid.seconds))
            continue
        top_cell = padded - 1 - line * per_line
        cell = min(top_cell, ncells - 1)
        covering = grid.cell_row[cell] if 0 <= cell < ncells else -1
        out.append("┊" if covering >= 0 and line not in starts and row_total[covering] > 0 else "")
    return out


def _draw_plain(cells: np.ndarray, nlevels: int) -> list:
    ramp = palette.PLAIN_RAMP
    ncells = cells.shape[0]
    out = []
    for row in range(ncells - 1, -1, -1):
        chars = []
        for c in cells[row].tolist():
            if c < 0:
                chars.append(" ")
            elif c >= nlevels:
                chars.append(palette.PLAIN_LINE_MARKS[(c - nlevels) % 9])
            else:
                chars.append(ramp[1 + c * (len(ramp) - 1) // nlevels])
        out.append("".join(chars))
    return out


def _legend(grid, mode: str, nlevels: int, top: float, width: int) -> str:
    """Colour scale (and percentile keys), shortened to fit `width` columns."""
    noun = event_noun(grid.statistic)
    live = grid.density[grid.density > 0]
    low = format_count(float(live.min())) if live.size else "0"
    keys = [(palette.PLAIN_LINE_MARKS[j] if mode == "none" else "━━", describe.percentile_label(p))
            for j, p in enumerate(grid.percentiles)]
    if top <= 0:
        return " " * LEFT + f"no {noun} to colour"
    if mode == "none":
        ramp = palette.PLAIN_RAMP
        text = f"{noun}/cell (log): '{ramp[1]}' {low} … '{ramp[-1]}' {format_count(top)}"
        text += "".join(f"  {mark}={label}" for mark, label in keys)
        indent = max(min(LEFT, width - len(text)), 0)
        return " " * indent + text
    plain = f"{noun}/cell {low}  {format_count(top)} (log)" + "".join(f"  ━━ {label}" for _, label in keys)
    indent = LEFT if LEFT + len(plain) + 24 <= width else 1
    steps = max(min(24, width - indent - len(plain)), 4)
    colours = palette.ramp(palette.TERM_STOPS, nlevels)
    bar = "".join(palette.fg(colours[min(i * nlevels // steps, nlevels - 1)], mode) + "█" for i in range(steps))
    text = f"{noun}/cell {low} {bar}{palette.RESET} {format_count(top)} (log)"
    for j, (_, label) in enumerate(keys):
        text += "  " + palette.fg(palette.hex_rgb(palette.TERM_LINE_COLOURS[j % 4]), mode) + "━━" + palette.RESET
        text += " " + label
    return " " * indent + text


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(width - 1, 0)] + "…"


def _title(name: str, derived: str, when: str, width: int, bold: str, reset: str) -> list:
    """The title line: the name (and how it is derived) and the time range with its zone;
    the name is cut to leave the range whole, and where too little of it would remain
    the range takes a line of its own."""
    room = width - len(when) - 2
    if len(name + derived) <= room:
        return [f"{bold}{name}{reset}{derived}  {when}"]
    if room >= 12:
        return [f"{bold}{_fit(name + derived, room)}{reset}  {when}"]
    return [f"{bold}{_fit(name + derived, width)}{reset}", _fit(when, width)]


def render(grid, mode: str, width: int = 200) -> str:
    """The whole heat map as text with ANSI colours (mode truecolor/256) or plain (none);
    header lines are cut to `width` (the map itself was sized by geometry())."""
    per_line = 1 if mode == "none" else 2
    ncells = len(grid.cell_row)
    nlines = math.ceil(ncells / per_line)
    nlevels = palette.NLEVELS if mode != "none" else len(palette.PLAIN_RAMP) - 1
    cells = cell_matrix(grid, nlevels)
    top = float(grid.density.max()) if grid.density.size else 0.0
    bold = palette.BOLD if mode != "none" else ""
    reset = palette.RESET if mode != "none" else ""
    dim = palette.DIM if mode != "none" else ""

    name = describe.selection(grid.name, grid.keys)
    head1 = _title(name, describe.derived(grid), describe.time_range(*grid.span), width, bold, reset)
    head2 = _fit(f"{describe.totals(grid)} · {grid.bins.width}s per column · {describe.y_range(grid)}", width)
    note = describe.cropped(grid)
    noun = event_noun(grid.statistic)
    quantity = quantity_name(grid.statistic, grid.unit)
    gaps = describe.outages(grid)
    spread = describe.whole_percentiles(grid)
    bands = describe.bands(grid)
    out = head1 + [head2] + [_fit(line, width) for line in (spread, bands, note, gaps) if line]
    out.append(f"{dim}{(noun + '/s').rjust(PANEL)} {quantity.rjust(LABEL)}{reset}")

    if mode == "none":
        body = _draw_plain(cells, nlevels)
    else:
        colours = [tuple(c) for c in palette.ramp(palette.TERM_STOPS, nlevels)]
        colours += [palette.hex_rgb(c) for c in palette.TERM_LINE_COLOURS]
        body = halfblock.draw(cells, colours, mode)
    labels = _y_labels(grid, nlines, per_line)
    panel = _panel(grid, nlines, per_line)
    for line in range(nlines):
        tick = "┤" if line in labels else "│"
        out.append(f"{panel[line].rjust(PANEL)} {labels.get(line, '').rjust(LABEL)} {tick}{body[line]}")
    out.extend(time_axis(grid.bins, LEFT))
    out.append(_legend(grid, mode, nlevels, top, width))
    return "\n".join(out)
