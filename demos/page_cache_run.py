"""The run the ganesha and nfsd demos share: a server strata does not control exports an
ext4 file system on a loop device; strata-load writes a working set that fits the page
cache, then clients in network namespaces read it at random, and halfway the page cache
is dropped, so the disk band appears and fades as the cache fills again. The scenario
modules start their server and collector between export() and read_with_drop()."""
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from strata.demos.steps import drop_cache_halfway, run_load, say
from strata.lab import ext4, loopdev
from strata.lab.load import Load, arguments
from strata.heatmaps.units import parse_value

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
    server: str = ""
    device: str = ""                     # the loop device under the export's ext4
    export: str = ""
    netns: bool = True
    working_set: int = 0
    load_start: int = 0                  # unix seconds: the random reads started / ended
    load_end: int = 0
    run_start: int | None = None
    drop_at: int | None = None           # unix second the page cache was dropped
    notes: list = field(default_factory=list)


def export(settings: Settings, facts_type, work: Path, folder: Path, undo, echo):
    """The output folder and the run's facts, with an ext4 file system on a fresh loop
    device mounted at folder (world-writable: clients use distinct AUTH_SYS uids)."""
    out = Path(settings.outdir)
    out.mkdir(parents=True, exist_ok=True)
    ws = parse_value(settings.working_set, "bytes")
    facts = facts_type(archive=str(out / "archive.db"), netns=settings.netns, working_set=ws)
    image = str(work / "ext4.img")
    dev = loopdev.attach(image, max(2 * ws, 256 * MiB))
    undo.callback(loopdev.detach, dev, image)
    folder.mkdir(exist_ok=True)
    ext4.make_and_mount(dev, str(folder))
    undo.callback(ext4.unmount, str(folder))
    loopdev.detach(dev, image)   # the mount holds it: freed at umount, even if we are killed
    folder.chmod(0o777)
    facts.device, facts.export = loopdev.name(dev), str(folder)
    say(echo, f"ext4 on {dev} mounted at {folder}")
    return out, facts


def read_with_drop(settings: Settings, facts, out: Path, work: Path, ports: tuple, coll, check, undo, echo,
                   attach_wait: float = 0):
    """Writes the working set from 127.0.0.1 (synced to the disk, so no writeback runs
    under the reads), runs the random reads with the page cache dropped halfway (check()
    raises when the server or collector failed), stops the collector and writes
    summary.json. ports: the server's NFS and MOUNT ports; attach_wait: seconds the clients
    in network namespaces wait, once their interfaces exist, before their first call (the
    wire view attaches to each new interface meanwhile, and sees every call)."""
    common = {"files": settings.files, "working_set": settings.working_set, "clients": settings.clients}
    say(echo, f"writing a {settings.working_set} working set ({settings.files} files) from 127.0.0.1")
    setup = Load(work, "setup").start(arguments("127.0.0.1", *ports, facts.export, {**common, "setup_only": True}))
    undo.callback(setup.stop)
    setup.wait(timeout=600)
    os.sync()

    say(echo, f"{settings.clients} clients x {settings.threads} streams: random 8 KiB reads for "
              f"{settings.duration}s; the page cache is dropped halfway")
    reads = {**common, "profile": "randread", "io_size": "8k", "threads": settings.threads,
             "duration": settings.duration, "rate": settings.rate or None}
    facts.load_start = int(time.time())
    facts.run_start = facts.load_start + (round(attach_wait) if settings.netns else 0)   # the reads begin then
    run_load(work, out, lambda netns: arguments("127.0.0.1", *ports, facts.export,
                                                {**reads, "netns": netns, "netns_delay": netns and attach_wait}),
             facts, lambda load: drop_cache_halfway(load, facts, settings.duration, check, echo),
             settings.duration + 120, undo, echo)
    facts.load_end = int(time.time())
    time.sleep(1.5)   # the collector writes the last second of load, then stops
    coll.stop()
    (out / "summary.json").write_text(json.dumps(asdict(facts), indent=1) + "\n")
