"""`strata statistics`: what can be collected on this host."""
import subprocess
from dataclasses import asdict

import click

from strata.cli import table
from strata.cli.archive_option import archive_errors
from strata.lab.binaries import MissingBinary, find_binary
from strata.datasets import catalogue
from strata.datasets.errors import ArchiveError
from strata.heatmaps import json_out
from strata.prometheus.openmetrics import family_name


def _with_support() -> tuple:
    """(statistics, source): with this host's support from strata-collect when it is built."""
    try:
        binary = find_binary("strata-collect")
    except MissingBinary:
        return list(catalogue.load().statistics), "catalogue (strata-collect is not built: support unknown)"
    try:
        proc = subprocess.run([binary, "--catalogue"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ArchiveError(f"cannot run {binary} --catalogue: {e}") from None
    if proc.returncode != 0:
        raise ArchiveError(f"{binary} --catalogue failed: {proc.stderr.strip()[:200]}")
    return catalogue.with_support(proc.stdout), binary


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def statistics(as_json):
    """List the statistics datasets can collect here.

    For each: its unit, kind (heatmap: a latency or size distribution per
    second; counter: events per second; gauge: a level sampled each second),
    the breakdowns and filters it takes, the probe it needs, and whether this
    host supports it (or why not, as `strata-collect --catalogue` says;
    without a built collector, support is unknown). --json also names the
    series `strata collect --metrics` exports for each (a histogram's are
    NAME_bucket, a counter's NAME_total) and lists the valid key texts of
    each closed field (op names, tiers, hit/miss).
    """
    with archive_errors():
        stats, source = _with_support()
    if as_json:
        cat = catalogue.load()
        click.echo(json_out.dumps(json_out.document("statistics", {"source": source, "statistics": [
            {**asdict(s), "openmetrics": family_name(s.statistic, s.unit, s.kind)} for s in stats],
            "fields": cat.dimensions, "keysets": {k: list(v) for k, v in cat.keysets.items()}})))
        return
    rows = [("STATISTIC", "UNIT", "KIND", "BREAKDOWNS", "SUPPORTED")]
    for s in stats:
        ok = {True: "yes", False: f"no: {s.reason}", None: "unknown"}[s.supported]
        rows.append((s.statistic, s.unit, s.kind, ",".join(s.breakdowns) or "-", ok))
    for line in table.lines(rows, flexible=(3, 4)):
        click.echo(line)
    click.echo(f"(from {source})")
