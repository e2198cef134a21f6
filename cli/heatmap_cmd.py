"""`strata heatmap`: a latency (size, offset) heat map of one dataset, in the
terminal, as HTML / PNG / SVG, or as JSON / CSV for scripts."""
import click

from strata.cli.archive_option import archive_option, open_archive, prometheus_option
from strata.cli.output import choose_format
from strata.cli.view_errors import user_errors
from strata.cli.views import draw_heatmap, heat_options, heat_view, output_options, refuse_time_view, time_options
from strata.heatmaps.errors import ViewError
from strata.views import lookup, times


@click.command("heatmap")
@click.argument("dataset")
@time_options
@click.option("--key", "keys", multiple=True, metavar="K",
              help="Only this breakdown key (client, op, device...); repeat to sum several.")
@heat_options
@output_options
@archive_option
@prometheus_option
def heatmap(dataset, last, since, until, keys, ymax, ymin, log_axis, outliers, percentiles, rows, fmt,
            as_json, as_csv, raw, output, self_contained, colour, archive_path, prometheus_url):
    """Heat map of DATASET: x = time, y = latency (or size, offset), colour = count.

    Latency maps use a log y-axis by default: bands decades apart (memory,
    flash, disk) keep rows of their own whatever a few slow outliers do;
    --linear with --outliers 99.9 crops the top instead, and says what it cut.
    Size and offset maps too where the values span 100x or more (4 KiB I/Os
    beside MiB ones), a linear axis otherwise.
    Rows are unions of whole log-linear buckets chosen for the range shown.
    A name the archive does not hold is derived from one it does, and says so:
    nfs.latency[client=10.0.0.3] is key 10.0.0.3 of nfs.latency[client],
    nfs.latency the sum of nfs.latency[op]. With --prometheus, the data comes
    from a Prometheus server that scrapes `strata collect --metrics`.
    In the HTML heat map, hovering a cell shows the `strata breakdown --range`
    command that breaks its latency (size) band down by key. Counters and
    gauges are graphs: `strata show` draws any dataset by its kind.
    """
    fmt = choose_format(fmt, as_json, as_csv, output)
    with user_errors():
        refuse_time_view(dataset)
        span = times.time_range(last, since, until)
        with open_archive(archive_path, prometheus_url=prometheus_url) as reader:
            src, keys = lookup.resolve(reader, dataset, keys)
            if src.info.kind != "heatmap":
                raise ViewError(f"{src.wanted} is a {src.info.kind}, drawn as a graph over time: "
                                f"strata show '{src.wanted}'")
            view = heat_view(src.info.unit, keys, ymax, ymin, log_axis, outliers, percentiles)
            draw_heatmap(reader, src, view, span, fmt, output, colour, rows, archive_path, prometheus_url,
                         raw, self_contained)
