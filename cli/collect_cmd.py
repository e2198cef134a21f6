"""`strata collect`: the collection daemon's front end (runs strata-collect, fills the archive)."""
import os
import signal
import subprocess
from contextlib import contextmanager

import click

from strata.cli.archive_option import archive_errors, archive_option
from strata.lab.binaries import MissingBinary, find_binary
from strata.lab.logs import say
from strata.cli.collect_config import FLAGS, ConfigError, load, merged
from strata.datasets.archive import Archive
from strata.collect.collector import Collector
from strata.collect.ensure import ensure
from strata.datasets.errors import ArchiveError
from strata.collect.lock import CollectorLock
from strata.prometheus import native_buckets as native
from strata.prometheus.metrics_server import MetricsServer, parse_address
from strata.prometheus.openmetrics import DEFAULT_TOP, Exposition
from strata.prometheus.webconfig import WebConfigError, load as load_web_config
from strata.datasets.paths import default_archive
from strata.views.times import parse_duration


# `strata collect` parameter -> the strata-collect option it is passed on as (collectors/FORMAT.md);
# a repeatable parameter is passed once per value. Parameters this build lacks are skipped.
PASSED_ON = {
    "engine": "--engine",
    "engine_pid": "--engine-pid",
    "stats_socket": "--stats-socket",
    "wire_ifaces": "--wire-iface",
    "wire_ports": "--wire-port",
    "wire_hook": "--wire-hook",
    "fs_pids": "--fs-pid",
    "fs_comms": "--fs-comm",
    "fs_cgroup": "--fs-cgroup",
    "fs_hook": "--fs-hook",
}


def collector_args(options: dict) -> list:
    """strata-collect's command-line options for the given `strata collect` parameters."""
    args = []
    for name, flag in PASSED_ON.items():
        value = options.get(name)
        for v in value if isinstance(value, tuple) else [value]:
            if v not in (None, ""):
                args += [flag, str(v)]
    return args


class WirePort(click.IntRange):
    """A TCP port, or the word rpcbind (the ports the local rpcbind maps NFS and MOUNT to)."""
    name = "port"

    def convert(self, value, param, ctx):
        return value if value == "rpcbind" else super().convert(value, param, ctx)


class Duration(click.ParamType):
    """Whole seconds, at least one, in the one duration grammar (views/times.py): 30s, 5m, 1h."""
    name = "duration"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        try:
            seconds = parse_duration(str(value))
        except ValueError as e:
            self.fail(str(e), param, ctx)
        if seconds < 1:
            self.fail(f"{value}: at least 1s", param, ctx)
        return seconds


class ListenAddress(click.ParamType):
    """ADDRESS:PORT to serve metrics on, checked when given (flag or file); "" serves none."""
    name = "address"

    def convert(self, value, param, ctx):
        try:
            if value:
                parse_address(value)
        except ValueError as e:
            self.fail(str(e), param, ctx)
        return value


@click.command()
@click.option("--config", "config_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="TOML configuration (e.g. /etc/strata/collect.toml): archive, datasets to keep "
                   "active, their retention, metrics, probe options. Flags given here win; "
                   "SIGHUP re-reads it.")
@archive_option
@click.option("--engine", metavar="PATH", type=click.Path(dir_okay=False),
              help="strata-engine binary whose USDT probes NFS, ARC, L2ARC and ZIL statistics use "
                   "(default: the one strata-collect finds).")
@click.option("--engine-pid", type=click.IntRange(min=1), metavar="PID",
              help="The one strata-engine process to probe (default: the newest one running).")
@click.option("--stats-socket", metavar="PATH", type=click.Path(dir_okay=False),
              help="The engine's stats socket, for one started with `serve --stats-socket PATH` "
                   "(default: /run/strata/engine-PID.sock); its gauges (arc.size ...) are read there.")
@click.option("--fs-pid", "fs_pids", type=click.IntRange(min=1), metavar="PID", multiple=True,
              help="A process whose file-system syscalls fs.* statistics follow (repeatable).")
@click.option("--fs-comm", "fs_comms", metavar="NAME", multiple=True,
              help="Follow every process with this name (as in /proc/PID/comm), including ones "
                   "started later (repeatable).")
@click.option("--fs-cgroup", metavar="PATH",
              help="Follow every process in this cgroup v2 and below (absolute, or relative to "
                   "the cgroup2 mount).")
@click.option("--fs-hook", "fs_hook", type=click.Choice(("auto", "fentry", "syscalls")),
              help="How fs.* programs hook the followed system calls: fentry/fexit on each, their "
                   "syscalls:sys_enter_X/sys_exit_X tracepoints, or auto: fentry where the kernel "
                   "allows it, else the tracepoints (the default).")
@click.option("--collector", "collector_bin", metavar="PATH", type=click.Path(dir_okay=False),
              help="strata-collect program to run (default: build/bin, then PATH).")
@click.option("--wire-iface", "wire_ifaces", metavar="PATTERN", multiple=True,
              help="Interface (or fnmatch pattern, e.g. 'veth*') where wire.* statistics watch NFS "
                   "traffic; repeatable (default: every interface with an address, loopback included, "
                   "and those that appear later).")
@click.option("--wire-port", "wire_ports", metavar="PORT", type=WirePort(1, 65535), multiple=True,
              help="Server TCP port wire.* statistics follow, or 'rpcbind': the ports the local "
                   "rpcbind maps NFS and MOUNT to (asked every 3 s); repeatable (default: 2049 and "
                   "rpcbind).")
@click.option("--wire-hook", "wire_hook", type=click.Choice(("auto", "tcx", "tc")),
              help="How wire.* programs hook the interfaces: tcx links (Linux 6.6+, removed by the "
                   "kernel when the collector ends), TC clsact filters, or auto: tcx where the kernel "
                   "has it, else TC (the default).")
@click.option("--metrics", "metrics_address", metavar="ADDRESS:PORT", type=ListenAddress(),
              help="Also serve the datasets as OpenMetrics at http://ADDRESS:PORT/metrics for "
                   "Prometheus (':9464' listens on all interfaces; port 0 picks a free one).")
@click.option("--metrics-digits", type=click.Choice(("2", "1")), default="2", show_default=True,
              help="Significant digits of the exported histogram bounds: llhist's own 2 "
                   "(90 a decade), or 1 (9 a decade, a tenth of the series).")
@click.option("--metrics-schema", type=click.IntRange(-4, 8), default=native.DEFAULT_SCHEMA, show_default=True,
              help="Schema of the native histograms served to scrapers that accept protobuf: 2^N "
                   "buckets a doubling. The default is the coarsest whose measured error, llhist bins "
                   "moved into base-2 buckets, stays under llhist's own 10% (README, 'A fleet').")
@click.option("--metrics-top", type=click.IntRange(min=0), default=DEFAULT_TOP, show_default=True,
              help="Breakdown keys served per dataset: the N with the most events over the last "
                   "minute, the others added up as key 'other' (0: every key). The archive keeps "
                   "every key.")
@click.option("--flush-every", type=Duration(), default="1m", show_default=True, metavar="DURATION",
              help="How often the open minute, ten-minute and hour sums are written to the archive; each "
                   "is also written when its period ends, at suspend and at stop. Longer: fewer writes, "
                   "more seconds to re-add after a crash (none is lost); views never wait for it.")
@click.option("--web-config", "web_config", metavar="FILE", type=click.Path(dir_okay=False),
              help="Web configuration of the metrics endpoint in the Prometheus exporters' format "
                   "(tls_server_config: cert_file, key_file, client_ca_file, client_auth_type; "
                   "basic_auth_users: name -> bcrypt hash): HTTPS, and basic auth when users are listed.")
@click.pass_context
def collect(ctx, config_path, **given):
    """Collect the archive's active datasets every second until stopped.

    Runs strata-collect (which loads and attaches only the probes the active
    datasets need) and writes each second it reports into the archive, with
    minute and hour rollups. Datasets created, suspended, resumed or destroyed
    by other strata commands take effect within two seconds; retention is
    enforced every minute. One collector per archive (lock: ARCHIVE.lock).
    SIGTERM or Ctrl-C stops it cleanly. Needs root (BPF).

    Faults of the archive do not stop it: while the archive cannot be
    written (disk full, I/O errors, a read-only file system), it says so
    once, keeps its probes attached and holds the events in memory, and
    when writing works again stores them as one record per dataset spanning
    the outage (marked; heat maps show the span). An archive file or folder
    removed is made again with the datasets being collected. A stall of the
    collector (SIGSTOP, no CPU) costs time resolution the same way, never
    events. `strata datasets list` shows the collector's state.

    fs.* statistics follow only the processes chosen with --fs-pid, --fs-comm
    and --fs-cgroup; other processes pay only the syscall tracepoints' entry
    (catalogue/STATISTICS.md) while an fs dataset is active. A choice that
    matches nothing (a pid that is gone, a name or cgroup not there yet) is
    reported once and collects nothing; names and cgroups are picked up when
    they appear.

    With --metrics, every archived second is also served as OpenMetrics for
    Prometheus to scrape: heat maps as native histograms (one series per
    dataset and key) to scrapers that accept protobuf, as classic histograms
    (llhist bucket bounds as `le`) to those that read text; counters and gauges
    as themselves, counted since the collector started; per dataset the
    --metrics-top keys with the most events, the rest as 'other'.

    With --config FILE, the file gives the options (a flag on the command
    line wins) and lists datasets that are created or resumed at start.
    SIGHUP re-reads it: datasets added are collected, datasets removed are
    suspended (data kept), other datasets and the running collection are
    untouched. A mistake in the file is one line naming the key and its line:
    at start nothing runs; on reload the running configuration stays.
    """
    config = load(config_path, ctx.command) if config_path else None
    options = merged(config, ctx, given) if config else given
    _collect(options, config, lambda: _reloaded(ctx, config_path, given))


def _reloaded(ctx, config_path, given):
    """The file re-read on SIGHUP, or None (with one line said) when it is wrong now."""
    try:
        config = load(config_path, ctx.command)
    except ConfigError as e:
        say("collect", f"reload: {e.format_message()}; keeping the running configuration")
        return None
    return config, merged(config, ctx, given)


def _collect(options, config, reread):
    archive_path, collector_bin = options["archive_path"], options["collector_bin"]
    metrics_address, metrics_digits = options["metrics_address"], options["metrics_digits"]
    path = archive_path or default_archive(for_reading=False)
    with archive_errors():
        try:
            program = collector_bin or find_binary("strata-collect")
        except MissingBinary as e:
            raise click.ClickException(str(e)) from None
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            raise click.BadParameter(f"{program} is not an executable file", param_hint="--collector")
        if options["engine"] and options["engine_pid"]:
            raise click.UsageError("give --engine or --engine-pid, not both")
        command = [program] + collector_args(options)
        _may_collect(program)
        listen = parse_address(metrics_address) if metrics_address else None
        try:
            web = load_web_config(options["web_config"]) if listen and options["web_config"] else None
        except WebConfigError as e:
            raise click.ClickException(str(e)) from None
        with CollectorLock(path) as lock, _writable(path) as (archive, unwritable):
            exposition = Exposition(int(metrics_digits), options["metrics_top"],
                                    options["metrics_schema"]) if listen else None
            server = _serve(exposition, *listen, web) if listen else None
            if config and unwritable:
                say("collect", "the configuration's datasets are applied at the next reload (the archive cannot "
                     "be written now)")
            elif config:
                for line in ensure(archive, config.datasets, config.retention):
                    say("collect", line)
            collector = Collector(archive, command, exposition=exposition, lock=lock,
                                  flush_every=options["flush_every"],
                                  on_reload=_Reload(archive, config, options, reread) if config else None)
            if unwritable:
                collector.unwritable(unwritable)
            signal.signal(signal.SIGTERM, collector.stop)
            signal.signal(signal.SIGINT, collector.stop)
            if config:
                signal.signal(signal.SIGHUP, collector.reload)
            say("collect", f"archiving to {path}")
            if server:
                say("collect", f"serving OpenMetrics at {server.url}")
            try:
                status = collector.run()
            finally:
                if server:
                    server.close()
    raise SystemExit(status)


def _may_collect(program):
    """Refuse at once, before the archive and its lock are made, when the daemon may not
    load probes (it asks itself: file capabilities on the binary count)."""
    r = subprocess.run([program, "--check-privileges"], stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if r.returncode == 77:
        why = r.stderr.strip().removeprefix("strata-collect: ") or "needs root"
        raise _Refused(f"cannot collect: {why}; run it as root (sudo strata collect ...), or give the "
                       f"daemon the capabilities once: sudo setcap cap_bpf,cap_perfmon+ep {program}")


class _Refused(click.ClickException):
    exit_code = 77     # EX_NOPERM, as strata-collect's own


@contextmanager
def _writable(path):
    """(archive, None), or (the archive read-only, why) when it cannot be written now:
    collection starts anyway and holds its records until it can."""
    archive, why = Archive.open_for_collecting(path)
    try:
        yield archive, why
    finally:
        archive.close()


class _Reload:
    """SIGHUP: the file read again; its datasets applied, other changes named (they need a restart)."""

    def __init__(self, archive, config, options, reread):
        self.archive, self.config, self.options, self.reread = archive, config, options, reread

    def __call__(self):
        again = self.reread()
        if again is None:
            return
        new, options = again
        keys = {param: key for key, param in FLAGS.items()}
        for name in [n for n in options if options[n] != self.options[n]]:
            say("collect", f"reload: {keys.get(name, name)} changed to {options[name]!r}: takes effect when "
                 "strata collect restarts")
        try:
            for line in ensure(self.archive, new.datasets, new.retention, dropped=self.config.datasets):
                say("collect", f"reload: {line}")
        except ArchiveError as e:
            say("collect", f"reload: {e}")
        self.config = new
        say("collect", f"reload: {len(new.datasets)} dataset(s) from {new.path}")


def _serve(exposition, host, port, web):
    try:
        return MetricsServer(exposition, host, port, web)
    except OSError as e:
        raise click.ClickException(f"cannot serve metrics on {host}:{port}: {e.strerror}") from None
