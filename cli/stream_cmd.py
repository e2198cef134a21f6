"""`strata stream`: one line per second per dataset (and key), as `iostat 1` and
`nfsstat` users expect; no terminal needed, flushed line by line into a pipe or log."""
import csv
import json
import sys
import time

import click

from strata.cli import table
from strata.cli.archive_option import archive_option, open_archive
from strata.cli.view_errors import user_errors
from strata.heatmaps import json_out, stream_lines
from strata.views import lookup, times, window

LAG_S = 2   # a second is printed once the collector (writing every second) has had time to store it


@click.command("stream")
@click.argument("datasets", nargs=-1, required=True)
@click.option("--since", metavar="TIME", help="Start from this past second (-10m, 09:30, unix seconds), then follow.")
@click.option("--count", type=click.IntRange(1), metavar="N", help="Stop after N seconds.")
@click.option("--top", type=click.IntRange(0), default=10, show_default=True,
              help="Keys per dataset and second, busiest first (0: all).")
@click.option("--format", "fmt", type=click.Choice(("text", "json", "csv")), default="text", show_default=True,
              help="json: one object per line (heatmaps/JSON.md, strata.stream); csv: a header, then rows.")
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@click.option("--csv", "as_csv", is_flag=True, help="Same as --format csv.")
@archive_option
@click.pass_context
def stream(ctx, datasets, since, count, top, fmt, as_json, as_csv, archive_path):
    """Print one line per second for each of DATASETS: ops/s, p50, p99, p99.9
    (heat maps), a gauge's value; a dataset with a breakdown prints one line per
    key with events that second. Times are ISO 8601 with their zone.

    As iostat -x: BYTES/S of a size heat map (disk.size[op]: rMB/s and wMB/s),
    DEPTH of a latency heat map, the requests in its layer on average (its
    latencies summed per second; disk.queue + disk.latency: aqu-sz). Shown when
    the terminal is wide enough (always in --json and --csv); computed from the
    buckets' midpoints, within 5%.
    """
    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    flag = "json" if as_json else "csv" if as_csv else None
    if flag and fmt not in ("text", flag):
        raise click.UsageError(f"give --{flag} or --format {fmt}, not both")
    fmt = flag or fmt
    now = int(time.time())
    with user_errors():
        start = times.time_range(None, since, None, now=now)[0] if since is not None else now - LAG_S
    with open_archive(archive_path) as archive, user_errors():
        sources = [lookup.resolve(archive, name)[0] for name in datasets]
        for s in sources:     # a derived name says so, as show/heatmap/breakdown do; stdout stays the data's
            if s.note:
                click.echo(f"strata stream: {s.wanted}: {s.note}", err=True)
        _follow(archive, sources, start, count, top, fmt, ctx.meta.get("utc", False))


def _follow(archive, sources, next_t, count, top, fmt, utc):
    """Prints each second of sources (derive.Source) from next_t on, once it is stored."""
    width = stream_lines.fit([str(s.wanted) for s in sources], any(s.info.kind == "gauge" for s in sources),
                             table.width(), utc, [stream_lines.sums_what(s.info) for s in sources])
    writer = csv.DictWriter(sys.stdout, stream_lines.COLUMNS, lineterminator="\n") if fmt == "csv" else None
    if fmt == "text":
        click.echo(stream_lines.text_header(width))
    elif writer:
        writer.writeheader()
    printed = 0
    try:
        while count is None or printed < count:
            ready = int(time.time()) - LAG_S + 1            # seconds before this are complete
            upto = min(ready, next_t + (count - printed if count else ready))
            if upto > next_t:
                queried = [window.query(archive, s, next_t, upto, 1) for s in sources]
                for t in range(next_t, upto):
                    for qr in queried:
                        for r in stream_lines.records(qr, t, t + 1, top):
                            _print(r, fmt, utc, width, writer)
                printed += upto - next_t
                next_t = upto
                sys.stdout.flush()
                continue
            time.sleep(max(next_t + LAG_S - time.time(), 0.05))
    except KeyboardInterrupt:
        pass


def _print(r, fmt, utc, width, writer):
    if fmt == "text":
        click.echo(stream_lines.text_line(r, utc, width))
        return
    row = json_out.clean({"time": stream_lines.stamp(r["time"], utc), "unix": r["time"],
                          **{k: v for k, v in r.items() if k != "time"}})
    if fmt == "json":
        click.echo(json.dumps(json_out.document("stream", row), ensure_ascii=False))
    else:
        del row["unix"]
        writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
