"""`strata show`: any dataset drawn by its kind — a heat map for latency, size and
offset statistics, a graph over time for counters and gauges."""
import click

from strata.cli.archive_option import archive_option, open_archive, prometheus_option
from strata.cli.output import choose_format
from strata.cli.view_errors import user_errors
from strata.cli.views import (GRAPH_ONLY, HEAT_ONLY, draw_graph, draw_heatmap, graph_options, heat_options,
                              heat_view, output_options, refuse_unused, time_options)
from strata.heatmaps import figures, time_went
from strata.views import lookup, times
from strata.views import time_went as time_went_read


@click.command("show")
@click.argument("dataset")
@time_options
@click.option("--key", "keys", multiple=True, metavar="K",
              help="Only this breakdown key; repeat to compare keys (graphs: a line each).")
@graph_options
@heat_options
@output_options
@archive_option
@prometheus_option
@click.pass_context
def show(ctx, dataset, last, since, until, keys, style, top, csv_table, ymax, ymin, log_axis, outliers, percentiles,
         rows, fmt, as_json, as_csv, raw, output, self_contained, colour, archive_path, prometheus_url):
    """Draw DATASET by its kind: every dataset `strata datasets create` makes.

    Latency, size and offset statistics are heat maps (the options of
    `strata heatmap`); counters are ops/s over time, stacked per key (a line
    per key with two or more --key); gauges their level over time. Without a
    breakdown a dataset is one series. A name the archive does not hold is
    derived from one it does (nfs.ops from nfs.ops[client]) and says so.
    To break a dataset down by another field, or to drill into a latency
    band, use `strata breakdown`. `time:nfsd`, `time:fs` or `time:disk`:
    where each op's time went, the mean per component stacked (network,
    queue, service, file system, disk) and each one's p99.
    """
    fmt = choose_format(fmt, as_json, as_csv, output)
    with user_errors():
        span = times.time_range(last, since, until)
        with open_archive(archive_path, prometheus_url=prometheus_url) as reader:
            if time_went.family_of(dataset):  # time:nfsd, where each op's time went (heatmaps/time_went.py)
                draw_time_went(reader, time_went.family_of(dataset), span, fmt, output, colour)
                return
            src, keys = lookup.resolve(reader, dataset, keys)
            if src.info.kind == "heatmap":
                refuse_unused(ctx, GRAPH_ONLY, f"{src.wanted}, a heat map (a graph per key: strata breakdown)")
                view = heat_view(src.info.unit, keys, ymax, ymin, log_axis, outliers, percentiles)
                if csv_table:
                    raise click.UsageError("--table picks a graph's table for --csv; a heat map has none")
                draw_heatmap(reader, src, view, span, fmt, output, colour, rows, archive_path, prometheus_url,
                             raw, self_contained)
                return
            refuse_unused(ctx, HEAT_ONLY, f"{src.wanted}, a {src.info.kind} drawn as a graph over time")
            view = figures.View(keys=tuple(keys) if keys else None, style=style, top=top,
                                by=src.wanted.breakdown)
            if raw:
                raise click.UsageError("--raw adds a heat map's llhist buckets to its --json; "
                                       f"{src.wanted} is a {src.info.kind}")
            draw_graph(reader, src, view, span, fmt, output, colour, csv_table=csv_table,
                       self_contained=self_contained)


def draw_time_went(reader, family, span, fmt, output, colour):
    """time:FAMILY: the stacked mean time per op of each component, as text, JSON, CSV or a figure."""
    import sys

    from strata.cli.output import emit_text, write_figure
    from strata.heatmaps import termcaps
    start, end, _ = span
    width, height = termcaps.size()
    bins, results = time_went_read.read(reader, family, start, end, width - 11 if fmt == "term" else 300)
    t = time_went_read.build(family, bins, results)
    if fmt in ("term", "json", "csv"):
        mode = termcaps.colour_mode(sys.stdout if output is None else None, colour) if fmt == "term" else "none"
        emit_text(time_went.render_text(t, fmt, mode, width, height), output, color=mode != "none")
    else:
        from strata.heatmaps import plot_breakdown
        write_figure(plot_breakdown.figure(t.mean), output, f"time-{family}", fmt, False)
