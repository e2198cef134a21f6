"""Terminal breakdown: a stacked or line graph of the per-key series (half-block
cells, one colour per key), a legend, and the top-N table (rich)."""
import io
import math

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from . import describe, halfblock, palette
from .breakdown import OTHER
from .ticks import linear_ticks, time_axis
from .units import event_noun, format_count, format_value

KEY_COLOURS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
               "#ff9da7", "#9c755f", "#86bcb6", "#d37295", "#a0cbe8"]
OTHER_COLOUR = "#7f7f7f"
PLAIN_MARKS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LABEL = 8
LEFT = LABEL + 2


def key_colour(b, i: int) -> str:
    return OTHER_COLOUR if b.keys[i] == OTHER else KEY_COLOURS[i % len(KEY_COLOURS)]


def _plain_mark(b, i: int) -> str:
    return "." if b.keys[i] == OTHER else PLAIN_MARKS[i % len(PLAIN_MARKS)]


def _format(b, v: float) -> str:
    return format_count(v) if b.metric == "rate" else format_value(v, b.unit)


def _nice_top(v: float) -> float:
    if not np.isfinite(v) or v <= 0:
        return 1.0
    k = 10 ** math.floor(math.log10(v))
    return next(c * k for c in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if c * k >= v)


def cells_stacked(b, ncells: int) -> tuple:
    """(cells, top): each cell holds the series whose stacked band covers its centre."""
    series = np.nan_to_num(b.series, nan=0.0)
    cum = np.cumsum(series, axis=0)                           # (k, ncols)
    top = _nice_top(float(cum[-1].max()) if cum.size else 0.0)
    centres = (np.arange(ncells) + 0.5) * top / ncells
    cells = np.full((ncells, b.bins.ncols), -1, dtype=np.int64)
    for c in range(b.bins.ncols):
        k = np.searchsorted(cum[:, c], centres, side="right")
        cells[:, c] = np.where(k < len(b.keys), k, -1)
    return cells, top


def cells_lines(b, ncells: int) -> tuple:
    """(cells, top): each series as a line; vertical steps join neighbouring columns.
    The top-ranked key is drawn last, so it stays visible where lines cross."""
    finite = b.series[np.isfinite(b.series)]
    top = _nice_top(float(finite.max()) if finite.size else 0.0)
    cells = np.full((ncells, b.bins.ncols), -1, dtype=np.int64)
    for k in range(len(b.keys) - 1, -1, -1):
        at = np.floor(b.series[k] / top * ncells)
        prev = None
        for c, v in enumerate(at):
            if not np.isfinite(v):
                prev = None
                continue
            v = int(min(max(v, 0), ncells - 1))
            lo, hi = (v, v) if prev is None else (min(prev, v), max(prev, v))
            cells[lo:hi + 1, c] = k
            prev = v
    return cells, top


def _y_labels(top: float, nlines: int, per_line: int, ncells: int, fmt) -> dict:
    labels = {}
    for v in sorted(linear_ticks(0.0, top, max(nlines // 3, 2)), reverse=True):
        cell = min(int(v / top * ncells), ncells - 1)
        line = (nlines * per_line - 1 - cell) // per_line
        if all(abs(line - o) >= 2 for o in labels):
            labels[line] = fmt(v)
    return labels


def _legend(b, mode: str, width: int) -> list:
    items = []
    for i, key in enumerate(b.keys):
        name = describe.other(b) if key == OTHER else f"{key}"
        if mode == "none":
            items.append((f"{_plain_mark(b, i)} {name}", len(name) + 2))
        else:
            swatch = palette.fg(palette.hex_rgb(key_colour(b, i)), mode) + "██" + palette.RESET
            items.append((f"{swatch} {name}", len(name) + 3))
    lines, line, used = [], " " * LEFT, LEFT
    for text, size in items:
        if used + size + 3 > width and used > LEFT:
            lines.append(line)
            line, used = " " * LEFT, LEFT
        line += text + "   "
        used += size + 3
    lines.append(line.rstrip())
    return lines


def graph(b, mode: str, width: int, nlines: int, style: str | None = None) -> list:
    """The graph lines: header, plot with y labels, time axis, legend (style: b.style by default)."""
    style = style or b.style
    twins = describe.same_lines(b) if style == "line" else ""
    per_line = 1 if mode == "none" else 2
    ncells = max(nlines - bool(twins), 4) * per_line
    cells, top = (cells_stacked if style == "stacked" else cells_lines)(b, ncells)
    if mode == "none":
        marks = [_plain_mark(b, i) for i in range(len(b.keys))]
        body = ["".join(" " if c < 0 else marks[c] for c in cells[r].tolist()) for r in range(ncells - 1, -1, -1)]
    else:
        body = halfblock.draw(cells, [palette.hex_rgb(key_colour(b, i)) for i in range(len(b.keys))], mode)
    labels = _y_labels(top, len(body), per_line, ncells, lambda v: _format(b, v))
    bold, reset = (palette.BOLD, palette.RESET) if mode != "none" else ("", "")
    noun = event_noun(b.statistic)
    what = {"rate": f"{noun}/s", "percentile": f"p{b.percentile:g} {describe.quantity_of(b)}",
            "mean": "mean"}[b.metric]
    head = [f"{bold}{b.name}{reset}{describe.derived(b)}{describe.by(b)}{describe.range_of(b)}  "
            f"{describe.time_range(*b.span)}",
            f"{describe.key_count(b)}{what} · {b.bins.width}s per column · {style}"
            + (f" · {format_count(b.total_events / b.seconds)} {noun}/s average"
               if b.metric != "mean" else "")] + ([twins] if twins else []) + [
            f"{what.rjust(LABEL + 1)}"]
    out = head
    for line, text in enumerate(body):
        out.append(f"{labels.get(line, '').rjust(LABEL)} {'┤' if line in labels else '│'}{text}")
    out += time_axis(b.bins, LEFT)
    out += _legend(b, mode, width)
    return out


def table(b, mode: str, width: int) -> str:
    """The top-N table as text (rich), coloured unless mode is none."""
    noun = event_noun(b.statistic)
    t = Table(box=box.SIMPLE_HEAVY, show_edge=False, pad_edge=False)
    t.add_column("", no_wrap=True)
    t.add_column(b.by or "key", overflow="fold")
    if b.metric == "mean":
        t.add_column("mean", justify="right")
        t.add_column("peak", justify="right")
    else:
        t.add_column(noun, justify="right")
        t.add_column(f"{noun}/s", justify="right")
        t.add_column("share", justify="right")
    if b.metric == "rate":
        t.add_column(f"peak {noun}/s", justify="right")
    if b.value_range:
        t.add_column(f"of its {noun}", justify="right")
    if b.metric == "percentile":
        t.add_column("p50", justify="right")
        t.add_column(f"p{b.percentile:g}", justify="right")
        t.add_column("max", justify="right")
    for i, r in enumerate(b.rows):
        swatch = f"[{key_colour(b, i)}]██[/]" if mode != "none" else _plain_mark(b, i)
        key = describe.other(b) if r.key == OTHER else r.key
        if b.metric == "mean":
            cells = [format_value(r.rate, b.unit), format_value(r.peak, b.unit)]
        else:
            cells = [f"{r.events:,}", format_count(r.rate), f"{r.share:.1f}%"]
        if b.metric == "rate":
            cells.append(format_count(r.peak) if np.isfinite(r.peak) else "-")
        if b.value_range:
            cells.append(describe.percent(r.of_key))
        if b.metric == "percentile":
            cells += [format_value(r.quantiles.get(q, float("nan")), b.unit)
                      for q in (50.0, b.percentile, 100.0)]
        t.add_row(swatch, key, *cells)
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=mode != "none", no_color=mode == "none",
                      color_system={"truecolor": "truecolor", "256": "256"}.get(mode), highlight=False)
    console.print(t)
    return buf.getvalue().rstrip("\n")
