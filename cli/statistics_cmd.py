"""`strata statistics`: what can be collected on this host."""
import json
from dataclasses import asdict

import click

from strata.cli.archive_option import archive_errors
from strata.datasets import catalogue
from strata.datasets.openmetrics import family_name


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def statistics(as_json):
    """List the statistics datasets can collect here.

    For each: its unit, kind (heatmap: a latency or size distribution per
    second; counter: events per second; gauge: a level sampled each second),
    the breakdowns and filters it takes, the probe it needs, and whether this
    host supports it (or why not). The list comes from `strata-collect
    --catalogue`; without a built collector, the documented list is shown with
    support unknown. --json also names the series `strata collect --metrics`
    exports for each (a histogram's are NAME_bucket, a counter's NAME_total).
    """
    with archive_errors():
        stats, source = catalogue.load()
    if as_json:
        click.echo(json.dumps({"source": source, "statistics": [
            {**asdict(s), "openmetrics": family_name(s.statistic, s.unit, s.kind)} for s in stats]}, indent=2))
        return
    rows = [("STATISTIC", "UNIT", "KIND", "BREAKDOWNS", "SUPPORTED")]
    for s in stats:
        ok = {True: "yes", False: f"no: {s.reason}", None: "unknown"}[s.supported]
        rows.append((s.statistic, s.unit, s.kind, ",".join(s.breakdowns) or "-", ok))
    widths = [max(len(r[c]) for r in rows) for c in range(4)]
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4])
    click.echo(f"(from {source})")
