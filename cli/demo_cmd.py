"""`strata demo`: the L2ARC warm-up screenshots of seed 000 on this machine: a
pool on loop devices, the engine, 10 clients reading a working set larger than
the ARC, collection into DIR/archive.db, and the heat maps it gives. With
--server ganesha or nfsd, the same picture on nfs-ganesha or the kernel's nfsd over
ext4, the page cache dropped halfway."""
import os
import shutil
import sys
import time
from pathlib import Path

import click

from strata.lab.binaries import MissingBinary
from strata.lab.collect import CollectError
from strata.lab.engine import EngineError
from strata.lab.ganesha import GaneshaError
from strata.lab.load import LoadError
from strata.lab.loopdev import LoopError
from strata.lab.nfsd import NfsdError
from strata.lab.teardown import Teardown
from strata.datasets.errors import ArchiveError
from strata.heatmaps import clock
from strata.heatmaps.export import ExportError

def _size(ctx, param, value):
    from strata.heatmaps.units import parse_value
    if value is None:
        return None
    try:
        if parse_value(value, "bytes") < 16 << 20:
            raise ValueError(f"{value} is below 16M")
    except ValueError as e:
        raise click.BadParameter(str(e)) from None
    return value


FAILURES = (MissingBinary, EngineError, GaneshaError, NfsdError, LoadError, CollectError, LoopError, ArchiveError, ExportError, OSError)


@click.command("demo")
@click.option("-o", "--output", "outdir", default="demo", show_default=True, type=click.Path(file_okay=False),
              help="Directory for the archive, the pictures and the load report.")
@click.option("--server", type=click.Choice(("engine", "ganesha", "nfsd")), default="engine", show_default=True,
              help="engine: strata's cache engine (NFS, ARC, L2ARC, vdev and disk layers); ganesha: "
                   "Debian's nfs-ganesha on ext4 (wire, file-system and disk layers); nfsd: the kernel's "
                   "NFS server on ext4 (nfsd, nfsd I/O and disk layers).")
@click.option("--duration", type=click.IntRange(10, 3600),
              help="Seconds of random reads (after the working set is written) [engine: 90, ganesha and nfsd: 40].")
@click.option("--clients", default=10, show_default=True, type=click.IntRange(1, 200))
@click.option("--threads", default=2, show_default=True, type=click.IntRange(1, 64), help="Streams per client.")
@click.option("--rate", type=click.IntRange(0, 10_000_000),
              help="RPCs/s over all clients (0: as fast as they go) [engine: 400, ganesha and nfsd: 2000]; the "
                   "engine's cap keeps the four modelled disks below saturation, so their band is service "
                   "time, not queueing; ganesha's and nfsd's set how fast the page cache fills again after the "
                   "drop.")
@click.option("--arc-max", callback=_size, help="ARC size (engine only) [64M].")
@click.option("--working-set", callback=_size,
              help="Bytes the clients read [256M] (engine: > ARC; ganesha, nfsd: fits the page cache).")
@click.option("--no-netns", is_flag=True, help="All clients from 127.0.0.1 (told apart by AUTH_SYS name only).")
@click.option("--no-png", is_flag=True, help="HTML pictures only (PNG export starts Chromium: slow on an emulated CPU).")
@click.option("--color", "colour", type=click.Choice(("auto", "truecolor", "256", "none")), default="auto",
              show_default=True, help="Terminal colours for the heat maps printed at the end.")
def demo(outdir, server, duration, clients, threads, rate, arc_max, working_set, no_netns, no_png, colour):
    """Run the cache demo and draw its heat maps (needs root).

    A temporary pool on a loop device, the strata engine with a small ARC,
    `strata collect` recording NFS latency by tier, NFS ops by client, disk
    latency by device, ARC hits/misses and the cache sizes, then random 8 KiB
    reads by 10 clients from a working set 4x the ARC. When the engine has an
    L2ARC it is switched on halfway. Writes DIR/archive.db, HTML and PNG
    pictures and the load report, and prints the heat maps. Everything it
    started is removed on exit or Ctrl-C.

    --server ganesha: Debian's nfs-ganesha (FSAL VFS) serving an ext4 file
    system on a loop device, seen from outside: wire.* on the interfaces,
    fs.* on ganesha's syscalls, disk.* on the loop device. The working set
    fits the page cache; halfway the page cache is dropped, so the disk band
    appears and fades as the cache fills again.

    --server nfsd: the same on the kernel's own NFS server (nfs-kernel-server),
    seen from inside the kernel: nfsd.* per request, by client and op, nfsd.io.*
    for nfsd's reads of the files under it, and disk.* on the loop device. It needs a kernel with nfsd whose nfsd is not serving
    already; nfsd is stopped again at the end.
    """
    if os.geteuid() != 0:
        click.echo("strata demo: needs root (loop devices, network namespaces and BPF probes); "
                   "run it with sudo", err=True)
        sys.exit(1)
    given = dict(outdir=Path(outdir), duration=duration, clients=clients, threads=threads, rate=rate,
                 working_set=working_set, netns=not no_netns)
    if server in ("ganesha", "nfsd") and arc_max is not None:
        raise click.UsageError(f"--arc-max is for --server engine ({server} uses the page cache)")
    if server == "ganesha":
        from strata.demos import ganesha as scenario
        from strata.demos import ganesha_pictures as pictures
        explore = _ganesha_commands
    elif server == "nfsd":
        from strata.demos import nfsd as scenario
        from strata.demos import nfsd_pictures as pictures
        explore = _nfsd_commands
    else:
        from strata.demos import pictures, scenario
        given["arc_max"] = arc_max
        explore = _engine_commands
    settings = scenario.Settings(**{k: v for k, v in given.items() if v is not None})
    began = time.monotonic()
    try:
        with Teardown() as undo:
            facts = scenario.run(settings, undo, click.echo)
        start, end = (facts.run_start or facts.load_start), facts.load_end + 1   # the reads, not the setup
        click.echo(pictures.terminal(facts.archive, facts, start, end, colour), color=colour != "none")
        written = pictures.write_files(facts.archive, facts, start, end, Path(outdir), png=not no_png)
    except KeyboardInterrupt:
        click.echo("strata demo: interrupted; everything it started has been stopped and removed", err=True)
        sys.exit(130)
    except FAILURES as e:
        click.echo(f"strata demo: {e}", err=True)
        sys.exit(1)
    _epilogue(facts, written, time.monotonic() - began, explore, start, end)


def _epilogue(facts, written, seconds, explore, start, end):
    """What was written, what was missing, and how to explore the archive (the reads' seconds
    as local dates and times: a time of day alone would name another day after midnight)."""
    folder = written[0].parent if written else "."
    stems = ", ".join(sorted({p.stem for p in written}))
    click.echo("")
    kinds = "HTML and PNG" if any(p.suffix == ".png" for p in written) else "HTML"
    click.echo(f"strata demo: done in {seconds:.0f}s; wrote {stems} ({kinds}) in {folder}/")
    for note in facts.notes:
        click.echo(f"  note: {note}")
    since, until = (clock.typed(t) for t in (start, end))
    rng = f"--since {since} --until {until} --archive {facts.archive}"
    click.echo("Explore the archive it left (the random reads; widen --since to see the setup writes):")
    for cmd in explore(facts, rng):
        click.echo(f"  {cmd}")
    running = os.path.realpath(sys.argv[0])
    if not shutil.which("strata") or os.path.realpath(shutil.which("strata")) != running:
        click.echo(f"  (`strata` is {sys.argv[0]} here: `export PATH={os.path.dirname(running)}:$PATH`, "
                   "or `make install`)")


def _engine_commands(facts, rng):
    return [f"strata heatmap 'nfs.latency[tier]' --log {rng}",
            f"strata heatmap 'nfs.latency[tier=arc]' {rng}",
            f"strata heatmap 'vdev.latency[vdev]' --log {rng}",
            f"strata heatmap 'disk.latency[device={facts.pool_devices[0]}]' {rng}",
            f"strata breakdown 'nfs.latency[tier]' --range 1ms.. {rng}",
            f"strata breakdown 'nfs.ops[client]' --top 10 {rng}",
            f"strata breakdown 'nfs.ops[op]' {rng}",
            f"strata show time:disk {rng}"]


def _ganesha_commands(facts, rng):
    return [f"strata heatmap 'wire.latency[client]' --log {rng}",
            f"strata heatmap 'fs.latency[tier]' --log {rng}",
            f"strata heatmap 'disk.latency[device={facts.device}]' --log {rng}",
            f"strata breakdown 'fs.latency[op]' --range 1ms.. {rng}",
            f"strata breakdown 'wire.ops[client]' --top 10 {rng}",
            f"strata breakdown 'wire.ops[op]' {rng}",
            f"strata breakdown 'fs.ops[op]' {rng}",
            f"strata show time:fs {rng}"]


def _nfsd_commands(facts, rng):
    return [f"strata heatmap 'nfsd.latency[client]' --log {rng}",
            f"strata heatmap 'nfsd.io.latency[op=read]' --log {rng}",
            f"strata heatmap 'disk.latency[device={facts.device}]' --log {rng}",
            f"strata breakdown 'nfsd.latency[op]' --range 1ms.. {rng}",
            f"strata breakdown 'nfsd.ops[client]' --top 10 {rng}",
            f"strata breakdown 'nfsd.ops[op]' {rng}",
            f"strata show time:nfsd {rng}"]
