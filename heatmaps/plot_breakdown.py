"""Plotly breakdown: stacked areas or lines per key over time, and the top-N table."""
import datetime as dt

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from . import clock, describe
from .breakdown import OTHER
from .export import IMAGE_SIZE
from .plot_heatmap import display_scale
from .term_breakdown import key_colour
from .units import event_noun, format_count, format_value

BREAKDOWN_MAX_COLS = 600
# the figure's heights in pixels: the table gets what its rows need, the graph the rest of
# export.IMAGE_SIZE's height, or GRAPH_MIN_H with the figure made taller to hold every row
MARGIN_T, MARGIN_B = 90, 30
HEADER_H, ROW_H = 28, 20   # plotly's table header and cell heights, set so (one line each)
TABLE_LINES_H = 4          # the table's rules beside its rows
GRAPH_GAP_H = 70           # between graph and table: the time axis's labels and title
GRAPH_MIN_H = 360


def y_axis(b) -> tuple:
    """(divisor of the series, unit label, y-axis title) of Breakdown b's values."""
    noun = event_noun(b.statistic)
    if b.metric == "rate":
        return 1.0, f"{noun}/s", f"{noun}/s"
    finite = b.series[np.isfinite(b.series)]
    scale, unit_label = display_scale(float(finite.max()) if finite.size else 1.0, b.unit)
    y_title = (f"p{b.percentile:g} {describe.quantity_of(b)} ({unit_label})" if b.metric == "percentile"
               else f"mean ({unit_label})")
    return scale, unit_label, y_title


def traces(b, style: str) -> tuple:
    """(one scatter trace per key as figure JSON: stacked areas or lines, the divisor of
    their y values): the series of Breakdown b as the files and the web page draw them."""
    scale, unit_label, _ = y_axis(b)
    x = [dt.datetime.fromtimestamp(int(t) + b.bins.width / 2) for t in b.bins.starts()]
    out = []
    for i, key in enumerate(b.keys):
        name = describe.other(b) if key == OTHER else key or b.statistic
        out.append(dict(
            type="scatter", x=x, y=b.series[i] / scale, name=name, mode="lines",
            line=dict(color=key_colour(b, i), width=1.2 if style == "stacked" else 1.8, shape="hv"),
            connectgaps=False, hovertemplate=f"{name}<br>%{{x|%H:%M:%S}}<br>%{{y:,.4~g}} {unit_label}<extra></extra>",
            **({"stackgroup": "one"} if style == "stacked" else {})))
    return out, scale


def figure(b, style: str | None = None) -> go.Figure:
    """The graph of Breakdown b: stacked areas or lines (style, default b.style) and its table."""
    style = style or b.style
    _, _, y_title = y_axis(b)
    header, columns = _table(b, event_noun(b.statistic))
    graph_h, table_h = heights(len(b.rows))
    fig = make_subplots(rows=2, cols=1, row_heights=[graph_h, table_h],
                        vertical_spacing=GRAPH_GAP_H / (graph_h + GRAPH_GAP_H + table_h),
                        specs=[[{"type": "xy"}], [{"type": "table"}]])
    for trace in traces(b, style)[0]:
        fig.add_trace(trace, row=1, col=1)
    fig.add_trace(go.Table(
        header=dict(values=header, fill_color="#f0f0f0", align="left", font=dict(size=12), height=HEADER_H),
        cells=dict(values=columns, align="left", font=dict(size=12), height=ROW_H,
                   fill_color=[[key_colour(b, i) for i in range(len(b.keys))]] + [["white"] * len(b.keys)] * (len(header) - 1)),
        columnwidth=[0.3] + [1] * (len(header) - 1)), row=2, col=1)
    fig.update_layout(
        template="plotly_white", font=dict(family="DejaVu Sans, Arial, sans-serif", size=13),
        title=dict(text=(f"<b>{b.name}</b>{describe.derived(b)}{describe.by(b)}{describe.range_of(b)}   "
                         f"{describe.time_range(*b.span)}"
                         f"<br><span style='font-size:12px;color:#555'>{describe.key_count(b)}"
                         f"{b.bins.width}s per column · {style}</span>"), x=0.01, xanchor="left"),
        height=MARGIN_T + graph_h + GRAPH_GAP_H + table_h + MARGIN_B,
        margin=dict(l=70, r=30, t=MARGIN_T, b=MARGIN_B), hovermode="x unified" if style == "stacked" else "closest",
        legend=dict(title=b.by or "key"))
    fig.update_yaxes(title_text=y_title, rangemode="tozero", row=1, col=1)
    fig.update_xaxes(title_text=f"time ({clock.zone()})", row=1, col=1)
    return fig


def heights(nrows: int) -> tuple:
    """(graph, table) heights in pixels of a figure whose table has nrows rows: every row
    shown, in IMAGE_SIZE's height while the graph keeps GRAPH_MIN_H, in a taller one beyond."""
    table_h = HEADER_H + nrows * ROW_H + TABLE_LINES_H
    room = IMAGE_SIZE[1] - MARGIN_T - GRAPH_GAP_H - MARGIN_B - table_h
    return max(room, GRAPH_MIN_H), table_h


def _table(b, noun: str) -> tuple:
    header = ["", b.by or "key"]
    if b.metric == "mean":
        header += ["mean", "peak"]
    else:
        header += [noun, f"{noun}/s", "share"]
    if b.value_range:
        header.append(f"of its {noun}")
    if b.metric == "percentile":
        header += ["p50", f"p{b.percentile:g}", "max"]
    rows = []
    for r in b.rows:
        key = describe.other(b) if r.key == OTHER else r.key
        if b.metric == "mean":
            row = ["", key, format_value(r.rate, b.unit), format_value(r.peak, b.unit)]
        else:
            row = ["", key, f"{r.events:,}", format_count(r.rate), f"{r.share:.1f}%"]
        if b.value_range:
            row.append(describe.percent(r.of_key))
        if b.metric == "percentile":
            row += [format_value(r.quantiles.get(q, float("nan")), b.unit) for q in (50.0, b.percentile, 100.0)]
        rows.append(row)
    columns = [list(c) for c in zip(*rows)] if rows else [[] for _ in header]
    return header, columns
