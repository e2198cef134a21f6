"""`strata collect`: the collection daemon's front end (runs strata-collect, fills the archive)."""
import signal

import click

from strata.cli.archive_option import archive_errors, archive_option
from strata.cli.binaries import MissingBinary, find_binary
from strata.datasets.archive import Archive
from strata.datasets.collector import Collector
from strata.datasets.lock import CollectorLock
from strata.datasets.paths import default_archive


@click.command()
@archive_option
@click.option("--engine", metavar="PATH", type=click.Path(dir_okay=False),
              help="strata-engine binary whose USDT probes NFS, ARC, L2ARC and ZIL statistics use "
                   "(default: the one strata-collect finds).")
@click.option("--engine-pid", type=click.IntRange(min=1), metavar="PID",
              help="The one strata-engine process to probe (default: the newest one running).")
@click.option("--collector", "collector_bin", metavar="PATH", type=click.Path(dir_okay=False),
              help="strata-collect program to run (default: build/bin, then PATH).")
def collect(archive_path, engine, engine_pid, collector_bin):
    """Collect the archive's active datasets every second until stopped.

    Runs strata-collect (which loads and attaches only the probes the active
    datasets need) and writes each second it reports into the archive, with
    minute and hour rollups. Datasets created, suspended, resumed or destroyed
    by other strata commands take effect within two seconds; retention is
    enforced every minute. One collector per archive (lock: ARCHIVE.lock).
    SIGTERM or Ctrl-C stops it cleanly; a full disk stops it with a message
    and an intact archive. Needs root (BPF).
    """
    path = archive_path or default_archive(for_reading=False)
    with archive_errors():
        try:
            program = collector_bin or find_binary("strata-collect")
        except MissingBinary as e:
            raise click.ClickException(str(e)) from None
        if engine and engine_pid:
            raise click.UsageError("give --engine or --engine-pid, not both")
        command = [program] + (["--engine", engine] if engine else []) \
            + (["--engine-pid", str(engine_pid)] if engine_pid else [])
        with CollectorLock(path), Archive.open(path, readonly=False) as archive:
            collector = Collector(archive, command)
            signal.signal(signal.SIGTERM, collector.stop)
            signal.signal(signal.SIGINT, collector.stop)
            click.echo(f"strata collect: archiving to {path}", err=True)
            status = collector.run()
    raise SystemExit(status)
