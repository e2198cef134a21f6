"""`strata heatmap`: a latency (size, offset) heat map of one dataset, in the
terminal, as HTML / PNG / SVG, or as JSON for scripts."""
import shlex
import sys

import click

from strata.cli.archive_option import archive_option, open_archive, prometheus_option
from strata.cli.output import choose_format, emit_text, write_figure
from strata.heatmaps import grid_json, json_out, source, termcaps
from strata.heatmaps.rebin import build_grid
from strata.heatmaps.units import parse_value

FORMATS = ("term", "html", "png", "svg", "json", "csv")


def parse_percentiles(text: str) -> list:
    """'50,99,99.9' -> [50.0, 99.0, 99.9]; each in (0, 100]."""
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
    return out


def _value(text, unit, option):
    try:
        return parse_value(text, unit)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint=option) from None


def _drill_command(archive, info, start, end, archive_path, prometheus_url) -> str | None:
    """`strata breakdown DATASET --since S --until E [--archive A]` for the dataset that
    breaks info's statistic down (info itself when it has a breakdown), or None."""
    target = source.drill_target(archive, info)
    if target is None:
        return None
    where = (["--archive", archive_path] if archive_path else []) + \
            (["--prometheus", prometheus_url] if prometheus_url else [])
    return shlex.join(["strata", "breakdown", target, "--since", str(start), "--until", str(end), *where])


@click.command("heatmap")
@click.argument("dataset")
@click.option("--last", metavar="DURATION", help="Range ending now (or at --until): 30s, 10m, 2h, 1d.  [default: 10m]")
@click.option("--since", metavar="TIME", help="Range start: -1h, 09:30, 2025-11-22T09:30, unix seconds.")
@click.option("--until", metavar="TIME", help="Range end (default now).")
@click.option("--key", metavar="K", help="Only this breakdown key (client, op, device...).")
@click.option("--ymax", default="auto", show_default=True, metavar="auto|VALUE",
              help="Top of the y-axis: auto, or a value such as 10ms, 500us, 64KiB.")
@click.option("--ymin", metavar="VALUE", help="Bottom of the y-axis (default 0, or the data's lowest bucket with --log).")
@click.option("--log", "log_axis", is_flag=True, help="Logarithmic y-axis.")
@click.option("--outliers", type=click.FloatRange(0, 100, min_open=True, max_open=True), metavar="P",
              help="Crop the y-axis at the P-th percentile (e.g. 99.9) and report what lies above.")
@click.option("--percentiles", default="", metavar="P,P,...", help="Overlay percentile lines, e.g. 50,99,99.9.")
@click.option("--rows", type=click.IntRange(2, 2000), help="Number of y cells (default: fit the terminal).")
@click.option("--format", "fmt", type=click.Choice(FORMATS),
              help="Output format.  [default: -o's extension, else term]")
@click.option("--json", "as_json", is_flag=True,
              help="Print the grid as JSON (heatmaps/JSON.md): column times, row edges, counts in total and per key.")
@click.option("--raw", is_flag=True, help="With --json: each column's llhist buckets too, as stored.")
@click.option("--self-contained", is_flag=True, help="HTML: plotly.js inline (one file) instead of a copy beside it.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Write to FILE; its extension (.html .png .svg .json .csv) sets the format "
                   "(html/png/svg default: heatmap-DATASET.FMT).")
@click.option("--color", "colour", type=click.Choice(("auto",) + termcaps.MODES), default="auto",
              show_default=True, help="Terminal colours; NO_COLOR and pipes mean none.")
@archive_option
@prometheus_option
def heatmap(dataset, last, since, until, key, ymax, ymin, log_axis, outliers, percentiles, rows, fmt,
            as_json, raw, self_contained, output, colour, archive_path, prometheus_url):
    """Heat map of DATASET: x = time, y = latency (or size, offset), colour = count.

    Rows are unions of whole log-linear buckets chosen for the range shown.
    A filter naming one key of a broken-down dataset drills down into it:
    nfs.latency[client=10.0.0.3] reads nfs.latency[client] when only that exists.
    With --prometheus, the data comes from a Prometheus server that scrapes
    `strata collect --metrics`, at the resolution of its scrapes.
    In the HTML heat map, hovering a cell shows the `strata breakdown --range`
    command that breaks its latency (size) band down by key.
    """
    marks = parse_percentiles(percentiles)
    fmt = choose_format(fmt, as_json, output)
    as_json = fmt in ("json", "csv")
    if raw and fmt != "json":
        raise click.UsageError("--raw adds the llhist buckets to --json")
    if ymax != "auto" and outliers is not None:
        raise click.UsageError("give --ymax or --outliers, not both")
    start, end, explicit = source.time_range(last, since, until)
    with open_archive(archive_path, prometheus_url=prometheus_url) as archive:
        info, keys = source.resolve(archive, dataset, key)
        if info.kind != "heatmap":
            raise click.ClickException(f"{info.name} is a {info.kind}, not a heat-map statistic; "
                                       f"try `strata breakdown {info.name}`")
        top = None if ymax == "auto" else _value(ymax, info.unit, "--ymax")
        bottom = None if ymin is None else _value(ymin, info.unit, "--ymin")
        if top is not None and bottom is not None and bottom >= top:
            raise click.UsageError(f"--ymin {ymin} is not below --ymax {ymax}")
        stream = sys.stdout if output is None else None
        mode = termcaps.colour_mode(stream, colour) if fmt == "term" else "none"
        if as_json:
            max_cols, ncells = grid_json.MAX_COLS, rows or grid_json.CELLS
        elif fmt == "term":
            from strata.heatmaps import term_heatmap
            width, height = termcaps.size()
            max_cols, ncells = term_heatmap.geometry(width, height, mode, rows)
        else:
            from strata.heatmaps import plot_heatmap
            max_cols, ncells = plot_heatmap.HTML_MAX_COLS, rows or plot_heatmap.HTML_CELLS

        qr, start, end = source.query_window(archive, info, start, end, max_cols, explicit)
        drill = _drill_command(archive, info, start, end, archive_path, prometheus_url) if fmt == "html" else None
    try:
        grid = build_grid(qr, start, end, max_cols=max_cols, ncells=ncells, keys=keys,
                          axis="log" if log_axis else "linear", ymin=bottom, ymax=top,
                          outliers=outliers, percentiles=marks)
    except KeyError as e:
        seen = ", ".join(qr.keys[:10]) + (" ..." if len(qr.keys) > 10 else "") if qr.keys else "none"
        raise click.ClickException(f"no data for {info.breakdown}={e.args[0]} in {info.name} in this range; "
                                   f"keys with data: {seen}") from None
    except ValueError as e:
        raise click.UsageError(str(e)) from None

    if fmt == "json":
        emit_text(json_out.dumps(json_out.document("heatmap", grid_json.to_json(grid, qr, raw=raw))), output)
        return
    if fmt == "csv":
        emit_text(grid_json.to_csv(grid), output)
        return
    if fmt == "term":
        emit_text(term_heatmap.render(grid, mode, width), output, color=mode != "none")
        return
    write_figure(plot_heatmap.figure(grid, drill), output,
                 f"heatmap-{info.name}" if not keys else f"heatmap-{info.name}-{keys[0]}", fmt, self_contained)
