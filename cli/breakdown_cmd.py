"""`strata breakdown`: one series per client / op / tier / device / file over
time, with a top-N table; terminal, HTML/PNG/SVG or JSON. With --range, of a
heat map's events whose latency (size, offset) lies in a range: drill-down."""
import sys

import click

from strata.cli.archive_option import archive_option, open_archive, prometheus_option
from strata.cli.output import choose_format, emit_text, write_figure
from strata.datasets import catalogue, names
from strata.datasets.errors import ArchiveError
from strata.heatmaps import csv_out, json_out, outage_marks, source, termcaps, value_range
from strata.heatmaps.breakdown import compute, to_json

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
@click.option("--top", type=click.IntRange(0), default=8, show_default=True,
              help="Series for the N busiest keys; the rest are summed as 'other' (0: every key).")
@click.option("--percentile", type=click.FloatRange(0, 100, min_open=True), default=99.0, show_default=True,
              help="For latency/size datasets: the percentile plotted per key.")
@click.option("--range", "range_text", metavar="LO..HI",
              help="For latency/size/offset datasets: per key, the events whose value lies in [LO, HI), "
                   "e.g. 10ms.., ..200us, 1ms..5ms, 64KiB.., ..4k (k, KiB = 1024; kB = 1000; bare numbers "
                   "are ns or bytes). The ends snap out to the histogram's bucket edges.")
@click.option("--last", metavar="DURATION", help="Range ending now (or at --until).  [default: 10m]")
@click.option("--since", metavar="TIME", help="Range start: -1h, 09:30, 2025-11-22T09:30, unix seconds.")
@click.option("--until", metavar="TIME", help="Range end (default now).")
@click.option("--format", "fmt", type=click.Choice(("term", "html", "png", "svg", "json", "csv")),
              help="Output format.  [default: -o's extension, else term]")
@click.option("--json", "as_json", is_flag=True, help="Print the series and the table as JSON (heatmaps/JSON.md).")
@click.option("--table", "csv_table", is_flag=True, help="With --format csv: the top-N table instead of the series.")
@click.option("--self-contained", is_flag=True, help="HTML: plotly.js inline (one file) instead of a copy beside it.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write to FILE; its extension (.html .png .svg .json .csv) sets the format.")
@click.option("--color", "colour", type=click.Choice(("auto",) + termcaps.MODES), default="auto", show_default=True)
@archive_option
@prometheus_option
def breakdown(dataset, by, style, top, percentile, range_text, last, since, until, fmt, as_json, csv_table,
              self_contained, output, colour, archive_path, prometheus_url):
    """Break DATASET down by client, op, tier, device, file or process.

    Counters (nfs.ops, disk.ops) show ops/s per key, stacked by default;
    heat-map statistics (nfs.latency...) show a percentile per key as lines.
    With --range, a heat-map statistic shows per key the ops/s whose latency
    (size, offset) lies in the range, stacked, and what share of the key's
    own ops that is: `--range 10ms..` answers "who made the slow ops?".
    """
    fmt = choose_format(fmt, as_json, output)
    as_json = fmt in ("json", "csv")
    if csv_table and fmt != "csv":
        raise click.UsageError("--table picks the table for --format csv")
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
        qr, start, end = source.query_window(archive, info, start, end, max_cols, explicit)
    b = compute(qr, start, end, max_cols=max_cols, top=top or max(len(qr.keys), 1), percentile=percentile, keys=keys,
                by=info.breakdown, value_range=selected)

    if fmt == "json":
        emit_text(json_out.dumps(json_out.document("breakdown", dict(to_json(b), spans=outage_marks.to_json(qr.spans)))),
                  output)
        return
    if fmt == "csv":
        doc = to_json(b)
        emit_text(csv_out.breakdown_table(doc) if csv_table else csv_out.breakdown_series(doc), output)
        return
    if fmt == "term":
        table = term_breakdown.table(b, mode, width)
        nlines = max(6, min(20, height - 9 - table.count("\n") - 2))
        graph = outage_marks.insert_note(term_breakdown.graph(b, mode, width, nlines, style), qr.spans)
        text = "\n".join(graph) + "\n\n" + table
        emit_text(text, output, color=mode != "none")
        return
    from strata.heatmaps import plot_breakdown
    write_figure(outage_marks.shade(plot_breakdown.figure(b, style), qr.spans), output, f"breakdown-{info.name}", fmt, self_contained)
