"""The page's graph of a breakdown (counters, gauges, compared keys): the series the files
draw (plot_breakdown.traces: stacked areas or a line per key, b.style) on the heat maps'
layout (time on the right-hand column) so the worksheet's views share one time axis; its
y axis is the files' (plot_breakdown.y_axis). time_went_figure: where the time went
(heatmaps/time_went.py), each component's p99 in its hover."""
import datetime as dt

import numpy as np

from plotly.subplots import make_subplots

from strata.heatmaps import clock, describe
from strata.heatmaps.plot_breakdown import traces, y_axis
from strata.heatmaps.time_went import p99_line

TOP = 8


def figure(b, spec) -> tuple:
    """(plotly figure, the divisor of its y values) of Breakdown b."""
    _, _, y_title = y_axis(b)
    edges = [dt.datetime.fromtimestamp(int(t)) for t in (b.bins.start, b.bins.end)]
    fig = make_subplots(rows=1, cols=2, column_widths=[0.12, 0.88], horizontal_spacing=0.008)
    series, scale = traces(b, b.style)
    for trace in series:
        fig.add_trace(trace, row=1, col=2)
    what = f" by {b.by}" if b.by else ""
    compared = f" · comparing {', '.join(spec.compare)}" if spec.compare else ""
    fig.update_layout(
        template="plotly_white", font=dict(family="DejaVu Sans, Arial, sans-serif", size=13),
        title=dict(text=(f"<b>{spec.name}</b>{what}   {describe.time_range(*b.span)}"
                         f"<br><span style='font-size:12px;color:#555'>{b.total_keys:,} keys · "
                         f"{b.bins.width}s per column · {b.style}{compared}</span>"), x=0.01, xanchor="left"),
        margin=dict(l=70, r=30, t=95, b=60), hovermode="x unified" if b.style == "stacked" else "closest",
        # the keys where the heat maps have their colour bar (the page keeps that margin)
        legend=dict(orientation="v", x=1.01, xanchor="left", y=1.0, yanchor="top", font=dict(size=10)))
    fig.update_xaxes(visible=False, row=1, col=1)
    fig.update_yaxes(visible=False, row=1, col=1)
    fig.update_yaxes(title_text=y_title, rangemode="tozero", row=1, col=2)
    fig.update_xaxes(title_text=f"time ({clock.zone()})", range=edges, showgrid=False, ticks="outside", row=1, col=2)
    return fig, scale


def time_went_figure(t, spec) -> tuple:
    """(plotly figure, the divisor of its y values) of TimeWent t: each component's stacked
    mean time per op, its p99 per column in the hover (customdata, scaled alike)."""
    fig, scale = figure(t.mean, spec)
    _, unit, _ = y_axis(t.mean)
    for trace, key in zip(fig.data, t.mean.keys):
        trace.customdata = [None if not np.isfinite(v) else float(v) / scale for v in t.p99[key]]
        trace.hovertemplate = (f"{key}<br>%{{x|%H:%M:%S}}<br>mean %{{y:,.4~g}} {unit} per op"
                               f"<br>p99 %{{customdata:,.4~g}} {unit}<extra></extra>")
    title = fig.layout.title.text
    fig.update_layout(title_text=title.replace("</span>", " · " + p99_line(t).replace("\n", "<br>") + "</span>"))
    return fig, scale
