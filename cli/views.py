"""What `strata show`, `heatmap` and `breakdown` share: their time, output and
heat-map options, and drawing a dataset's figure model (heatmaps/figures.py) to the
terminal, HTML/PNG/SVG, JSON or CSV."""
import shlex
import sys

import click

from strata.cli.output import emit_text, write_figure
from strata.heatmaps import clock, figures, grid_json, json_out, outage_marks, table_csv, termcaps, time_went
from strata.heatmaps.errors import ViewError, ViewUsageError
from strata.heatmaps.units import parse_value
from strata.views import lookup, window

FORMATS = ("term", "html", "png", "svg", "json", "csv")


def time_options(f):
    f = click.option("--until", metavar="TIME", help="Range end (default now).")(f)
    f = click.option("--since", metavar="TIME", help="Range start: -1h, 09:30, 2025-11-22T09:30, unix seconds.")(f)
    return click.option("--last", metavar="DURATION",
                        help="Range ending now (or at --until): 30s, 10m, 2h, 1d.  [default: 10m, from the "
                             "dataset's creation when later, at the newest data when none since]")(f)


def output_options(f):
    f = click.option("--color", "colour", type=click.Choice(("auto",) + termcaps.MODES), default="auto",
                     show_default=True, help="Terminal colours; NO_COLOR and pipes mean none.")(f)
    f = click.option("--self-contained", is_flag=True,
                     help="HTML: plotly.js inside the file (one file to send) instead of one plotly.min.js "
                          "beside the HTML files of a folder.")(f)
    f = click.option("-o", "--output", type=click.Path(dir_okay=False),
                     help="Write to FILE; its extension (.html .png .svg .json .csv .txt) sets the format "
                          "(html/png/svg default: a file named after the dataset); 'wrote FILE' on stderr.")(f)
    f = click.option("--raw", is_flag=True, help="Heat maps' JSON: each column's llhist buckets too, as stored.")(f)
    f = click.option("--csv", "as_csv", is_flag=True,
                     help="Print CSV: a heat map's buckets per column, a graph's series per key (--table: its table).")(f)
    f = click.option("--json", "as_json", is_flag=True,
                     help="Print the figure's data as JSON (heatmaps/JSON.md).")(f)
    return click.option("--format", "fmt", type=click.Choice(FORMATS),
                        help="Output format.  [default: -o's extension, else term]")(f)


class _EitherFlag(click.Option):
    """A --this/--that flag given both ways is refused as a conflict (click keeps the last)."""

    def add_to_parser(self, parser, ctx):
        self.multiple = True           # every occurrence kept, as a list
        try:
            super().add_to_parser(parser, ctx)
        finally:
            self.multiple = False

    def consume_value(self, ctx, opts):
        value, source = super().consume_value(ctx, opts)
        if isinstance(value, list):
            if len(set(value)) > 1:
                raise click.UsageError(f"{self.opts[0]} and {self.secondary_opts[0]} conflict: give one", ctx)
            value = value[0]
        return value, source


def heat_options(f):
    f = click.option("--rows", type=click.IntRange(2, 2000), help="Number of y cells (default: fit the terminal).")(f)
    f = click.option("--percentiles", default="", metavar="P,P,...", help="Overlay percentile lines, e.g. 50,99,99.9.")(f)
    f = click.option("--outliers", type=click.FloatRange(0, 100, min_open=True, max_open=True), metavar="P",
                     help="Crop the y-axis at the P-th percentile (e.g. 99.9) and report what lies above.")(f)
    f = click.option("--log/--linear", "log_axis", default=None, cls=_EitherFlag,
                     help="Logarithmic or linear y-axis.  [default: log for latency, and for size, offset spanning 100x or more]")(f)
    f = click.option("--ymin", metavar="VALUE", help="Bottom of the y-axis (default 0, or the data's lowest bucket on a log axis).")(f)
    return click.option("--ymax", default="auto", show_default=True, metavar="auto|VALUE",
                        help="Top of the y-axis: auto, or a value such as 10ms, 500us, 64KiB.")(f)


def graph_options(f):
    f = click.option("--table", "csv_table", is_flag=True, help="With --csv: the graph's top-N table, not its series.")(f)
    f = click.option("--top", type=click.IntRange(0, None), default=8, show_default=True,
                     help="Series for the N busiest keys, the rest summed as 'other'; 0: every key.")(f)
    return click.option("--graph", "style", type=click.Choice(("stacked", "line")),
                        help="Stacked areas (counters' default) or a line per key (gauges, percentiles, "
                             "and two or more --key: compare).")(f)


HEAT_ONLY = ("ymax", "ymin", "log_axis", "outliers", "percentiles", "rows")   # heat_options'
GRAPH_ONLY = ("style", "top")                                                  # graph_options'


def refuse_time_view(dataset: str) -> None:
    """A time:FAMILY name given to heatmap or breakdown: one line pointing at strata show."""
    if time_went.family_of(dataset):
        raise ViewError(f"{dataset} is a graph of each op's time by component: strata show {dataset}")


def refuse_unused(ctx, params, what: str) -> None:
    """A usage error naming the first of params given on the command line, which does nothing
    for what is shown: '--ymax does nothing for WHAT' (WHAT: 'nfs.ops[client], a counter ...')."""
    given = [p for p in ctx.command.params if p.name in params and
             ctx.get_parameter_source(p.name) in (click.core.ParameterSource.COMMANDLINE,
                                                  click.core.ParameterSource.ENVIRONMENT)]
    if given:
        raise ViewUsageError(f"{'/'.join(given[0].opts + given[0].secondary_opts)} does nothing for {what}")


def parse_percentiles(text: str) -> tuple:
    """'50,99,99.9' -> (50.0, 99.0, 99.9); each in (0, 100], at most 4."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            p = float(part)
        except ValueError:
            raise click.BadParameter(f"{part!r} is not a number", param_hint="--percentiles") from None
        if not 0 < p <= 100:
            raise click.BadParameter(f"{part} is not in (0, 100]", param_hint="--percentiles")
        out.append(p)
    if len(out) > 4:
        raise click.BadParameter("at most 4 percentiles", param_hint="--percentiles")
    return tuple(out)


def _value(text, unit, option):
    try:
        return parse_value(text, unit)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint=option) from None


def heat_view(unit: str, keys, ymax, ymin, log_axis, outliers, percentiles) -> figures.View:
    """The heat-map View of the heat options, values in the dataset's unit."""
    if ymax != "auto" and outliers is not None:
        raise ViewUsageError("give --ymax or --outliers, not both")
    top = None if ymax == "auto" else _value(ymax, unit, "--ymax")
    bottom = None if ymin is None else _value(ymin, unit, "--ymin")
    if top is not None and bottom is not None and bottom >= top:
        raise ViewUsageError(f"--ymin {ymin} is not below --ymax {ymax}")
    return figures.View(keys=tuple(keys) if keys else None,
                        axis=None if log_axis is None else ("log" if log_axis else "linear"),
                        ymax=top, ymin=bottom,
                        outliers=outliers, percentiles=parse_percentiles(percentiles))


def _where(archive_path, prometheus_url) -> list:
    return (["--archive", archive_path] if archive_path else []) + \
           (["--prometheus", prometheus_url] if prometheus_url else [])


def _drill_command(reader, src, start, end, where) -> str | None:
    """`strata breakdown DATASET --since S --until E [--archive A]` for the dataset that
    breaks src's name down (itself when it has a breakdown), or None."""
    target = lookup.drill_target(reader, src)
    if target is None:
        return None
    return shlex.join(["strata", "breakdown", target, "--since", clock.typed(start), "--until", clock.typed(end), *where])


def draw_heatmap(reader, src, view, span, fmt, output, colour, rows, archive_path=None, prometheus_url=None,
                 raw=False, self_contained=False):
    """The heat map of src (derive.Source) over span (start, end, explicit) in format fmt
    (choose_format's)."""
    if raw and fmt != "json":
        raise ViewUsageError("--raw adds the llhist buckets to --json")
    as_json, as_csv = fmt == "json", fmt == "csv"
    if as_csv and view.percentiles:
        raise ViewUsageError("--percentiles draws lines on a picture and goes into --json; the CSV holds the cells only")
    start, end, explicit = span
    mode = termcaps.colour_mode(sys.stdout if output is None else None, colour) if fmt == "term" else "none"
    if as_json or as_csv:
        max_cols, ncells = grid_json.MAX_COLS, rows or grid_json.CELLS
    elif fmt == "term":
        from strata.heatmaps import term_heatmap
        width, height = termcaps.size()
        max_cols, ncells = term_heatmap.geometry(width, height, mode, rows)
    else:
        from strata.heatmaps import plot_heatmap
        max_cols, ncells = plot_heatmap.HTML_MAX_COLS, rows or plot_heatmap.HTML_CELLS
    qr, start, end = window.query_window(reader, src, start, end, max_cols, explicit)
    drill = (_drill_command(reader, src, start, end, _where(archive_path, prometheus_url))
             if fmt == "html" else None)
    grid = figures.heat_map(qr, start, end, view, max_cols=max_cols, ncells=ncells)
    if as_json:
        emit_text(json_out.dumps(json_out.document("heatmap", grid_json.to_json(grid, qr, raw))), output)
    elif as_csv:
        emit_text(table_csv.heat_map(grid, qr), output)
    elif fmt == "term":
        emit_text(term_heatmap.render(grid, mode, width), output, color=mode != "none")
    else:
        keys = list(view.keys or [])
        write_figure(plot_heatmap.figure(grid, drill), output,
                     f"heatmap-{src.wanted}" + (f"-{'-'.join(keys)}" if keys else ""), fmt, self_contained)


def draw_graph(reader, src, view, span, fmt, output, colour, stem="graph", csv_table=False, self_contained=False):
    """The graph of src (derive.Source) over span (start, end, explicit) in format fmt
    (choose_format's); outages marked as on heat maps."""
    if csv_table and fmt != "csv":
        raise ViewUsageError("--table picks the table for --csv")
    as_json, as_csv = fmt == "json", fmt == "csv"
    if as_csv and view.percentiles:
        raise ViewUsageError("--percentiles draws lines on a picture and goes into --json; the CSV holds the cells only")
    start, end, explicit = span
    mode = termcaps.colour_mode(sys.stdout if output is None else None, colour) if fmt == "term" else "none"
    width, height = termcaps.size()
    if fmt == "term" and not (as_json or as_csv):
        from strata.heatmaps import term_breakdown
        max_cols = width - term_breakdown.LEFT - 1
    else:
        from strata.heatmaps.plot_breakdown import BREAKDOWN_MAX_COLS as max_cols
    qr, start, end = window.query_window(reader, src, start, end, max_cols, explicit)
    b = figures.graph(qr, start, end, view, max_cols=max_cols)
    if as_json:
        from strata.heatmaps.breakdown import to_json
        doc = dict(to_json(b), spans=outage_marks.to_json(qr.spans))
        emit_text(json_out.dumps(json_out.document("breakdown", doc)), output)
    elif as_csv:
        emit_text(table_csv.table(b) if csv_table else table_csv.graph(b), output)
    elif fmt == "term":
        table = term_breakdown.table(b, mode, width)
        nlines = max(6, min(20, height - 9 - table.count("\n") - 2))
        graph = outage_marks.insert_note(term_breakdown.graph(b, mode, width, nlines), qr.spans)
        emit_text("\n".join(graph) + "\n\n" + table, output, color=mode != "none")
    else:
        from strata.heatmaps import plot_breakdown
        write_figure(outage_marks.shade(plot_breakdown.figure(b), qr.spans), output, f"{stem}-{src.wanted}", fmt,
                     self_contained)
