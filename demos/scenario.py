"""The demo's run: a pool on loop devices, a private engine, `strata collect` into
DIR/archive.db, a random-read working set larger than the ARC read by 10
clients, and (when the engine has one) the L2ARC switched on halfway, as in
the L2ARC warm-up screenshots of seed 000.

Everything it starts is undone by the Teardown, in reverse order: load,
collector, engine, loop devices, temporary files.
"""
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from strata.lab import engine as lab_engine
from strata.lab import loopdev
from strata.demos.steps import collect, run_load, say, scratch
from strata.lab.load import arguments
from strata.heatmaps.units import parse_value

EXPORT = "/demo"
CLIENT_NET = "10.213.0.0/16"   # strata-load --netns client addresses
DATASETS = ["nfs.latency[tier]", "nfs.ops[client]", "nfs.ops[op]", "vdev.latency[vdev]", "disk.latency[device]",
            "disk.queue[device]",
            "arc.size", "l2arc.size", "arc.accesses[hit/miss]"]
MiB = 1 << 20


@dataclass
class Settings:
    outdir: Path
    duration: int = 90
    clients: int = 10
    threads: int = 2
    rate: int = 400       # RPCs/s over all clients (0: none): the modelled disks stay below saturation
    arc_max: str = "64M"
    working_set: str = "256M"
    files: int = 32
    vdevs: int = 4        # with the HDD model, one spindle each
    l2arc_size: str = "512M"
    netns: bool = True


@dataclass
class Facts:
    """What the run had and did; written to DIR/summary.json for tests and readers."""
    archive: str
    pool_devices: list
    cache_device: str | None
    vdev_model: str | None
    l2arc: bool
    l2arc_on_at: int | None = None       # unix second the L2ARC was switched on
    netns: bool = True
    engine_pid: int = 0
    load_start: int = 0                  # unix seconds: strata-load started / ended
    load_end: int = 0
    run_start: int | None = None         # first second with READs (after setup)
    notes: list = field(default_factory=list)


def run(settings: Settings, undo, echo) -> Facts:
    """Runs the scenario; every resource goes on `undo` (a Teardown) as it is made."""
    out = Path(settings.outdir)
    out.mkdir(parents=True, exist_ok=True)
    work = scratch(undo, echo)
    feats = lab_engine.features()

    ws = parse_value(settings.working_set, "bytes")
    pool_size = max(64 * MiB, int(ws * 2 / settings.vdevs))
    pool = []
    backing = {}
    for i in range(settings.vdevs):
        dev = loopdev.attach(str(work / f"vdev{i}.img"), pool_size)
        backing[dev] = str(work / f"vdev{i}.img")
        undo.callback(loopdev.detach, dev, backing[dev])
        pool.append(dev)
    lab_engine.mkpool(pool, pool_size, "8k")
    extra, cache, model = [], None, None
    if feats.vdev_model:
        model = "hdd"
        extra += ["--vdev-model", model]
    if feats.cache:
        cache = loopdev.attach(str(work / "l2arc.img"), parse_value(settings.l2arc_size, "bytes"))
        backing[cache] = str(work / "l2arc.img")
        undo.callback(loopdev.detach, cache, backing[cache])
        extra += ["--cache", cache, "--l2arc", "off"]     # switched on halfway
        if model:
            extra += ["--cache-model", "ssd"]
    facts = Facts(archive=str(out / "archive.db"), pool_devices=[loopdev.name(d) for d in pool],
                  cache_device=loopdev.name(cache) if cache else None, vdev_model=model,
                  l2arc=bool(cache and feats.ctl), netns=settings.netns)
    say(echo, f"pool of {settings.vdevs} vdev(s) on {', '.join(pool)} ({pool_size // MiB} MiB each, 8 KiB records)")
    if not model:
        facts.notes.append("this engine has no device latency models yet: the pool is a plain file on a loop "
                           "device, so its band sits where this machine's storage puts it, not at HDD speeds")
    if not facts.l2arc:
        facts.notes.append("this engine has no L2ARC yet: the run shows DRAM and pool only, nothing is "
                           "switched on halfway")
    for note in facts.notes:
        say(echo, note)

    eng = lab_engine.Engine(work)
    extra += ["--workers", str(max(8, settings.clients * settings.threads + 4))]   # no hit waits behind a miss
    # mode=1777: strata-load's clients (uids 10000 and up) create their files in the export root
    eng.start(pool, f"{EXPORT}:allow=127.0.0.0/8,allow={CLIENT_NET},no_root_squash,mode=1777", settings.arc_max, extra)
    undo.callback(eng.stop)
    for dev, path in backing.items():
        loopdev.detach(dev, path)   # the engine holds them: freed when it exits, even if we are killed
    facts.engine_pid = eng.pid
    say(echo, f"engine pid {eng.pid} on 127.0.0.1:{eng.nfsport} (mount {eng.mountport}), ARC {settings.arc_max}")

    coll = collect(work, facts.archive, DATASETS, undo, "arc.size", engine_pid=eng.pid)
    say(echo, f"collecting {', '.join(DATASETS)} into {facts.archive}")

    _run_load(settings, facts, eng, coll, work, out, undo, echo)
    time.sleep(1.5)   # the collector writes the last second of load, then stops
    coll.stop()
    eng.stop()
    (out / "summary.json").write_text(json.dumps(asdict(facts), indent=1) + "\n")
    return facts


def _load_options(settings: Settings, netns: bool) -> dict:
    return {"profile": "randread", "io_size": "8k", "files": settings.files, "working_set": settings.working_set,
            "clients": settings.clients, "threads": settings.threads, "duration": settings.duration,
            "rate": settings.rate or None, "netns": netns, "setup": True}


def _run_load(settings, facts, eng, coll, work, out, undo, echo):
    """Setup + randread in one strata-load run (so setup and run share client addresses);
    the L2ARC goes on halfway through the reads."""
    say(echo, f"{settings.clients} clients x {settings.threads} streams: writing a {settings.working_set} working "
              f"set ({settings.files} files), then random 8 KiB reads for {settings.duration}s")
    facts.load_start = int(time.time())
    run_load(work, out, lambda netns: arguments("127.0.0.1", eng.nfsport, eng.mountport, EXPORT,
                                                _load_options(settings, netns)),
             facts, lambda load: _watch(load, facts, eng, coll, settings, echo), settings.duration + 300, undo, echo)
    facts.load_end = int(time.time())


def _watch(load, facts, eng, coll, settings, echo):
    """Progress every 10 s; switches the L2ARC on at half the read phase."""
    last, last_t, next_report = None, time.monotonic(), time.monotonic()
    while load.running():
        time.sleep(1)
        coll.check()
        if not eng.alive():
            raise lab_engine.EngineError(f"the engine died: {eng.log_tail()}")
        stats = eng.stats()
        reads = stats.get("nfs", {}).get("read", 0)
        if facts.run_start is None and reads > 0:
            facts.run_start = int(time.time())
            say(echo, "working set written; random reads started")
        if (facts.l2arc and facts.l2arc_on_at is None and facts.run_start is not None
                and time.time() >= facts.run_start + settings.duration / 2):
            eng.ctl("l2arc", "on")
            facts.l2arc_on_at = int(time.time())
            say(echo, "L2ARC switched on (halfway)")
        now = time.monotonic()
        if now >= next_report:
            arc = stats.get("arc", {})
            ops = sum(stats.get("nfs", {}).values())
            if last is not None:
                hits, misses = arc.get("hits", 0) - last[1], arc.get("misses", 0) - last[2]
                ratio = 100.0 * hits / max(hits + misses, 1)
                say(echo, f"  {(ops - last[0]) / (now - last_t):8,.0f} NFS ops/s   ARC hits {ratio:4.1f}%   "
                          f"ARC {arc.get('size', 0) / MiB:.0f} MiB")
            last, last_t, next_report = (ops, arc.get("hits", 0), arc.get("misses", 0)), now, now + 10
