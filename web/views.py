"""A worksheet's views as the page draws them: the figure of one view over a time range,
its live geometry (what a new column needs to be drawn into the same figure), the
columns that arrived after a second, and the drill-down of a dragged rectangle.

figure_for() is the one place that chooses a view's figure: heat maps for latency,
size and offset statistics (heatmaps/plot_heatmap.py), line graphs for counters,
gauges and compared keys (graphs.py). Errors are ViewError, one line for the page.
"""
import datetime as dt
import math
from dataclasses import dataclass

import click
import numpy as np

from strata.datasets.errors import ArchiveError
from strata.heatmaps import plot_heatmap, source, value_range
from strata.heatmaps.breakdown import OTHER, compute, to_json
from strata.heatmaps.plot_breakdown import BREAKDOWN_MAX_COLS
from strata.heatmaps.rebin import build_grid, column_histograms, row_counts, select_keys
from strata.heatmaps.timebins import TimeBins, choose_bins

from . import graphs
from .limits import CELLS, MAX_COLS, MAX_KEYS, LimitError, check_span

AXES = ("linear", "log")


class ViewError(LimitError):
    """One line for the page."""


@dataclass(frozen=True)
class ViewSpec:
    name: str                  # dataset name, filters included: nfs.latency[client=10.0.0.3]
    compare: tuple = ()        # keys of a broken-down dataset drawn as lines on one graph
    axis: str = "linear"       # heat maps' y-axis
    crop: float | None = None  # heat maps: crop the y-axis at this percentile

    @classmethod
    def parse(cls, params) -> "ViewSpec":
        """From query parameters name, compare (comma-separated keys), axis, crop."""
        name = str(params.get("name") or "").strip()
        if not name or len(name) > 300:
            raise ViewError("a view needs a dataset name (at most 300 characters)")
        compare = tuple(k for k in str(params.get("compare") or "").split(",") if k)
        if len(compare) > MAX_KEYS:
            raise ViewError(f"compare at most {MAX_KEYS} keys")
        axis = str(params.get("axis") or "linear")
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
        return cls(name, compare, axis, crop)


def _local(t) -> str:
    return dt.datetime.fromtimestamp(int(t)).isoformat()


def parse_local(text: str) -> float:
    """Unix seconds of a time on the page's axis (local time, as plot_heatmap draws it)."""
    try:
        return dt.datetime.fromisoformat(str(text).strip()[:40]).timestamp()
    except ValueError:
        raise ViewError(f"not a time on the axis: {str(text)[:40]!r}") from None


def _resolve(archive, spec):
    try:
        return source.resolve(archive, spec.name)
    except click.ClickException as e:
        raise ViewError(e.format_message()) from None


def _query(archive, info, start, end, resolution):
    try:
        return archive.query(info.name, start, end, resolution)
    except ArchiveError as e:
        raise ViewError(str(e)) from None


def figure_for(spec, info, keys, qr, start, end):
    """(plotly figure, live geometry) of one view: the view -> figure choice."""
    if spec.compare or info.kind != "heatmap":
        chosen = list(spec.compare) or keys
        try:
            b = compute(qr, start, end, max_cols=MAX_COLS, top=len(chosen) if chosen else graphs.TOP,
                        keys=chosen, by=info.breakdown)
        except KeyError as e:
            raise ViewError(f"no data for {info.breakdown}={e.args[0]} in {info.name} in this range") from None
        fig, scale = graphs.figure(b, spec)
        return fig, {"type": "graph", "width": b.bins.width, "next": b.bins.end, "scale": scale,
                     "keys": [k for k in b.keys if k != OTHER], "lines": b.keys}
    try:
        grid = build_grid(qr, start, end, max_cols=MAX_COLS, ncells=CELLS, keys=keys, axis=spec.axis,
                          outliers=spec.crop)
    except KeyError as e:
        raise ViewError(f"no data for {info.breakdown}={e.args[0]} in {info.name} in this range") from None
    fig = plot_heatmap.figure(grid)
    scale, label = plot_heatmap.display_scale(float(grid.edges[-1]), grid.unit)
    if spec.axis == "log":
        cell_h = (math.log10(grid.cells[-1]) - math.log10(grid.cells[0])) / CELLS
    else:
        cell_h = (grid.cells[-1] - grid.cells[0]) / CELLS
    return fig, {"type": "heatmap", "width": grid.bins.width, "next": grid.bins.end, "scale": scale,
                 "unit": grid.unit, "label": label, "edges": grid.edges.tolist(), "cell_h": float(cell_h),
                 "axis": spec.axis, "keys": keys}


def view(archive, spec: ViewSpec, start: int, end: int) -> dict:
    """{'figure', 'live', 'name', 'kind', 'start', 'end'}: the view over [start, end), at the
    level the CLI would read (the finest that covers the range in MAX_COLS columns)."""
    check_span(start, end)
    info, keys = _resolve(archive, spec)
    resolution = choose_bins(start, end, 1, MAX_COLS).width
    qr = _query(archive, info, start, end, resolution)
    fig, live = figure_for(spec, info, keys, qr, start, end)
    live.update(name=info.name, kind=info.kind, statistic=info.statistic, breakdown=info.breakdown,
                unit=info.unit, level=qr.level)
    return {"figure": fig.to_plotly_json(), "live": live, "start": start, "end": end}


def columns(archive, spec: ViewSpec, live: dict, after: int, now: int) -> tuple:
    """(columns, next): the view's columns from `after` (a column start) up to now, each
    {'t', 'x0', 'x1', ...}; the last one may be partial (re-sent as it fills). `next` is the
    start of the first column still to send."""
    info, keys = _resolve(archive, spec)
    width = int(live["width"])
    after = after - after % width
    if now <= after:
        return [], after
    check_span(after, now)
    qr = _query(archive, info, after, now, width if width > 1 else None)
    bins = choose_bins(after, now, qr.step, max(1, math.ceil((now - after) / width)))
    if bins.width != width:
        bins = TimeBins(after, width, math.ceil((now - after) / width))
    present = np.zeros(bins.ncols, bool)
    if qr.present.size:
        cols = (qr.times - bins.start) // width
        ok = (cols >= 0) & (cols < bins.ncols)
        present[cols[ok][qr.present[ok]]] = True
    out = []
    if live["type"] == "heatmap":
        edges = np.asarray(live["edges"], dtype=np.float64)
        row_h = np.diff(np.log10(edges)) if live["axis"] == "log" else np.diff(edges)
        sel = keys if not keys or set(keys) <= set(qr.keys) else []
        hist = column_histograms(qr, bins, sel) if len(qr.buckets) and len(select_keys(qr, sel or None)) \
            else np.zeros((bins.ncols, len(qr.buckets)), np.uint64)
        counts, _, _ = row_counts(hist, np.asarray(qr.buckets, np.int64), edges)
        density = counts * (live["cell_h"] / row_h)[:, None]
        for c in np.flatnonzero(present):
            t = int(bins.start + c * width)
            d = density[:, c]
            z = [round(math.log10(v), 5) if v > 0 else None for v in d]
            out.append({"t": t, "x0": _local(t), "x1": _local(t + width), "z": z,
                        "n": counts[:, c].astype(np.int64).tolist(), "total": int(hist[c].sum())})
    else:
        wanted = list(live["keys"])
        have = [k for k in wanted if k in qr.keys]
        b = compute(qr, bins.start, bins.end, max_cols=bins.ncols, top=max(len(have), 1),
                    keys=have, by=info.breakdown, bins=bins) if have else None
        for c in np.flatnonzero(present):
            t = int(bins.start + c * width)
            y = []
            for k in live["lines"]:
                v = b.series[b.keys.index(k), c] if b is not None and k in b.keys else float("nan")
                y.append(None if not np.isfinite(v) else float(v) / live["scale"])
            out.append({"t": t, "x": dt.datetime.fromtimestamp(t + width / 2).isoformat(), "y": y})
    # next: the last column sent when it may still fill, else the one after it; a column
    # still missing 5 s later is a gap, not waited for
    sent = np.flatnonzero(present)
    nxt = after
    if sent.size:
        last = int(bins.start + sent[-1] * width)
        nxt = last if last + width > now else last + width
    gap = (now - 5) - (now - 5) % width
    return out, max(nxt, gap)

def drill(archive, spec: ViewSpec, x0: str, x1: str, lo: float, hi: float, top: int = 8) -> dict:
    """The breakdown of the events inside a dragged rectangle (times on the page's axis,
    values in the dataset's unit), computed as `strata breakdown --range` computes it."""
    info, keys = _resolve(archive, spec)
    if info.kind != "heatmap":
        raise ViewError(f"{info.name} is a {info.kind}: drag over a heat map to break a band down")
    t0, t1 = sorted((parse_local(x0), parse_local(x1)))
    since, until = int(math.floor(t0)), int(math.ceil(t1))
    check_span(since, max(until, since + 1))
    lo, hi = sorted((max(float(lo), 0.0), max(float(hi), 0.0)))
    text = f"{int(math.floor(lo))}..{int(math.ceil(hi))}"
    try:
        selected = value_range.parse(text, info.unit)
    except ValueError as e:
        raise ViewError(str(e)) from None
    target = source.drill_target(archive, info)
    if target is None:
        raise ViewError(f"the archive holds no breakdown of {info.statistic}: create e.g. "
                        f"{info.statistic}[client] to break its bands down")
    tinfo, tkeys = _resolve(archive, ViewSpec(target))
    try:
        b, since, until = source.breakdown(archive, tinfo, tkeys, since, max(until, since + 1), True,
                                           max_cols=BREAKDOWN_MAX_COLS, top=top, percentile=99.0,
                                           value_range=selected)
    except click.ClickException as e:
        raise ViewError(e.format_message()) from None
    out = {k: v for k, v in to_json(b).items() if k not in ("times", "series")}
    out.update(target=target, since=since, until=until, range=text, label=selected.label(),
               command=f"strata breakdown '{target}' --range {text} --since {since} --until {until}")
    return out
