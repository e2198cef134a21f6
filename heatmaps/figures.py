"""The figure model of a dataset, chosen by its kind: the one way from a QueryResult
(datasets/query.py) to every renderer (terminal, HTML/PNG/SVG, JSON, CSV, the web page).

- Heat-map statistics (latency, size, offset) give a heat map: a rebin.Grid, time x
  value, colour = count. Latency maps default to a log axis: the seed's bands (DRAM
  ~µs, flash ~100 µs, disk ~ms) keep rows of their own whatever a few slow outliers do
  (bench/heatmap_default.py measures why). Sizes and offsets too where the values shown
  span two decades or more (4 KiB I/Os beside a few MiB ones); a linear one otherwise.
- Counters and gauges give a graph: a breakdown.Breakdown, one series per key over time
  (ops/s for counters, the mean for gauges) and a top-N table; stacked areas per key, or a
  line per key to compare. A dataset without a breakdown is one series ("all").
- A heat-map statistic shown as a graph (`breakdown`) gives a percentile per key, or with
  a value range the ops/s per key inside it.

    view = View(keys=None)
    fig = build(qr, start, end, view, max_cols=400, ncells=120)   # Grid or Breakdown
"""
from dataclasses import dataclass

import numpy as np

from strata.datasets import llhist

from .breakdown import Breakdown, compute
from .errors import ViewError, ViewUsageError
from .rebin import Grid, build_grid

__all__ = ["View", "Grid", "Breakdown", "build", "heat_map", "graph", "default_axis", "default_style",
           "shown_as"]


@dataclass(frozen=True)
class View:
    """What to draw of a dataset, the same for every renderer."""
    keys: tuple | None = None          # breakdown keys selected (None: all)
    # heat maps
    axis: str | None = None            # linear | log; None: default_axis(unit)
    ymin: float | None = None
    ymax: float | None = None
    outliers: float | None = None      # crop the y-axis at this percentile
    percentiles: tuple = ()            # overlaid percentile lines
    # graphs
    as_graph: bool = False             # a heat-map statistic as a graph (percentile / range per key)
    style: str | None = None           # stacked | line; None: default_style
    top: int = 8                       # series drawn, the rest summed as "other"; 0: every key
    percentile: float = 99.0           # heat-map statistic as a graph: the percentile per key
    value_range: object = None         # value_range.ValueRange: the events inside it, per key
    by: str = ""                       # the breakdown field, for labels


def shown_as(kind: str, view: View) -> str:
    """'heatmap' or 'graph': how a dataset of this kind is drawn."""
    return "heatmap" if kind == "heatmap" and not view.as_graph and view.value_range is None else "graph"


LOG_SPAN = 100   # bytes whose largest is this many times their smallest are drawn on a log axis


def default_axis(qr) -> str:
    """Log for times (bands decades apart), and for sizes and offsets whose values span
    LOG_SPAN or more (on a linear axis the small ones would share its bottom row); else linear."""
    if qr.unit == "ns":
        return "log"
    counts = np.asarray(qr.counts)
    if counts.size == 0:
        return "linear"
    held = np.asarray(qr.buckets, dtype=np.int64)[counts.reshape(-1, counts.shape[-1]).sum(axis=0) > 0]
    if len(held) == 0:
        return "linear"
    smallest = max(float(llhist.lower_bounds()[held[0]]), 1.0)
    largest = float(llhist.upper_bounds()[held[-1]])
    return "log" if largest >= LOG_SPAN * smallest else "linear"


def default_style(kind: str, view: View) -> str:
    """Stacked areas for rates (they add up), lines for levels, percentiles and compared keys."""
    rate = kind == "counter" or view.value_range is not None
    if view.keys is not None and len(view.keys) > 1:
        return "line"
    return "stacked" if rate else "line"


def heat_map(qr, start: int, end: int, view: View, *, max_cols: int, ncells: int) -> Grid:
    try:
        return build_grid(qr, start, end, max_cols=max_cols, ncells=ncells,
                          keys=list(view.keys) if view.keys else None,
                          axis=view.axis or default_axis(qr), ymin=view.ymin, ymax=view.ymax,
                          outliers=view.outliers, percentiles=view.percentiles)
    except KeyError as e:
        raise _no_key(qr, e.args[0]) from None
    except ValueError as e:
        raise ViewUsageError(str(e)) from None


def graph(qr, start: int, end: int, view: View, *, max_cols: int) -> Breakdown:
    style = view.style or default_style(qr.kind, view)
    if style == "stacked" and qr.kind != "counter" and view.value_range is None:
        what = "percentiles" if qr.kind == "heatmap" else "gauge levels"
        raise ViewUsageError(f"{qr.name} gives {what}, which do not add up: use --graph line")
    try:
        b = compute(qr, start, end, max_cols=max_cols, top=view.top, percentile=view.percentile,
                    keys=list(view.keys) if view.keys else None, by=view.by, value_range=view.value_range)
    except KeyError as e:
        raise _no_key(qr, e.args[0]) from None
    except ValueError as e:
        raise ViewUsageError(str(e)) from None
    b.style = style
    return b


def build(qr, start: int, end: int, view: View, *, max_cols: int, ncells: int = 120):
    """The figure model of qr over [start, end): a Grid or a Breakdown (shown_as)."""
    if shown_as(qr.kind, view) == "heatmap":
        return heat_map(qr, start, end, view, max_cols=max_cols, ncells=ncells)
    return graph(qr, start, end, view, max_cols=max_cols)


def _no_key(qr, key) -> ViewError:
    field = qr.name.rpartition("[")[2].rstrip("]")
    seen = ", ".join(qr.keys[:10]) + (" ..." if len(qr.keys) > 10 else "") if qr.keys else "none"
    return ViewError(f"no data for {field}={key} in {qr.name} in this range; keys with data: {seen}")
