"""`strata demo --server nfsd`: the kernel's own NFS server, seen from inside the
kernel (the nfsd layer: latency per request, by client and op; the nfsd_io layer under
it: nfsd's reads of the files) and at the disk. The
kernel's nfsd serves an ext4 file system on a loop device; strata-load clients in
network namespaces read a working set that fits the page cache at random; halfway
the page cache is dropped, so the disk band appears in nfsd.io.latency (and under
nfsd.latency) and disk.latency, and fades as the cache fills again.

Everything it starts is undone by the Teardown, in reverse order: load, collector,
nfsd (its threads, export, mountd, rpcbind), mount, loop device, temporary files.
"""
import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from strata.cli.demo.steps import collect, drop_cache_halfway, run_load, say, scratch
from strata.cli.lab import ext4, loopdev
from strata.cli.lab.load import Load, arguments
from strata.cli.lab.nfsd import KernelNfsd, NfsdError
from strata.heatmaps.units import parse_value

DATASETS = ["nfsd.latency[client]", "nfsd.ops[client]", "nfsd.latency[op]", "nfsd.ops[op]", "nfsd.io.latency[op]",
            "disk.latency[device]", "disk.latency[op=read][device]"]
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
    server: str = "nfsd"
    device: str = ""                     # the loop device under the export's ext4
    export: str = ""
    netns: bool = True
    working_set: int = 0
    load_start: int = 0                  # unix seconds: the random reads started / ended
    load_end: int = 0
    run_start: int | None = None
    drop_at: int | None = None           # unix second the page cache was dropped
    notes: list = field(default_factory=list)


def run(settings: Settings, undo, echo) -> Facts:
    """Runs the scenario; every resource goes on `undo` (a Teardown) as it is made."""
    why = KernelNfsd.missing()
    if why:
        raise NfsdError(why)
    out = Path(settings.outdir)
    out.mkdir(parents=True, exist_ok=True)
    work = scratch(undo, echo)
    ws = parse_value(settings.working_set, "bytes")
    facts = Facts(archive=str(out / "archive.db"), netns=settings.netns, working_set=ws)

    export = work / "export"
    export.mkdir()
    image = str(work / "ext4.img")
    dev = loopdev.attach(image, max(2 * ws, 256 * MiB))
    undo.callback(loopdev.detach, dev, image)
    ext4.make_and_mount(dev, str(export))
    undo.callback(ext4.unmount, str(export))
    loopdev.detach(dev, image)   # the mount holds it: freed at umount, even if we are killed
    export.chmod(0o777)          # clients use distinct AUTH_SYS uids
    facts.device, facts.export = loopdev.name(dev), str(export)
    say(echo, f"ext4 on {dev} mounted at {export}")

    nfsd = KernelNfsd(str(export))
    undo.callback(nfsd.stop)
    nfsd.start()
    say(echo, f"kernel nfsd on port {nfsd.nfsport} (rpc.mountd on {nfsd.mountport}), exporting {export}")

    coll = collect(work, facts.archive, DATASETS, undo, "disk.latency[device]")
    say(echo, f"collecting {', '.join(DATASETS)} into {facts.archive}")

    common = {"files": settings.files, "working_set": settings.working_set, "clients": settings.clients}
    say(echo, f"writing a {settings.working_set} working set ({settings.files} files) from 127.0.0.1")
    setup = Load(work, "setup").start(arguments("127.0.0.1", nfsd.nfsport, nfsd.mountport, str(export),
                                                {**common, "setup_only": True}))
    undo.callback(setup.stop)
    setup.wait(timeout=600)
    os.sync()   # the working set on the disk: no writeback under the reads that follow

    say(echo, f"{settings.clients} clients x {settings.threads} streams: random 8 KiB reads for "
              f"{settings.duration}s; the page cache is dropped halfway")
    reads = {**common, "profile": "randread", "io_size": "8k", "threads": settings.threads,
             "duration": settings.duration, "rate": settings.rate or None}

    def check():
        coll.check()
        if not nfsd.alive():
            raise NfsdError("the kernel's nfsd stopped")

    facts.load_start = facts.run_start = int(time.time())
    run_load(work, out, lambda netns: arguments("127.0.0.1", nfsd.nfsport, nfsd.mountport, str(export),
                                                {**reads, "netns": netns}),
             facts, lambda load: drop_cache_halfway(load, facts, settings.duration, check, echo),
             settings.duration + 120, undo, echo)
    facts.load_end = int(time.time())
    time.sleep(1.5)   # the collector writes the last second of load, then stops
    coll.stop()
    (out / "summary.json").write_text(json.dumps(asdict(facts), indent=1) + "\n")
    return facts
