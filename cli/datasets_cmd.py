"""`strata datasets`: list, create, suspend, resume, destroy, prune, archive, import and verify datasets."""
import os
import sys

import click

from strata.cli.archive_option import archive_errors, archive_option, open_archive
from strata.cli import table
from strata.cli.output import check_archive_name, wrote
from strata.collect import status
from strata.datasets import cost, transfer
from strata.datasets import salvage as salvage_
from strata.datasets import verify as verify_
from strata.datasets.errors import ArchiveError
from strata.datasets.names import checked as checked_name
from strata.datasets.paths import default_archive
from strata.datasets.retention import LEVELS, format_duration, parse_duration, parse_keep
from strata.heatmaps import json_out
from strata.heatmaps.stream_lines import stamp as iso_stamp


def stamp(t) -> str:
    """A time as ISO 8601 with its zone's offset (local, or UTC with --utc)."""
    return iso_stamp(int(t), utc=False)


@click.group()
def datasets():
    """Manage datasets: statistics archived every second.

    A dataset is a statistic with optional filters and an optional breakdown,
    named in brackets, filters first and the breakdown last:

    \b
        nfs.ops[op]                       NFS operations per second by operation
        nfs.latency[client]               NFS latency heat map, one per client
        nfs.ops[op=read][client]          reads only, by client
        disk.latency[device]              disk I/O latency by device

    `strata statistics` lists what can be collected. Active datasets are
    collected by `strata collect`; suspend one to stop its probes (it then
    costs nothing) and keep its data.
    """


def _human_bytes(n: int) -> str:
    for unit in ("B", "K", "M", "G", "T"):
        if n < 1024 or unit == "T":
            return f"{n:.0f}{unit}" if unit == "B" else f"{n:.1f}{unit}"
        n /= 1024


def _rate(r) -> str:
    if r is None:
        return "-"
    return f"{r:.0f}/s" if r >= 10 else f"{r:.1f}/s"


@datasets.command("list")
@archive_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_(archive_path, as_json):
    """List datasets: state, since when, size on disk, how long each level keeps
    data, event rate and probe cost.

    RATE is events per collected second over the last minute. COST estimates
    the CPU the dataset's probe costs at that rate (about 0.6 us per probe
    hit, as a percent of one CPU); the total counts a probe shared by several
    datasets once. ONDISK is approximate. KEEPS is the retention of the
    second/minute/hour levels ("all": never pruned), the limit ONDISK grows to.
    A line says what the running collector does: writing every second,
    or holding events in memory while the archive cannot be written (why);
    then one line for each active dataset that counts nothing and why (refused,
    waiting for its layer, no traffic on the wire ports followed).
    """
    with open_archive(archive_path) as archive:
        infos = archive.datasets()
        rates = [archive.rate(i) if i.state == "active" else None for i in infos]
    each, total, probes = cost.estimate(zip(infos, rates))
    collector = status.read(archive.path)
    why = {name: reason for name, reason in status.reasons(collector, infos).items()
           if not rates[[i.name for i in infos].index(name)]}
    if as_json:
        click.echo(json_out.dumps(json_out.document("datasets", {
            "archive": archive.path, "collector": collector,
            "datasets": [dict(i.to_json(), rate_per_s=r, cost_cpu_percent=round(each[i.name], 4),
                              counts_nothing_because=why.get(i.name))
                         for i, r in zip(infos, rates)],
            "total_cost_cpu_percent": round(total, 4), "probes": probes})))
        return
    if not infos:
        click.echo(f"no datasets in {archive.path} (create one: strata datasets create 'nfs.ops[op]')")
        return
    rows = [("NAME", "STATE", "SINCE", "ONDISK", "KEEPS", "RATE", "COST")]
    for i, r in zip(infos, rates):
        rows.append((i.name, i.state, stamp(i.state_since),
                     _human_bytes(i.ondisk), i.retention.short(), _rate(r), f"{each[i.name]:.2f}%" if i.probe else "-"))
    for line in table.lines(rows, flexible=(0, 4)):
        click.echo(line)
    click.echo(table.note(f"archive file: {_human_bytes(os.path.getsize(archive.path))} ({archive.path})"))
    click.echo(table.note(f"probe cost: {total:.2f}% of one CPU ({len(probes)} probe(s); shared probes counted once)"))
    if collector:
        click.echo(table.note(_collector_line(collector)))
    for name, reason in why.items():
        click.echo(table.note(f"{name} counts nothing: {reason}"))


def _collector_line(s: dict) -> str:
    """One line on the collector writing this archive (collect/status.py)."""
    if s.get("state") == "holding":
        since = stamp(s.get("held_since") or s.get("since", 0))
        return (f"collector (pid {s.get('pid')}): holding the events since {since} in memory, the archive "
                f"cannot be written: {s.get('problem')}")
    return f"collector (pid {s.get('pid')}): writing every second"


@datasets.command()
@archive_option
@click.argument("name")
@click.option("--keep", "keep", multiple=True, metavar="LEVEL=DURATION",
              help="Retention of one level: second, minute or hour = a duration (30m, 48h, 7d, 2w) "
                   "or 'all'. Repeatable. Default: second=7d, minute=90d, hour=104w.")
@click.option("--suspended", is_flag=True, help="Create it suspended (not collected until resumed).")
@click.option("--allow-absent-device", is_flag=True,
              help="Accept a device filter naming a block device this host does not have (yet).")
def create(archive_path, name, keep, suspended, allow_absent_device):
    """Create dataset NAME, such as 'nfs.ops[op=read][client]'.

    The statistic, the fields and the filter values must be ones the
    catalogue has (`strata statistics --json` lists them; a wrong one is
    refused with the valid ones named); a device filter must name a block
    device this host has, unless --allow-absent-device. Filters may be given
    in any order (the name is stored canonically). A running `strata collect`
    starts collecting it within two seconds; `strata statistics` says what
    this host can collect.
    """
    with archive_errors():
        retention = parse_keep(keep)
        checked_name(name, allow_absent_device)      # refused before the archive is opened, or made
    with open_archive(archive_path, readonly=False, make=True) as archive:
        info = archive.create(name, retention, active=not suspended, allow_absent_device=allow_absent_device)
    click.echo(f"created {info.name} ({info.kind}, {info.unit}; keeps {info.retention})")


def _state_command(state, verb, past):
    @click.argument("names", nargs=-1)
    @click.option("--all", "all_", is_flag=True, help=f"{verb.capitalize()} every dataset.")
    @archive_option
    def command(archive_path, names, all_):
        if names and all_:
            raise click.UsageError("name the datasets or pass --all, not both")
        if not names and not all_:
            raise click.UsageError("name the datasets, or pass --all")
        with open_archive(archive_path, readonly=False) as archive:
            changed = archive.set_state(None if all_ else list(names), state)
        for n in changed:
            click.echo(f"{past} {n}")
        if not changed:
            click.echo(f"nothing to {verb}")
    return command


datasets.command("suspend", help="Suspend datasets: collection stops and their probes detach; "
                                 "data is kept.\n\nNAMES are dataset names; --all suspends every one.")(
    _state_command("suspended", "suspend", "suspended"))
datasets.command("resume", help="Resume suspended datasets: collection starts again within two "
                                "seconds.\n\nNAMES are dataset names; --all resumes every one.")(
    _state_command("active", "resume", "resumed"))


def _confirm(question: str, name: str) -> bool:
    """The user's answer; stdin ending unanswered (a script, no terminal) keeps NAME, exit 1:
    only Ctrl-C at a terminal is an interrupt (130)."""
    try:
        return click.confirm(question)
    except click.Abort:
        if sys.stdin.isatty():
            raise
        raise click.ClickException(f"kept {name}: no answer on stdin (-y destroys without asking)") from None


@datasets.command()
@archive_option
@click.argument("name")
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
def destroy(archive_path, name, yes):
    """Destroy dataset NAME and all its data."""
    with open_archive(archive_path, readonly=False) as archive:
        info = archive.dataset(name)
        rows = sum(r for r, _ in info.usage.values())
        if not yes and not _confirm(f"destroy {info.name} and its {rows} records?", info.name):
            raise click.ClickException(f"kept {info.name}")     # "no" is an answer: exit 1, not SIGINT's 130
        archive.destroy(info.name)
    click.echo(f"destroyed {info.name}")


@datasets.command()
@archive_option
@click.argument("name")
@click.option("--older-than", "older", required=True, metavar="DURATION",
              help="Delete data older than this (e.g. 7d, 12h, 1h30m).")
@click.option("--level", type=click.Choice(LEVELS), default="hour", show_default=True,
              help="Coarsest level to prune; finer levels are pruned too (hour prunes all).")
def prune(archive_path, name, older, level):
    """Delete NAME's data older than a duration, at a level and the finer ones
    (--level second: the per-second data only, the minute and hour rollups stay)."""
    try:
        seconds = parse_duration(older, allow_all=False)
    except ArchiveError as e:
        raise click.BadParameter(str(e), param_hint="--older-than") from None
    with open_archive(archive_path, readonly=False) as archive:
        removed = archive.prune(name, seconds, level)
    click.echo(f"pruned {removed} records older than {format_duration(seconds)} "
               f"(levels: {', '.join(LEVELS[:LEVELS.index(level) + 1])})")


@datasets.command("archive")
@archive_option
@click.argument("names", nargs=-1, required=True)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="File to write.")
@click.option("--force", is_flag=True, help="Replace the output file if it exists.")
def archive_(archive_path, names, output, force):
    """Write datasets NAMES to a self-contained archive file.

    Every strata command that reads datasets accepts the file with
    --archive FILE: keep it as a CI baseline or attach it to a bug report.
    `strata datasets import FILE` merges it into another archive. What was
    written is said on stderr ("wrote NAMES to FILE"), as the views say theirs.
    """
    check_archive_name(output)
    with open_archive(archive_path) as archive:
        status.refuse_written(output)
        written = transfer.export(archive, list(names), output, overwrite=force)
    wrote(output, ", ".join(written))


@datasets.command("import")
@archive_option
@click.argument("file", type=click.Path(dir_okay=False))
def import_(archive_path, file):
    """Import every dataset of archive FILE (from `strata datasets archive`).

    Imported datasets arrive suspended, so this host's collector does not add
    its own data to them; names already present are refused.
    """
    with archive_errors():
        source = transfer.read_source(file)     # refused before the archive is opened, or made
    with open_archive(archive_path, readonly=False, make=True) as archive:
        names = transfer.import_from(archive, source)
    click.echo(f"imported {', '.join(names) or 'nothing'} (suspended)")


@datasets.command()
@archive_option
@click.argument("name")
@click.option("--keep", "keep", multiple=True, required=True, metavar="LEVEL=DURATION",
              help="New retention of a level (second, minute, hour), e.g. second=2d. Repeatable.")
def retain(archive_path, name, keep):
    """Change how long dataset NAME keeps data at each level.

    Coarser levels must keep data at least as long as finer ones. The
    collector prunes to the new retention within a minute.
    """
    with open_archive(archive_path, readonly=False) as archive:
        info = archive.dataset(name)
        retention = parse_keep(keep, base=info.retention)
        archive.set_retention(info.name, retention)
    click.echo(f"{info.name} keeps {retention}")



@datasets.command()
@click.argument("archive_file", metavar="ARCHIVE", required=False, type=click.Path(dir_okay=False))
@click.option("--salvage", "out", metavar="OUT", type=click.Path(dir_okay=False),
              help="Copy every dataset, key and record that passes the checks into a new archive OUT.")
@archive_option
def verify(archive_file, out, archive_path):
    """Check ARCHIVE (default: --archive, or the default archive): SQLite's integrity
    check, then strata's own rules (format version, every record readable and
    decodable, no second stored twice, breakdown keys and spans well formed).

    Prints one line per problem, naming it, and exits 1 when there is any (2 when
    the file is of a newer strata, which this one cannot judge). --salvage OUT
    writes a fresh archive holding every second that can be read and passes the
    checks; read it with --archive OUT, or put it in the damaged file's place.
    """
    path = archive_file or archive_path or default_archive(for_reading=True)
    if out:
        check_archive_name(out)
    with archive_errors():
        report = salvage_.salvage(path, out) if out else verify_.check(path)
    for line in report.lines():
        click.echo(line)
    kept = ", ".join(f"{report.records.get(s, 0)}" + (f" of {report.expected[s]}" if s in report.expected else "")
                     + f" {lv}s" for s, lv in sorted(verify_.LEVEL.items()))
    if out and not report.newer:
        click.echo(f"salvaged {report.datasets} dataset(s) into {out}: {kept}")
    elif not report.problems:
        click.echo(f"{path}: ok ({report.datasets} dataset(s): {kept})")
    if report.problems:
        raise SystemExit(2 if report.newer else 1)
