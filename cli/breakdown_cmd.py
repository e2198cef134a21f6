"""`strata breakdown`: one series per client / op / tier / device / file over
time, with a top-N table; terminal, HTML/PNG/SVG, JSON or CSV. With --range, of a
heat map's events whose latency (size, offset) lies in a range: drill-down."""
import click

from strata.cli.archive_option import archive_option, open_archive, prometheus_option
from strata.cli.output import choose_format
from strata.cli.view_errors import user_errors
from strata.cli.views import draw_graph, graph_options, output_options, refuse_time_view, refuse_unused, time_options
from strata.datasets import catalogue, names
from strata.heatmaps import figures, value_range
from strata.heatmaps.errors import ViewUsageError
from strata.views import lookup, times

BY = tuple(catalogue.load().dimensions)  # every field a dataset can be broken down by


def dataset_name(reader, text: str, by: str | None, drill: bool):
    """The name to read, parsed once: 'nfs.ops' + --by client -> 'nfs.ops[client]'; a name with its own
    breakdown stays. Without --by, a name without a breakdown is shown whole (one series),
    or, drilling with --range, by the first breakdown of it the archive holds (within its
    filters: a key with no finer breakdown is its own events)."""
    parsed = lookup.parse_name(reader, text)
    fields = lookup.breakdown_fields(parsed)
    if parsed.breakdown:
        if by and by != parsed.breakdown:
            raise ViewUsageError(f"{text} is broken down by {parsed.breakdown}, not {by}")
        return parsed
    if not by:
        if drill:
            return lookup.drill_target(reader, lookup.resolve(reader, parsed)[0]) or parsed
        return parsed
    filtered = dict(parsed.filters)
    if by in filtered:
        raise ViewUsageError(f"{parsed} holds only {by}={filtered[by]}"
                             + lookup.breakdown_hint(reader, parsed, "; break it down by another field: {}"))
    if by not in fields:
        raise ViewUsageError(f"{parsed.statistic} cannot be broken down by {by}; "
                             + (f"--by {'|'.join(fields)}" if fields else "it has no breakdown: "
                                f"strata show '{parsed}'"))
    return names.DatasetName(parsed.statistic, parsed.filters, by)


def _value_range(text, info):
    """The ValueRange of --range for dataset info, or None without one."""
    if text is None:
        return None
    if info.kind != "heatmap":
        raise ViewUsageError(f"--range needs a heat-map statistic (latency, size, offset); "
                             f"{info.statistic} is a {info.kind}")
    try:
        return value_range.parse(text, info.unit)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--range") from None


@click.command("breakdown")
@click.argument("dataset")
@click.option("--by", type=click.Choice(BY), help="Breakdown: one series per key of this field (client, op, tier, "
              "device, file, ...); without it a name with no breakdown is one series.")
@click.option("--key", "keys", multiple=True, metavar="K", help="Only this key; repeat to compare keys (lines).")
@graph_options
@click.option("--percentile", type=click.FloatRange(0, 100, min_open=True), default=99.0, show_default=True,
              help="For latency/size datasets: the percentile plotted per key.")
@click.option("--range", "range_text", metavar="LO..HI",
              help="For latency/size/offset datasets: per key, the events whose value lies in [LO, HI), "
                   "e.g. 10ms.., ..200us, 1ms..5ms, 64KiB.., ..4k (k, KiB = 1024; kB = 1000; bare numbers "
                   "are ns or bytes). The ends snap out to the histogram's bucket edges.")
@time_options
@output_options
@archive_option
@prometheus_option
@click.pass_context
def breakdown(ctx, dataset, by, keys, style, top, csv_table, percentile, range_text, last, since, until, fmt, as_json,
              as_csv, raw, output, self_contained, colour, archive_path, prometheus_url):
    """Break DATASET down by client, op, tier, device, file or process.

    Counters (nfs.ops, disk.ops) show ops/s per key, stacked by default;
    gauges their level; heat-map statistics (nfs.latency...) a percentile per
    key as lines. With --range, a heat-map statistic shows per key the ops/s
    whose latency (size, offset) lies in the range, stacked, and what share of
    the key's own ops that is: `--range 10ms..` answers "who made the slow
    ops?" (without --by: by the first breakdown of it the archive holds).
    A name the archive does not hold is derived from one it does, and says so.
    """
    fmt = choose_format(fmt, as_json, as_csv, output)
    if raw:
        raise click.UsageError("--raw adds a heat map's llhist buckets to its --json; a breakdown has none")
    with user_errors():
        refuse_time_view(dataset)
        span = times.time_range(last, since, until)
        with open_archive(archive_path, prometheus_url=prometheus_url) as reader:
            name = dataset_name(reader, dataset, by, range_text is not None)
            src, keys = lookup.resolve(reader, name, keys)
            if src.info.kind != "heatmap":
                refuse_unused(ctx, ("percentile",), f"{src.wanted}, a {src.info.kind} (it picks the percentile "
                              "per key of a latency, size or offset statistic)")
            elif range_text is not None:
                refuse_unused(ctx, ("percentile",), "a --range drill-down (per key: the events in the range)")
            view = figures.View(keys=tuple(keys) if keys else None, as_graph=True, style=style, top=top,
                                percentile=percentile, value_range=_value_range(range_text, src.info),
                                by=src.wanted.breakdown)
            draw_graph(reader, src, view, span, fmt, output, colour, "breakdown", csv_table, self_contained)
