"""The page's line graph of a breakdown (counters, gauges, compared keys): one line per
key on the heat maps' layout (time on the right-hand column) so the worksheet's views
share one time axis; its y axis is the files' (plot_breakdown.y_axis)."""
import datetime as dt

from plotly.subplots import make_subplots
import plotly.graph_objects as go

from strata.heatmaps import describe
from strata.heatmaps.breakdown import OTHER
from strata.heatmaps.plot_breakdown import y_axis
from strata.heatmaps.term_breakdown import key_colour

TOP = 8


def figure(b, spec) -> tuple:
    """(plotly figure, the divisor of its y values) of Breakdown b as lines."""
    scale, unit_label, y_title = y_axis(b)
    x = [dt.datetime.fromtimestamp(int(t) + b.bins.width / 2) for t in b.bins.starts()]
    edges = [dt.datetime.fromtimestamp(int(t)) for t in (b.bins.start, b.bins.end)]
    fig = make_subplots(rows=1, cols=2, column_widths=[0.12, 0.88], horizontal_spacing=0.008)
    for i, key in enumerate(b.keys):
        name = (key or b.statistic) + (f" ({b.folded:,} keys)" if key == OTHER else "")
        fig.add_trace(go.Scatter(
            x=x, y=b.series[i] / scale, name=name, mode="lines", connectgaps=False,
            line=dict(color=key_colour(b, i), width=1.6, shape="hv"),
            hovertemplate=f"{name}<br>%{{x|%H:%M:%S}}<br>%{{y:,.4~g}} {unit_label}<extra></extra>"),
            row=1, col=2)
    what = f" by {b.by}" if b.by else ""
    compared = f" · comparing {', '.join(spec.compare)}" if spec.compare else ""
    fig.update_layout(
        template="plotly_white", font=dict(family="DejaVu Sans, Arial, sans-serif", size=13),
        title=dict(text=(f"<b>{spec.name}</b>{what}   {describe.time_range(*b.span)}"
                         f"<br><span style='font-size:12px;color:#555'>{b.total_keys:,} keys · "
                         f"{b.bins.width}s per column{compared}</span>"), x=0.01, xanchor="left"),
        margin=dict(l=70, r=30, t=95, b=60), hovermode="closest",
        legend=dict(orientation="h", x=1.0, xanchor="right", y=1.02, yanchor="bottom"))
    fig.update_xaxes(visible=False, row=1, col=1)
    fig.update_yaxes(visible=False, row=1, col=1)
    fig.update_yaxes(title_text=y_title, rangemode="tozero", row=1, col=2)
    fig.update_xaxes(title_text="time (local)", range=edges, showgrid=False, ticks="outside", row=1, col=2)
    return fig, scale
