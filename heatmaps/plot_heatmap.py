"""Plotly heat map: rows drawn at their true bucket edges, colour = log count per
cell height, hover with time, bucket range and count; a left panel with the
rate per row over the range (the appliance's left panel) and percentile lines.

Given a drill-down command, the hover also shows that command with `--range
LO..HI` set to the cell's row: pasted into a shell, it breaks the band down by
client (op, file...). The edges are written so that they parse back exactly.
"""
import datetime as dt
import functools

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from . import clock, describe, palette
from .export import IMAGE_SIZE
from .ticks import linear_ticks, log_ticks
from .units import event_noun, family, format_count, format_value, quantity_name

HTML_MAX_COLS = 400
HTML_CELLS = 120
SPACING = 0.008   # between the side panel and the map, a share of the width
PANEL_CLEAR = 0.4   # the side panel labels no rate nearer its zero (the map's edge) than this share of its axis
HALO = "1px 1px 2px white, -1px -1px 2px white, 1px -1px 2px white, -1px 1px 2px white"   # tier band names legible on dark cells


def display_scale(top: float, unit: str) -> tuple:
    """(divisor, unit label) so that values up to `top` read naturally: ms, µs, KiB, GiB..."""
    fam = family(unit)
    if fam == "time":
        for scale, name in ((1e9, "s"), (1e6, "ms"), (1e3, "µs")):
            if top >= 2 * scale:
                return scale, name
        return 1.0, "ns"
    if fam == "bytes":
        for scale, name in ((1024.0 ** 6, "EiB"), (1024.0 ** 5, "PiB"), (1024.0 ** 4, "TiB"), (1024.0 ** 3, "GiB"),
                            (1024.0 ** 2, "MiB"), (1024.0, "KiB")):
            if top >= 2 * scale:
                return scale, name
        return 1.0, "bytes"
    return 1.0, unit


def _local(t) -> dt.datetime:
    return dt.datetime.fromtimestamp(int(t))


def _colour_scale():
    stops = palette.HTML_STOPS
    return [[i / (len(stops) - 1), c] for i, c in enumerate(stops)]


def _colour_bar(lo: float, hi: float, noun: str) -> dict:
    """Colour bar ticks at 1-2-5 counts on the log colour axis."""
    ticks = [m * 10.0 ** e for e in range(int(np.floor(lo)) - 1, int(np.ceil(hi)) + 1) for m in (1, 2, 5)]
    ticks = [t for t in ticks if lo <= np.log10(t) <= hi] or [10 ** lo]
    return dict(title=dict(text=f"{noun} per cell<br>(log scale)", side="right"),
                tickvals=[float(np.log10(t)) for t in ticks], ticktext=[format_count(t) for t in ticks],
                thickness=14, len=0.9)


def _drill_hover(drill: str, unit: str, unit_label: str) -> tuple:
    """(hover line, True when it reads raw edges from customdata[3:5]): the drill-down
    command with the row's range. Time edges are exact decimals in the display unit;
    byte edges are written with decimal prefixes (kB = 1000 bytes) from the raw values."""
    if family(unit) == "bytes":
        return ("<br>break down: " + drill + " --range %{customdata[3]:.6~s}B..%{customdata[4]:.6~s}B", True)
    suffix = {"µs": "us"}.get(unit_label, unit_label)
    return ("<br>break down: " + drill + f" --range %{{customdata[0]:.6~g}}{suffix}..%{{customdata[1]:.6~g}}{suffix}",
            False)


def figure(grid, drill: str | None = None) -> go.Figure:
    """The heat map of `grid` as a plotly figure (figure_json's, for the files); `drill`, a
    `strata breakdown ...` command without --range, makes every cell's hover show it for the
    cell's row."""
    return go.Figure(figure_json(grid, drill))


@functools.cache
def template() -> dict:
    """plotly's plotly_white template as figure JSON (what the figures' layouts name)."""
    return pio.templates["plotly_white"].to_plotly_json()


def two_columns(left: float, shared_y: bool = True) -> dict:
    """The layout's axes of two plots side by side (as plotly's make_subplots(1, 2) lays them
    out), the left one `left` of the width; shared_y: the right one's y axis is the left one's."""
    inner = 1.0 - SPACING
    out = {"xaxis": {"anchor": "y", "domain": [0.0, left * inner]},
           "yaxis": {"anchor": "x", "domain": [0.0, 1.0]},
           "xaxis2": {"anchor": "y2", "domain": [left * inner + SPACING, 1.0]},
           "yaxis2": {"anchor": "x2", "domain": [0.0, 1.0]}}
    if shared_y:
        out["yaxis2"].update(matches="y", showticklabels=False)
    return out


def figure_json(grid, drill: str | None = None, height: int = IMAGE_SIZE[1]) -> dict:
    """The heat map of `grid` as plotly's figure JSON ({'data', 'layout'}; arrays as numpy
    arrays, times as datetimes), built without plotly.py's objects: the web page's figure,
    and figure()'s. `height`: the figure's height in pixels where it is drawn (the files'
    IMAGE_SIZE; the web page's views are shorter), which spaces the tier band names."""
    scale, unit_label = display_scale(float(grid.edges[-1]), grid.unit)
    noun = event_noun(grid.statistic)
    quantity = quantity_name(grid.statistic, grid.unit)
    y_edges = grid.edges / scale
    x_edges = [_local(t) for t in np.append(grid.bins.starts(), grid.bins.end)]
    x_mid = [_local(t + grid.bins.width / 2) for t in grid.bins.starts()]

    with np.errstate(divide="ignore"):
        z = np.where(grid.density > 0, np.log10(np.where(grid.density > 0, grid.density, 1)), np.nan)
    live = z[np.isfinite(z)]
    zmin, zmax = (float(live.min()), float(max(live.max(), live.min() + 1e-9))) if live.size else (0.0, 1.0)
    nrows, ncols = grid.counts.shape
    drill_line, raw_edges = _drill_hover(drill, grid.unit, unit_label) if drill else ("", False)
    exact32 = grid.counts.size == 0 or int(grid.counts.max()) < 1 << 24
    custom = np.empty((nrows, ncols, 5 if raw_edges else 3), dtype=np.float32 if exact32 else np.float64)
    custom[:, :, 0] = y_edges[:-1, None]
    custom[:, :, 1] = y_edges[1:, None]
    custom[:, :, 2] = grid.counts
    if raw_edges:
        custom[:, :, 3] = grid.edges[:-1, None]
        custom[:, :, 4] = grid.edges[1:, None]

    rates = grid.row_counts / grid.seconds
    data = [dict(
        type="scatter", xaxis="x", yaxis="y",
        x=np.repeat(rates, 2), y=np.column_stack([y_edges[:-1], y_edges[1:]]).ravel(),
        mode="lines", line=dict(color="#8c2981", width=1), fill="tozerox",
        fillcolor="rgba(140,41,129,0.25)", name=f"{noun}/s (range average)",
        hovertemplate=f"%{{x:,.4~g}} {noun}/s<extra>range average</extra>", showlegend=False)]
    data.append(dict(
        type="heatmap", xaxis="x2", yaxis="y2",
        x=x_edges, y=y_edges, z=z.astype(np.float32), customdata=custom, zmin=zmin, zmax=zmax,
        colorscale=_colour_scale(), colorbar=_colour_bar(zmin, zmax, noun), hoverongaps=False,
        hovertemplate=("%{x|%Y-%m-%d %H:%M:%S}<br>" + quantity + " %{customdata[0]:,.4~g}–"
                       "%{customdata[1]:,.4~g} " + unit_label + "<br>%{customdata[2]:,} " + noun
                       + drill_line + "<extra></extra>"),
        name="count"))
    for j, (p, values) in enumerate(grid.percentiles.items()):
        data.append(dict(
            type="scatter", xaxis="x2", yaxis="y2",
            x=x_mid, y=values / scale, mode="lines", connectgaps=False,
            line=dict(color=palette.HTML_LINE_COLOURS[j % 4], width=1.6, shape="hvh"),
            name=describe.percentile_label(p),
            hovertemplate=f"{describe.percentile_label(p)} %{{y:,.4~g}} {unit_label}<extra></extra>"))

    note = "<br>".join(n for n in (describe.bands(grid), describe.cropped(grid), describe.outages(grid)) if n)
    margin = dict(l=70, r=30, t=95 + 15 * (note.count('<br>') + 1 if note else 0), b=60)
    if grid.bands:   # a map broken down by tier: a mark at each band's median at the map's right edge,
        medians = [m / scale for _, m, _ in grid.bands]   # its name beside it, moved apart from the others
        ytype = "log" if grid.axis == "log" else "linear"
        data.append(dict(
            type="scatter", xaxis="x2", yaxis="y2", x=[x_edges[-1]] * len(grid.bands), y=medians,
            mode="markers", cliponaxis=False, marker=dict(symbol="triangle-left", size=10, color="#111"),
            text=[k for k, _, _ in grid.bands], name="tier bands", showlegend=False,
            hovertemplate="%{text} band: median %{y:,.4~g} " + unit_label + "<extra></extra>"))
        data.append(dict(
            type="scatter", xaxis="x2", yaxis="y2", x=[x_edges[-1]] * len(grid.bands),
            y=apart(medians, _y_range(y_edges, ytype), ytype, LABEL_PX / max(height - margin["t"] - margin["b"], 1)),
            mode="text", cliponaxis=False,
            text=[f"{k}  " for k, _, _ in grid.bands], textposition="middle left",
            textfont=dict(color="#111", size=14, weight="bold", shadow=HALO),
            name="tier band names", showlegend=False, hoverinfo="skip"))
    # outages collected as one record: shaded, named below the title
    shapes = [dict(type="rect", xref="x2", yref="y2 domain", x0=_local(start), x1=_local(end), y0=0, y1=1,
                   fillcolor="#888", opacity=0.12, line=dict(width=0)) for start, end, _ in grid.spans]
    subtitle = f"{describe.totals(grid)} · {grid.bins.width}s per column · {describe.y_range(grid)}"
    layout = two_columns(0.12)
    layout.update(
        template=template(), font=dict(family="DejaVu Sans, Arial, sans-serif", size=13),
        title=dict(text=(f"<b>{describe.selection(grid.name, grid.keys)}</b>{describe.derived(grid)}   "
                         f"{describe.time_range(*grid.span)}"
                         f"<br><span style='font-size:12px;color:#555'>{subtitle}"
                         + (f"<br>{note}" if note else "") + "</span>"), x=0.01, xanchor="left"),
        margin=margin, plot_bgcolor="white",
        legend=dict(orientation="h", x=1.0, xanchor="right", y=1.02, yanchor="bottom"),
        hovermode="closest")
    if shapes:
        layout["shapes"] = shapes
    ytype = "log" if grid.axis == "log" else "linear"
    y_axis = dict(type=ytype, range=_y_range(y_edges, ytype), showgrid=True, gridcolor="#eee", ticks="outside",
                  zeroline=False)
    if ytype == "log":   # 1-2-5 ticks labelled with their own units: 10µs, 200µs, 5ms
        values = log_ticks(float(grid.edges[0]), float(grid.edges[-1]), 12, family(grid.unit) == "bytes")
        y_axis.update(tickvals=[v / scale for v in values], ticktext=[format_value(v, grid.unit) for v in values])
    layout["yaxis"].update(y_axis, title=dict(
        text=f"{quantity} (log scale)" if ytype == "log" else f"{quantity} ({unit_label})"))
    layout["yaxis2"].update(y_axis)
    top = float(rates.max()) * 1.05 if rates.size and rates.max() > 0 else 1.0
    ticks = panel_ticks(top)
    layout["xaxis"].update(title=dict(text=f"{noun}/s"), range=[top, 0.0], showgrid=False,
                           tickvals=ticks, ticktext=[format_count(t) for t in ticks])
    layout["xaxis2"].update(title=dict(text=f"time ({clock.zone()})"), range=[x_edges[0], x_edges[-1]],
                            showgrid=False, ticks="outside")
    return {"data": data, "layout": layout}


def panel_ticks(top: float) -> list:
    """The rates labelled on the side panel's axis, reversed from `top` down to 0 at the map's
    left edge: round values, none within PANEL_CLEAR of that edge, where the time axis's
    first label (centred on the edge) reaches into the panel. Two of them where a finer step
    gives two."""
    for count in (4, 5, 6):
        ticks = [t for t in linear_ticks(0.0, top, count) if t >= PANEL_CLEAR * top]
        if len(ticks) >= 2:
            break
    return ticks


LABEL_PX = 20   # the least distance between two band names in pixels: their 14 px bold line and some air


def apart(values: list, axis_range: list, ytype: str, gap: float) -> list:
    """Where to write labels for values on a y-axis spanning axis_range (in the axis' own
    units: log10 on a log axis), at least `gap` (a share of its height) apart and inside it:
    each as near its value as that allows, in the values' order."""
    to_axis = (lambda v: np.log10(max(v, 1e-12))) if ytype == "log" else float
    lo, hi = axis_range
    gap = gap * (hi - lo)
    order = sorted(range(len(values)), key=lambda i: values[i])
    at = [min(max(to_axis(values[i]), lo + gap / 2), hi - gap / 2) for i in order]
    for j in range(1, len(at)):                     # pushed up past the one below
        at[j] = max(at[j], at[j - 1] + gap)
    if at:
        at[-1] = min(at[-1], hi - gap / 2)
    for j in range(len(at) - 2, -1, -1):            # and down below the one above, where the top ran out
        at[j] = min(at[j], at[j + 1] - gap)
    out = [0.0] * len(values)
    for j, i in enumerate(order):
        out[i] = float(10 ** at[j]) if ytype == "log" else at[j]
    return out


def _y_range(y_edges: np.ndarray, ytype: str) -> list:
    lo, hi = float(y_edges[0]), float(y_edges[-1])
    if ytype == "log":
        return [float(np.log10(max(lo, 1e-12))), float(np.log10(hi))]
    return [lo, hi]
