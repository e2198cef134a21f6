"""`strata breakdown`: one series per client / op / tier / device / file over
time, with a top-N table; terminal, HTML/PNG/SVG or JSON. With --range, of a
heat map's events whose latency (size, offset) lies in a range: drill-down."""
import json
import sys

import click

from strata.cli.archive_option import archive_option, open_archive, prometheus_option
from strata.cli.output import emit_text, write_figure
from strata.datasets import catalogue, names
from strata.datasets.errors import ArchiveError
from strata.heatmaps import source, termcaps, value_range
from strata.heatmaps.breakdown import to_json

BY = tuple(catalogue.load().dimensions)  # every field a dataset can be broken down by


def dataset_name(text: str, by: str | None) -> str:
    """'nfs.ops' + --by client -> 'nfs.ops[client]'; a name with its own breakdown stays."""
    try:
        parsed = names.parse(text)
    except ArchiveError as e:
        raise click.ClickException(str(e)) from None
    if parsed.breakdown:
        if by and by != parsed.breakdown:
            raise click.UsageError(f"{text} is broken down by {parsed.breakdown}, not {by}")
        return str(parsed)
    if not by:
        raise click.UsageError(f"say what to break {text} down by: --by {'|'.join(BY)}")
    return str(names.DatasetName(parsed.statistic, parsed.filters, by))


def _value_range(text, info):
    """The ValueRange of --range for dataset info, or None without one."""
    if text is None:
        return None
    if info.kind != "heatmap":
        raise click.UsageError(f"--range needs a heat-map statistic (latency, size, offset); "
                               f"{info.name} is a {info.kind}")
    try:
        return value_range.parse(text, info.unit)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--range") from None


@click.command("breakdown")
@click.argument("dataset")
@click.option("--by", type=click.Choice(BY), help="Breakdown: one series per key of this field (client, op, tier, device, file, ...).")
@click.option("--graph", "style", type=click.Choice(("stacked", "line")),
              help="Stacked areas (counters' default) or lines (percentiles' default).")
@click.option("--top", type=click.IntRange(1, 50), default=8, show_default=True,
              help="Series for the N busiest keys; the rest are summed as 'other'.")
@click.option("--percentile", type=click.FloatRange(0, 100, min_open=True), default=99.0, show_default=True,
              help="For latency/size datasets: the percentile plotted per key.")
@click.option("--range", "range_text", metavar="LO..HI",
              help="For latency/size/offset datasets: per key, the events whose value lies in [LO, HI), "
                   "e.g. 10ms.., ..200us, 1ms..5ms, 64KiB.., ..4k (k, KiB = 1024; kB = 1000; bare numbers "
                   "are ns or bytes). The ends snap out to the histogram's bucket edges.")
@click.option("--last", metavar="DURATION", help="Range ending now (or at --until).  [default: 10m]")
@click.option("--since", metavar="TIME", help="Range start: -1h, 09:30, 2025-11-22T09:30, unix seconds.")
@click.option("--until", metavar="TIME", help="Range end (default now).")
@click.option("--format", "fmt", type=click.Choice(("term", "html", "png", "svg")), default="term", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the series and the table as JSON.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to FILE.")
@click.option("--color", "colour", type=click.Choice(("auto",) + termcaps.MODES), default="auto", show_default=True)
@archive_option
@prometheus_option
def breakdown(dataset, by, style, top, percentile, range_text, last, since, until, fmt, as_json, output, colour,
              archive_path, prometheus_url):
    """Break DATASET down by client, op, tier, device, file or process.

    Counters (nfs.ops, disk.ops) show ops/s per key, stacked by default;
    heat-map statistics (nfs.latency...) show a percentile per key as lines.
    With --range, a heat-map statistic shows per key the ops/s whose latency
    (size, offset) lies in the range, stacked, and what share of the key's
    own ops that is: `--range 10ms..` answers "who made the slow ops?".
    """
    name = dataset_name(dataset, by)
    start, end, explicit = source.time_range(last, since, until)
    with open_archive(archive_path, prometheus_url=prometheus_url) as archive:
        info, keys = source.resolve(archive, name)
        selected = _value_range(range_text, info)
        rate = info.kind == "counter" or selected is not None
        style = style or ("stacked" if rate else "line")
        if style == "stacked" and not rate:
            raise click.UsageError(f"{info.name} gives percentiles, which do not add up: use --graph line")
        mode = termcaps.colour_mode(sys.stdout if output is None else None, colour) if fmt == "term" else "none"
        width, height = termcaps.size()
        if fmt == "term" and not as_json:
            from strata.heatmaps import term_breakdown
            max_cols = width - term_breakdown.LEFT - 1
        else:
            from strata.heatmaps.plot_breakdown import BREAKDOWN_MAX_COLS as max_cols
        b, start, end = source.breakdown(archive, info, keys, start, end, explicit, max_cols=max_cols, top=top,
                                         percentile=percentile, value_range=selected)

    if as_json:
        emit_text(json.dumps(to_json(b), indent=1), output)
        return
    if fmt == "term":
        table = term_breakdown.table(b, mode, width)
        nlines = max(6, min(20, height - 9 - table.count("\n") - 2))
        text = "\n".join(term_breakdown.graph(b, mode, width, nlines, style)) + "\n\n" + table
        emit_text(text, output, color=mode != "none")
        return
    from strata.heatmaps import plot_breakdown
    write_figure(plot_breakdown.figure(b, style), output, f"breakdown-{info.name}", fmt)
