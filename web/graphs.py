"""The page's graph of a breakdown (counters, gauges, compared keys): the series the files
draw (plot_breakdown.traces: stacked areas or a line per key, b.style) on the heat maps'
layout (time on the right-hand column) so the worksheet's views share one time axis; its
y axis is the files' (plot_breakdown.y_axis). time_went_figure: where the time went
(heatmaps/time_went.py), each component's p99 in its hover."""
import datetime as dt

import numpy as np

from strata.heatmaps import clock, describe
from strata.heatmaps.plot_breakdown import traces, y_axis
from strata.heatmaps.plot_heatmap import template, two_columns
from strata.heatmaps.time_went import p99_line

TOP = 8


def figure(b, spec) -> tuple:
    """(plotly figure JSON, the divisor of its y values) of Breakdown b."""
    _, _, y_title = y_axis(b)
    edges = [dt.datetime.fromtimestamp(int(t)) for t in (b.bins.start, b.bins.end)]
    series, scale = traces(b, b.style)
    what = f" by {b.by}" if b.by else ""
    compared = f" · comparing {', '.join(spec.compare)}" if spec.compare else ""
    layout = two_columns(0.12, shared_y=False)
    layout.update(
        template=template(), font=dict(family="DejaVu Sans, Arial, sans-serif", size=13),
        title=dict(text=(f"<b>{spec.name}</b>{what}   {describe.time_range(*b.span)}"
                         f"<br><span style='font-size:12px;color:#555'>{describe.key_count(b)}"
                         f"{b.bins.width}s per column · {b.style}{compared}</span>"), x=0.01, xanchor="left"),
        margin=dict(l=70, r=30, t=95, b=60), hovermode="x unified" if b.style == "stacked" else "closest",
        # the keys where the heat maps have their colour bar (the page keeps that margin)
        legend=dict(orientation="v", x=1.01, xanchor="left", y=1.0, yanchor="top", font=dict(size=10)))
    layout["xaxis"]["visible"] = layout["yaxis"]["visible"] = False
    layout["yaxis2"].update(title=dict(text=y_title), rangemode="tozero")
    layout["xaxis2"].update(title=dict(text=f"time ({clock.zone()})"), range=edges, showgrid=False, ticks="outside")
    return {"data": [dict(trace, xaxis="x2", yaxis="y2") for trace in series], "layout": layout}, scale


def time_went_figure(t, spec) -> tuple:
    """(plotly figure JSON, the divisor of its y values) of TimeWent t: each component's stacked
    mean time per op, its p99 per column in the hover (customdata, scaled alike)."""
    fig, scale = figure(t.mean, spec)
    _, unit, _ = y_axis(t.mean)
    for trace, key in zip(fig["data"], t.mean.keys):
        trace["customdata"] = [None if not np.isfinite(v) else float(v) / scale for v in t.p99[key]]
        trace["hovertemplate"] = (f"{key}<br>%{{x|%H:%M:%S}}<br>mean %{{y:,.4~g}} {unit} per op"
                                  f"<br>p99 %{{customdata:,.4~g}} {unit}<extra></extra>")
    title = fig["layout"]["title"]
    title["text"] = title["text"].replace("</span>", " · " + p99_line(t).replace("\n", "<br>") + "</span>")
    return fig, scale
