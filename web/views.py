"""A worksheet's views as the page draws them: the figure of one view over a time range,
its live geometry (what a new column needs to be drawn into the same figure), the
columns that arrived after a second, and the drill-down of a dragged rectangle. A view named time:nfsd, time:fs or time:disk is where
each op's time went (views/time_went.py reads it, heatmaps/time_went.py builds it): a
stacked graph of each component's mean time per op, its p99 in the hover.

figure_for() is the one place that draws a view: heatmaps/figures.py chooses the figure
model by the dataset's kind (a heat map for latency, size and offset statistics, a graph
for counters, gauges and compared keys); plot_heatmap draws heat maps, graphs.py the
page's graphs (plot_breakdown's series: stacked areas for counters by default). A drill-down reads as `strata breakdown --range` reads (window.query_window,
figures.graph). Errors are ViewError, one line for the page.
"""
import base64
import datetime as dt
import math
from dataclasses import dataclass

import numpy as np

from strata.datasets import derive, names
from strata.datasets.errors import ArchiveError
from strata.heatmaps import describe, figures, plot_heatmap, time_went, value_range
from strata.heatmaps.breakdown import OTHER, compute, to_json
from strata.heatmaps.errors import ViewError as SourceError
from strata.heatmaps.plot_breakdown import BREAKDOWN_MAX_COLS, y_axis
from strata.heatmaps.rebin import Grid, column_histograms, row_counts
from strata.heatmaps.timebins import TimeBins, choose_bins, collected_seconds
from strata.heatmaps.clock import typed
from strata.heatmaps.units import event_noun, typed_value
from strata.views import lookup, window
from strata.views import time_went as time_went_read

from . import graphs
from .limits import CELLS, MAX_COLS, MAX_KEYS, LimitError, check_span

AXES = ("", "linear", "log")       # "": the dataset's default (log for latency)
STYLES = ("", "stacked", "line")   # counters' graphs; "": the default (figures.default_style)
VIEW_HEIGHT = 340                  # a view's plot in pixels (worksheet.css: .view .plot)


class ViewError(LimitError):
    """One line for the page."""


@dataclass(frozen=True)
class ViewSpec:
    name: str                  # dataset name, filters included: nfs.latency[client=10.0.0.3]
    compare: tuple = ()        # keys of a broken-down dataset drawn as lines on one graph
    axis: str = ""             # heat maps' y-axis: linear, log, or "" for the default
    crop: float | None = None  # heat maps: crop the y-axis at this percentile
    style: str = ""            # counters' graphs: stacked, line, or "" for the default

    @classmethod
    def parse(cls, params) -> "ViewSpec":
        """From query parameters name, compare (comma-separated keys), axis, crop, style."""
        name = str(params.get("name") or "").strip()
        if not name or len(name) > 300:
            raise ViewError("a view needs a dataset name (at most 300 characters)")
        compare = tuple(k for k in str(params.get("compare") or "").split(",") if k)
        if len(compare) > MAX_KEYS:
            raise ViewError(f"compare at most {MAX_KEYS} keys")
        axis = str(params.get("axis") or "")
        if axis not in AXES:
            raise ViewError(f"axis must be linear or log, not {axis[:20]!r}")
        crop = params.get("crop") or None
        if crop is not None:
            try:
                crop = float(crop)
            except ValueError:
                raise ViewError(f"crop must be a percentile, not {str(crop)[:20]!r}") from None
            if not 0 < crop < 100:
                raise ViewError("crop must be a percentile between 0 and 100")
        style = str(params.get("style") or "")
        if style not in STYLES:
            raise ViewError(f"style must be stacked or line, not {style[:20]!r}")
        return cls(name, compare, axis, crop, style)


def parse_time(value) -> float:
    """Unix seconds of a time the page sends: a number (unix seconds, as the page sends
    them), or an ISO time without zone (the server's local time, as the figures draw it)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(value):
            raise ViewError("a time must be a finite number of unix seconds")
        return float(value)
    try:
        return dt.datetime.fromisoformat(str(value).strip()[:40]).timestamp()
    except ValueError:
        raise ViewError(f"not a time on the axis: {str(value)[:40]!r}") from None


def _epochs(values):
    """The figures' times (datetimes in the server's zone) as unix seconds: what travels to
    the page, which shows them in the zone its user chose."""
    if isinstance(values, (list, tuple)):
        return [v.timestamp() if isinstance(v, dt.datetime) else v for v in values]
    return values.timestamp() if isinstance(values, dt.datetime) else values


def in_unix_seconds(fig: dict) -> dict:
    """A figure whose time axis (x2) holds unix seconds: the traces' x, its range, its shapes."""
    for trace in fig.get("data", ()):
        if trace.get("xaxis") == "x2" and "x" in trace:
            trace["x"] = _epochs(trace["x"])
    axis = fig.get("layout", {}).get("xaxis2", {})
    if "range" in axis:
        axis["range"] = _epochs(axis["range"])
    for shape in fig.get("layout", {}).get("shapes", ()):
        if shape.get("xref") == "x2":
            shape["x0"], shape["x1"] = _epochs(shape.get("x0")), _epochs(shape.get("x1"))
    return fig


def _resolve(reader, name, keys=None):
    """(derive.Source, keys or None) of a dataset name, as the CLI resolves it."""
    try:
        return lookup.resolve(reader, name, list(keys) if keys else None)
    except SourceError as e:
        raise ViewError(str(e)) from None


def _query(reader, src, start, end, resolution):
    try:
        return window.query(reader, src, start, end, resolution)
    except SourceError as e:
        raise ViewError(str(e)) from None


def _view(spec, src, keys) -> figures.View:
    # the page's toggle: stacked areas for counters only (levels and percentiles do not add up)
    style = {"stacked": "stacked" if src.info.kind == "counter" else None, "line": "line"}.get(spec.style)
    return figures.View(keys=tuple(keys) if keys else None, axis=spec.axis or None, outliers=spec.crop,
                        as_graph=bool(spec.compare), style=style, top=len(keys) if keys else graphs.TOP,
                        by=src.wanted.breakdown or src.info.breakdown)


def figure_for(spec, src, keys, qr, start, end):
    """(plotly figure JSON, the time range its title names: describe.time_range's text, live
    geometry, what the page keeps up to date from the live columns: `totals`) of one view:
    the figure model figures.build chooses."""
    try:
        model = figures.build(qr, start, end, _view(spec, src, keys), max_cols=MAX_COLS, ncells=CELLS)
    except SourceError as e:
        raise ViewError(str(e)) from None
    named = describe.time_range(*model.span)
    if not isinstance(model, Grid):
        fig, scale = graphs.figure(model, spec)
        return fig, named, {"type": "graph", "width": model.bins.width, "next": model.bins.end, "scale": scale,
                     "keys": [k for k in model.keys if k != OTHER], "lines": model.keys,
                     "label": y_axis(model)[1]}, None
    grid = model
    fig = plot_heatmap.figure_json(grid, height=VIEW_HEIGHT)
    scale, label = plot_heatmap.display_scale(float(grid.edges[-1]), grid.unit)
    if grid.axis == "log":
        cell_h = (math.log10(grid.cells[-1]) - math.log10(grid.cells[0])) / CELLS
    else:
        cell_h = (grid.cells[-1] - grid.cells[0]) / CELLS
    seconds = collected_seconds(qr, grid.bins)
    totals = {"text": describe.totals(grid), "noun": event_noun(grid.statistic),
              "columns": grid.column_totals.tolist(), "span": grid.span[1] - grid.span[0],
              "seconds": None if seconds is None else seconds.astype(int).tolist()}
    return fig, named, {"type": "heatmap", "width": grid.bins.width, "next": grid.bins.end, "scale": scale,
                 "unit": grid.unit, "label": label, "edges": grid.edges.tolist(), "cell_h": float(cell_h),
                 "axis": grid.axis, "keys": keys}, totals


def _family(spec) -> str | None:
    """The family of a time:FAMILY view, None for a dataset."""
    try:
        family = time_went.family_of(spec.name)
    except SourceError as e:
        raise ViewError(str(e)) from None
    if family and spec.compare:
        raise ViewError(f"{spec.name} has no keys to compare: its components are all drawn")
    return family


def _time_went(reader, family, start, end, bins=None) -> tuple:
    """(TimeWent, its statistics' QueryResults) of a family over [start, end) (bins: the
    columns, else chosen for MAX_COLS)."""
    try:
        bins, results = time_went_read.read(reader, family, start, end, MAX_COLS, bins)
        return time_went_read.build(family, bins, results), results
    except SourceError as e:
        raise ViewError(str(e)) from None


def time_views(reader) -> list:
    """The time:FAMILY views the archive can draw: those whose ops statistic it holds or derives."""
    out = []
    for family, spec in time_went.FAMILIES.items():
        try:
            derive.resolve(reader, spec["ops"])
        except (ArchiveError, SourceError):
            continue
        out.append(time_went.PREFIX + family)
    return out


def _time_view(reader, spec: ViewSpec, family: str, start: int, end: int) -> dict:
    """view() of time:FAMILY: its graph, a line per component (scaled as its live columns are)."""
    t, results = _time_went(reader, family, start, end)
    fig, scale = graphs.time_went_figure(t, spec)
    ops = results[time_went.FAMILIES[family]["ops"]]
    live = {"type": "graph", "width": t.mean.bins.width, "next": t.mean.bins.end, "scale": scale,
            "keys": list(t.mean.keys), "lines": list(t.mean.keys), "label": y_axis(t.mean)[1], "p99": True,
            "name": spec.name, "kind": "time_went", "statistic": t.mean.statistic, "breakdown": "component",
            "unit": "ns", "level": ops.level, "note": None}
    figure = in_unix_seconds(fig)
    figure["data"] = [_packed(trace) for trace in figure["data"]]
    return {"figure": figure, "rows": None, "live": live, "start": start, "end": end,
            "title_range": describe.time_range(*t.mean.span), "totals": None}


def view(reader, spec: ViewSpec, start: int, end: int) -> dict:
    """{'figure', 'rows', 'live', 'start', 'end', 'title_range', 'totals'}: the view over [start,
    end), at the level the CLI would read (the finest that covers the range in MAX_COLS columns);
    rows: _counts_only; title_range: the text of the title's time range (in the server's zone),
    which the page writes again in the zone its user chose; totals (heat maps; None for graphs):
    the title's totals text, the event noun, each column's events and collected seconds (None
    when the reader does not say) and the span, from which the page writes the totals again as
    live columns arrive."""
    check_span(start, end)
    family = _family(spec)
    if family:
        return _time_view(reader, spec, family, start, end)
    src, keys = _resolve(reader, spec.name, spec.compare)
    qr = _query(reader, src, start, end, choose_bins(start, end, 1, MAX_COLS).width)
    fig, named, live, totals = figure_for(spec, src, keys, qr, start, end)
    live.update(name=str(src.wanted), kind=src.info.kind, statistic=src.info.statistic,
                breakdown=src.wanted.breakdown, unit=src.info.unit, level=qr.level, note=src.note)
    figure = in_unix_seconds(fig)
    figure["data"] = [_packed(trace) for trace in figure["data"]]
    return {"figure": figure, "rows": _counts_only(figure), "live": live, "start": start, "end": end,
            "title_range": named, "totals": totals}


def _packed(trace: dict) -> dict:
    """A trace whose numpy arrays travel as plotly.js's typed arrays ({dtype, bdata, shape}),
    as plotly.py packs them."""
    out = {}
    for key, value in trace.items():
        if isinstance(value, np.ndarray) and value.size and value.dtype.kind == "f":
            value = {"dtype": value.dtype.str[1:], "bdata": base64.b64encode(np.ascontiguousarray(value)).decode(),
                     **({"shape": ", ".join(map(str, value.shape))} if value.ndim > 1 else {})}
        elif isinstance(value, np.ndarray):
            value = value.tolist()
        out[key] = value
    return out


def _counts_only(fig: dict) -> list | None:
    """The heat map's per-cell hover data cut to its counts; returned: each row's bounds
    (the other fields of its cells, the same in every column), which the page puts back."""
    for trace in fig.get("data", ()):
        cells = trace.get("customdata")
        if trace.get("type") != "heatmap" or not isinstance(cells, dict) or "bdata" not in cells:
            continue
        shape = tuple(int(n) for n in str(cells["shape"]).split(","))
        if len(shape) != 3 or not shape[1]:
            continue
        array = np.frombuffer(base64.b64decode(cells["bdata"]), dtype=np.dtype(cells["dtype"])).reshape(shape)
        counts = np.ascontiguousarray(array[:, :, 2])
        trace["customdata"] = {"dtype": cells["dtype"], "bdata": base64.b64encode(counts.tobytes()).decode(),
                               "shape": f"{shape[0]}, {shape[1]}"}
        return np.delete(array[:, 0, :], 2, axis=1).tolist()
    return None


def columns(reader, spec: ViewSpec, live: dict, after: int, now: int) -> tuple:
    """(columns, next, refit): the view's columns from `after` (a column start) up to now,
    each {'t' (unix seconds), ...} (a heat map's: 'n' its rows' events, from which the page
    colours the cells as the figure does, 'total' all its events, 's' its collected seconds or
    None); the last one may be partial (re-sent as it fills). `next` is the start of the
    first column still to send; refit is True when the columns hold what the view's figure
    cannot show (values outside its axis, keys it has no line for): the page loads that view
    again. A time:FAMILY view's columns: 'y' each component's mean per op, 'p99' its p99 (both
    divided by the view's scale)."""
    width = int(live["width"])
    after = after - after % width
    if now <= after:
        return [], after, False
    check_span(after, now)
    bins = TimeBins(after, width, math.ceil((now - after) / width))
    family = _family(spec)
    if family:
        return _time_columns(reader, family, live, bins, now)
    src, _ = _resolve(reader, spec.name, spec.compare)
    qr = _query(reader, src, after, now, width if width > 1 else None)
    present = _present(qr, bins)
    out, refit = [], False
    if live["type"] == "heatmap":
        edges = np.asarray(live["edges"], dtype=np.float64)
        hist = column_histograms(qr, bins) if len(qr.buckets) else np.zeros((bins.ncols, 0), np.uint64)
        counts, _, _ = row_counts(hist, np.asarray(qr.buckets, np.int64), edges)
        seconds = collected_seconds(qr, bins)
        for c in np.flatnonzero(present):
            t = int(bins.start + c * width)
            n = counts[:, c].astype(np.int64)
            out.append({"t": t, "n": n.tolist(), "total": int(hist[c].sum()),
                        "s": None if seconds is None else int(seconds[c])})
            refit = refit or (spec.crop is None and int(n.sum()) < out[-1]["total"])   # outside the axis
    else:
        shown = set(live["keys"])
        refit = not spec.compare and len(shown) < graphs.TOP and any(k not in shown for k in qr.keys)
        have = [k for k in live["keys"] if k in qr.keys]
        b = compute(qr, bins.start, bins.end, max_cols=bins.ncols, top=max(len(have), 1), keys=have,
                    bins=bins) if have else None
        for c in np.flatnonzero(present):
            t = int(bins.start + c * width)
            y = []
            for k in live["lines"]:
                v = b.series[b.keys.index(k), c] if b is not None and k in b.keys else float("nan")
                y.append(None if not np.isfinite(v) else float(v) / live["scale"])
            out.append({"t": t, "y": y})
    return out, _next(present, bins, now), refit


def _present(qr, bins) -> np.ndarray:
    """Which columns of bins the query result holds collected seconds in."""
    present = np.zeros(bins.ncols, bool)
    if qr is not None and qr.present.size:
        cols = (qr.times - bins.start) // bins.width
        ok = (cols >= 0) & (cols < bins.ncols)
        present[cols[ok][qr.present[ok]]] = True
    return present


def _next(present, bins, now) -> int:
    """The start of the first column still to send: the last column sent when it may still
    fill, else the one after it; a column still missing 5 s later is a gap, not waited for."""
    sent = np.flatnonzero(present)
    nxt = bins.start
    if sent.size:
        last = int(bins.start + sent[-1] * bins.width)
        nxt = last if last + bins.width > now else last + bins.width
    gap = (now - 5) - (now - 5) % bins.width
    return max(nxt, gap)


def _time_columns(reader, family, live, bins, now) -> tuple:
    """columns() of a time:FAMILY view; refit when its components are no longer those drawn."""
    t, results = _time_went(reader, family, bins.start, bins.end, bins)
    present = _present(results[time_went.FAMILIES[family]["ops"]], bins)
    scale, keys = live["scale"], list(t.mean.keys)

    def scaled(v):
        return None if not np.isfinite(v) else float(v) / scale
    out = [{"t": int(bins.start + c * bins.width),
            "y": [scaled(t.mean.series[keys.index(k), c]) if k in keys else None for k in live["lines"]],
            "p99": [scaled(t.p99[k][c]) if k in keys else None for k in live["lines"]]}
           for c in np.flatnonzero(present)]
    return out, _next(present, bins, now), keys != list(live["lines"])


def breakdowns(reader, src) -> list:
    """The fields the archive can break a view's events down by, within its filters (as
    lookup.drill_target tries them, clients first): the page's "break down by" choice."""
    wanted = src.wanted
    out = []
    for by in lookup.breakdown_fields(names.DatasetName(wanted.statistic, wanted.filters, None)):
        try:
            derive.resolve(reader, str(names.DatasetName(wanted.statistic, wanted.filters, by)))
        except ArchiveError:
            continue
        out.append(by)
    return out


def drill(reader, spec: ViewSpec, x0, x1, lo: float, hi: float, top: int = 8, by: str | None = None) -> dict:
    """The breakdown of the events inside a dragged rectangle (times as parse_time reads
    them, values in the dataset's unit), by `by` (one of breakdowns(); None: lookup.drill_target's
    choice), read as `strata breakdown TARGET --range LO..HI --since S --until E` reads it: the
    same window.query_window and figures.graph. The answer's 'choices': breakdowns()."""
    src, _ = _resolve(reader, spec.name)
    if src.info.kind != "heatmap":
        raise ViewError(f"{src.wanted} is a {src.info.kind}: drag over a heat map to break a band down")
    t0, t1 = sorted((parse_time(x0), parse_time(x1)))
    since, until = int(math.floor(t0)), int(math.ceil(t1))
    until = max(until, since + 1)
    check_span(since, until)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ViewError("a drill-down's values must be finite numbers")
    lo, hi = sorted((max(float(lo), 0.0), max(float(hi), 0.0)))
    choices = breakdowns(reader, src)
    if by is not None and by not in choices:
        raise ViewError(f"the archive holds no breakdown of {src.wanted} by {str(by)[:40]!r}: "
                        f"it has {', '.join(choices) or 'none'}")
    target = lookup.drill_target(reader, src) if by is None else \
        str(names.DatasetName(src.wanted.statistic, src.wanted.filters, by))
    if target is None:
        raise ViewError(f"the archive holds no breakdown of {src.wanted}: create e.g. "
                        f"{src.info.statistic}[client] to break its bands down")
    tsrc, _ = _resolve(reader, target)
    text = f"{typed_value(lo, tsrc.info.unit)}..{typed_value(max(hi, lo + 1), tsrc.info.unit)}"
    try:
        selected = value_range.parse(text, tsrc.info.unit)
    except ValueError as e:
        raise ViewError(str(e)) from None
    view = figures.View(as_graph=True, top=top, percentile=99.0, value_range=selected,
                        by=tsrc.wanted.breakdown)
    try:
        qr, since, until = window.query_window(reader, tsrc, since, until, BREAKDOWN_MAX_COLS, True)
        b = figures.graph(qr, since, until, view, max_cols=BREAKDOWN_MAX_COLS)
    except SourceError as e:
        raise ViewError(str(e)) from None
    out = {k: v for k, v in to_json(b).items() if k not in ("times", "series")}
    out.update(target=target, since=since, until=until, range=text, label=selected.label(), choices=choices,
               command=f"strata breakdown '{target}' --range {text} --since {typed(since)} --until {typed(until)}")
    return out
