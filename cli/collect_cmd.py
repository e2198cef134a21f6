"""`strata collect`: the collection daemon's front end (runs strata-collect, fills the archive)."""
import signal

import click

from strata.cli.archive_option import archive_errors, archive_option
from strata.cli.binaries import MissingBinary, find_binary
from strata.datasets.archive import Archive
from strata.datasets.collector import Collector
from strata.datasets.lock import CollectorLock
from strata.datasets.openmetrics import Exposition, MetricsServer, parse_address
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
@click.option("--wire-iface", "wire_ifaces", metavar="PATTERN", multiple=True,
              help="Interface (or fnmatch pattern, e.g. 'veth*') where wire.* statistics watch NFS "
                   "traffic; repeatable (default: every interface with an address, loopback included, "
                   "and those that appear later).")
@click.option("--wire-port", "wire_ports", metavar="PORT", type=click.IntRange(1, 65535), multiple=True,
              help="Server TCP port wire.* statistics follow; repeatable (default: 2049). Add the "
                   "server's MOUNT port to see MOUNT operations.")
@click.option("--metrics", "metrics_address", metavar="ADDRESS:PORT",
              help="Also serve the datasets as OpenMetrics at http://ADDRESS:PORT/metrics for "
                   "Prometheus (':9464' listens on all interfaces; port 0 picks a free one).")
@click.option("--metrics-digits", type=click.Choice(("2", "1")), default="2", show_default=True,
              help="Significant digits of the exported histogram bounds: llhist's own 2 "
                   "(90 a decade), or 1 (9 a decade, a tenth of the series).")
def collect(archive_path, engine, engine_pid, collector_bin, wire_ifaces, wire_ports, metrics_address,
            metrics_digits):
    """Collect the archive's active datasets every second until stopped.

    Runs strata-collect (which loads and attaches only the probes the active
    datasets need) and writes each second it reports into the archive, with
    minute and hour rollups. Datasets created, suspended, resumed or destroyed
    by other strata commands take effect within two seconds; retention is
    enforced every minute. One collector per archive (lock: ARCHIVE.lock).
    SIGTERM or Ctrl-C stops it cleanly; a full disk stops it with a message
    and an intact archive. Needs root (BPF).

    With --metrics, every archived second is also served as OpenMetrics for
    Prometheus to scrape: heat maps as histograms (llhist bucket bounds as
    `le`), counters and gauges as themselves, counted since the collector
    started.
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
            + (["--engine-pid", str(engine_pid)] if engine_pid else []) \
            + [a for i in wire_ifaces for a in ("--wire-iface", i)] \
            + [a for p in wire_ports for a in ("--wire-port", str(p))]
        try:
            listen = parse_address(metrics_address) if metrics_address else None
        except ValueError as e:
            raise click.BadParameter(str(e), param_hint="--metrics") from None
        with CollectorLock(path), Archive.open(path, readonly=False) as archive:
            exposition = Exposition(int(metrics_digits)) if listen else None
            server = _serve(exposition, *listen) if listen else None
            collector = Collector(archive, command, exposition=exposition)
            signal.signal(signal.SIGTERM, collector.stop)
            signal.signal(signal.SIGINT, collector.stop)
            click.echo(f"strata collect: archiving to {path}", err=True)
            if server:
                click.echo(f"strata collect: serving OpenMetrics at {server.url}", err=True)
            try:
                status = collector.run()
            finally:
                if server:
                    server.close()
    raise SystemExit(status)


def _serve(exposition, host, port):
    try:
        return MetricsServer(exposition, host, port)
    except OSError as e:
        raise click.ClickException(f"cannot serve metrics on {host}:{port}: {e.strerror}") from None
