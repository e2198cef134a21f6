"""`strata demo --server ganesha`: a server strata does not control, seen at the
wire, file-system and disk layers. Debian's nfs-ganesha (FSAL VFS) serves an ext4
file system on a loop device; 10 strata-load clients in network namespaces read
a working set that fits the page cache at random; halfway the page cache is
dropped, so the disk band appears under fs.latency and wire.latency and fades as
the cache fills again.

Everything it starts is undone by the Teardown, in reverse order: load,
collector, ganesha, mount, loop device, temporary files.
"""
import json
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from strata.cli.demo.steps import collect, drop_cache_halfway, run_load, say, scratch
from strata.cli.lab import ext4, loopdev
from strata.cli.lab.ganesha import Ganesha, GaneshaError
from strata.cli.lab.load import Load, arguments
from strata.heatmaps.units import parse_value

DATASETS = ["wire.latency[client]", "wire.ops[client]", "wire.ops[op]", "fs.latency[op]", "fs.ops[op]",
            "disk.latency[device]"]
MiB = 1 << 20


@dataclass
class Settings:
    outdir: Path
    duration: int = 40
    clients: int = 10
    threads: int = 2
    rate: int = 2000      # RPCs/s over all clients: the page cache refills over ~15 s after the drop
    working_set: str = "256M"
    files: int = 16
    netns: bool = True


@dataclass
class Facts:
    """What the run had and did; written to DIR/summary.json for tests and readers."""
    archive: str
    server: str = "ganesha"
    device: str = ""                     # the loop device under the export's ext4
    export: str = ""
    ganesha_pid: int = 0
    netns: bool = True
    working_set: int = 0
    load_start: int = 0                  # unix seconds: the random reads started / ended
    load_end: int = 0
    run_start: int | None = None
    drop_at: int | None = None           # unix second the page cache was dropped
    notes: list = field(default_factory=list)


def run(settings: Settings, undo, echo) -> Facts:
    """Runs the scenario; every resource goes on `undo` (a Teardown) as it is made."""
    why = Ganesha.missing()
    if why:
        raise GaneshaError(why)
    out = Path(settings.outdir)
    out.mkdir(parents=True, exist_ok=True)
    work = scratch(undo, echo)
    ws = parse_value(settings.working_set, "bytes")
    facts = Facts(archive=str(out / "archive.db"), netns=settings.netns, working_set=ws)

    g = Ganesha()
    undo.callback(shutil.rmtree, g.dir, True)
    image = str(work / "ext4.img")
    dev = loopdev.attach(image, max(2 * ws, 256 * MiB))
    undo.callback(loopdev.detach, dev, image)
    ext4.make_and_mount(dev, str(g.export))
    undo.callback(ext4.unmount, str(g.export))
    loopdev.detach(dev, image)   # the mount holds it: freed at umount, even if we are killed
    g.export.chmod(0o777)        # clients use distinct AUTH_SYS uids
    facts.device, facts.export = loopdev.name(dev), str(g.export)
    say(echo, f"ext4 on {dev} mounted at {g.export}")

    g.start(new_session=True)
    undo.callback(g.stop)
    facts.ganesha_pid = g.pid
    say(echo, f"nfs-ganesha pid {g.pid} on 127.0.0.1:{g.nfsport} (mount {g.mountport}), FSAL VFS")

    options = ["--fs-pid", g.pid, "--wire-port", g.nfsport, "--wire-port", g.mountport,
               "--wire-iface", "stl*", "--wire-iface", "lo"]
    coll = collect(work, facts.archive, DATASETS, undo, "disk.latency[device]", options=options)
    say(echo, f"collecting {', '.join(DATASETS)} into {facts.archive}")

    common = {"files": settings.files, "working_set": settings.working_set, "clients": settings.clients}
    say(echo, f"writing a {settings.working_set} working set ({settings.files} files) from 127.0.0.1")
    setup = Load(work, "setup").start(arguments("127.0.0.1", g.nfsport, g.mountport, str(g.export),
                                                {**common, "setup_only": True}))
    undo.callback(setup.stop)
    setup.wait(timeout=600)

    say(echo, f"{settings.clients} clients x {settings.threads} streams: random 8 KiB reads for "
              f"{settings.duration}s; the page cache is dropped halfway")
    reads = {**common, "profile": "randread", "io_size": "8k", "threads": settings.threads,
             "duration": settings.duration, "rate": settings.rate or None}
    facts.load_start = facts.run_start = int(time.time())
    run_load(work, out, lambda netns: arguments("127.0.0.1", g.nfsport, g.mountport, str(g.export),
                                                {**reads, "netns": netns}),
             facts, lambda load: _watch(load, facts, g, coll, settings, echo), settings.duration + 120, undo, echo)
    facts.load_end = int(time.time())
    time.sleep(1.5)   # the collector writes the last second of load, then stops
    coll.stop()
    (out / "summary.json").write_text(json.dumps(asdict(facts), indent=1) + "\n")
    return facts


def _watch(load, facts, g, coll, settings, echo):
    """Drops the page cache at half the read phase."""
    def check():
        coll.check()
        if not g.alive():
            raise GaneshaError("nfs-ganesha died")
    drop_cache_halfway(load, facts, settings.duration, check, echo)
