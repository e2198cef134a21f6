"""A seeded storm of dataset lifecycle commands against running collectors under real load
(tests/test_lifecycle_storm.py runs short seeds, bench/lifecycle_storm.py runs minutes).

A real strata-engine serves export /data. strata-load's libnfs clients read and write it from
127.0.0.1 (background load: engine, ARC and vdev I/O). A reference client (the RPC client of
tests/engine_util.py, from 127.0.0.2) sends GETATTRs only in the middle of each wall-clock
second, [0.2, 0.8), and counts its replies per second: an exact, independent reference for
what nfs.* filtered to client=127.0.0.2 must store for that second (the collector's interval
boundaries fall in the quiet fifth). A disk reference does the same on a loop device of its
own: 4 KiB O_DIRECT writes in [0.2, 0.8) of each second, counted per second, for disk.*
filtered to that device; /sys/block's count of the device's writes over the run must equal
the reference's total (nothing else wrote to it).

Collector A writes the storm's archive, under a random stream (random.Random(seed)) of
create, destroy, re-create, suspend, resume, prune, archive, import, verify and SIGHUP
reload; collector B writes a second archive nobody touches (its datasets: the same
reference, and strata-load's own counts). Every command's wall-clock window is kept.

check() then finds, per dataset incarnation (id): every stored second equal to the
reference; none outside a window in which that name was surely active (nothing stored while
suspended or destroyed); no second missing inside one (nothing lost); both archives
verified clean; no collector ever holding.
"""
import json
import math
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import threading
import mmap
import time
from dataclasses import dataclass, field
from pathlib import Path

from datasets_util import STRATA, loop_device
from engine_util import NFS_PROG, Engine, RpcClient, mkpool, xdr_opaque
from strata.lab.load import Load, arguments
from strata.lab.process import stop
from strata.collect import status
from strata.datasets.archive import Archive

REF = "127.0.0.2"
NFS_NAMES = (f"nfs.ops[client={REF}][op]", f"nfs.latency[client={REF}]", f"nfs.ops[client={REF}]")
DISK_NAMES = ("disk.ops[device={dev}][op]", "disk.latency[device={dev}]")
PRUNE_OLDER = 8           # seconds: `datasets prune --older-than 8s --level second`
SETTLE = 3                # seconds after an activation before every second must be stored


class Reference(threading.Thread):
    """Requests of one kind inside [0.2, 0.8) of each wall second, counted per second."""

    def __init__(self, per_second: int):
        super().__init__(daemon=True)
        self.per_second = per_second
        self.sent = {}                # wall second -> requests answered
        self.unknown = set()          # seconds a reply crossed into (starved of CPU): not compared
        self.stopping = threading.Event()
        self.error = None

    def request(self):
        raise NotImplementedError

    def run(self):
        try:
            while not self.stopping.is_set():
                now = time.time()
                second, phase = int(now), now % 1
                if phase < 0.2:
                    time.sleep(0.2 - phase)
                    continue
                n = 0
                while n < self.per_second and time.time() < second + 0.8:
                    self.request()
                    n += 1
                if int(time.time()) != second:   # the server may have counted it in either
                    self.unknown |= {second, int(time.time())}
                self.sent[second] = n
                time.sleep(max(0.0, second + 1.2 - time.time()))
        except BaseException as e:   # said by check()
            self.error = e

    def stop(self):
        self.stopping.set()
        self.join(timeout=10)


class NfsReference(Reference):
    """GETATTRs from 127.0.0.2 to the engine."""

    def __init__(self, eng: Engine, per_second: int = 150):
        super().__init__(per_second)
        self.c = RpcClient.__new__(RpcClient)
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(10)
        s.bind((REF, 0))
        s.connect(("127.0.0.1", eng.port))
        self.c.s, self.c.xid = s, 1000
        self.fh = self.c.mount()      # before any dataset exists: MOUNT is never in a compared second

    def request(self):
        r = self.c.call(NFS_PROG, 1, xdr_opaque(self.fh))
        assert r.u32() == 0

    def stop(self):
        super().stop()
        self.c.close()


class DiskReference(Reference):
    """4 KiB O_DIRECT writes, one at a time, to a loop device nothing else uses."""

    def __init__(self, dev: str, per_second: int = 100):
        super().__init__(per_second)
        self.dev = dev
        self.fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
        self.blocks = os.lseek(self.fd, 0, os.SEEK_END) // 4096
        self.buf = mmap.mmap(-1, 4096)            # page-aligned, as O_DIRECT wants
        self.n = 0
        self.swept = 0
        self.writes_before = self.kernel_writes()

    def kernel_writes(self) -> int:
        return int(open(f"/sys/block/{os.path.basename(self.dev)}/stat").read().split()[4])

    @property
    def tags(self) -> int:
        return int(open(f"/sys/block/{os.path.basename(self.dev)}/queue/nr_requests").read())

    def sweep(self):
        """After the reference stopped: writes from one CPU through every request tag of the
        device twice, so that each request whose completion the kernel did not run the
        program for (catalogue: op "missed") is issued again and counted missed. Its seconds
        are not compared; its writes count in swept."""
        cpus = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {min(cpus)})
        try:
            start = int(time.time())
            for _ in range(2 * self.tags):
                self.request()
                self.swept += 1
            self.unknown |= set(range(start, int(time.time()) + 1))
        finally:
            os.sched_setaffinity(0, cpus)

    def request(self):
        os.pwrite(self.fd, self.buf, 4096 * (self.n % self.blocks))
        self.n += 1

    def stop(self):
        super().stop()
        os.close(self.fd)


@dataclass
class Command:
    what: str
    name: str
    start: float
    end: float
    rc: int
    said: str
    id: int | None = None      # the incarnation it made or acted on


@dataclass
class Storm:
    seed: int
    workdir: Path
    device: str                                    # the disk reference's loop device (loopN)
    commands: list = field(default_factory=list)
    exports: list = field(default_factory=list)    # (file, name) written by `datasets archive`
    destroyed: dict = field(default_factory=dict)  # id -> (info, its records just before its destroy)

    @property
    def names(self) -> tuple:
        return NFS_NAMES + tuple(n.format(dev=self.device) for n in DISK_NAMES)

    @property
    def a(self):
        return str(self.workdir / "storm.db")

    @property
    def b(self):
        return str(self.workdir / "steady.db")


def strata(*args, timeout=60):
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    return subprocess.run([STRATA, *args], capture_output=True, text=True, timeout=timeout, env=env)


def start_collect(archive, engine_pid, log, config=None):
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    cmd = [STRATA, "collect", "--archive", archive, "--engine-pid", str(engine_pid)]
    if config:
        cmd += ["--config", config]
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(log, "w"), env=env)


def ids(archive) -> dict:
    with Archive.open(archive) as a:
        return {d.name: d for d in a.datasets()}


def _step(storm: Storm, rng: random.Random, collector) -> Command:
    """One random lifecycle command that makes sense now; run, timed and kept."""
    have = ids(storm.a)
    name = rng.choice(storm.names)
    d = have.get(name)
    importable = [(f, n) for f, n in storm.exports if n not in have]
    choices = ["verify", "reload", "archive" if have else "verify"]
    if d is None:
        choices += ["create"] * 4 + (["import"] * 2 if importable else [])
    else:
        choices += ["destroy", "recreate", "prune"] + (["suspend"] * 2 if d.state == "active" else ["resume"] * 3)
    what = rng.choice(choices)
    t0 = time.time()
    if what == "create":
        p = strata("datasets", "create", name, "--archive", storm.a)
    elif what == "destroy":
        storm.destroyed[d.id] = (d, events_per_second(storm.a, d))
        p = strata("datasets", "destroy", name, "-y", "--archive", storm.a)
    elif what == "recreate":     # destroy and create the same name at once
        storm.destroyed[d.id] = (d, events_per_second(storm.a, d))
        p = strata("datasets", "destroy", name, "-y", "--archive", storm.a)
        if p.returncode == 0:
            storm.commands.append(Command("destroy", name, t0, time.time(), 0, p.stdout + p.stderr, d.id))
            t0 = time.time()
            p = strata("datasets", "create", name, "--archive", storm.a)
        what = "create"
    elif what in ("suspend", "resume"):
        p = strata("datasets", what, name, "--archive", storm.a)
    elif what == "prune":
        p = strata("datasets", "prune", name, "--older-than", f"{PRUNE_OLDER}s", "--level", "second",
                   "--archive", storm.a)
    elif what == "archive":
        name = rng.choice(sorted(have))
        out = str(storm.workdir / f"export-{len(storm.exports)}.strata")
        p = strata("datasets", "archive", name, "-o", out, "--archive", storm.a)
        if p.returncode == 0:
            storm.exports.append((out, name))
    elif what == "import":
        out, name = rng.choice(importable)
        p = strata("datasets", "import", out, "--archive", storm.a)
    elif what == "verify":
        p = strata("datasets", "verify", storm.a)
    else:
        collector.send_signal(signal.SIGHUP)
        p = subprocess.CompletedProcess([], 0, "", "")
    t1 = time.time()
    after = ids(storm.a).get(name)
    cmd = Command(what, name, t0, t1, p.returncode, (p.stdout + p.stderr).strip(),
                  after.id if after else (d.id if d else None))
    storm.commands.append(cmd)
    return cmd


def run(seed: int, workdir: Path, seconds: float, clients: int = 2) -> dict:
    """The storm for `seconds`; returns check()'s figures (raises AssertionError on a failure)."""
    with loop_device(size_mb=8) as dev:
        return _run(seed, workdir, seconds, clients, dev)


def _run(seed: int, workdir: Path, seconds: float, clients: int, dev: str) -> dict:
    storm = Storm(seed, Path(workdir), os.path.basename(dev))
    rng = random.Random(seed)
    pool = mkpool(storm.workdir, nvdevs=2, size="128M")
    eng = Engine(storm.workdir, pool).start()
    procs, load, refs = [], None, {}
    try:
        Archive.open(storm.a, readonly=False).close()
        with Archive.open(storm.b, readonly=False) as b:
            b.create(NFS_NAMES[0])
            b.create(DISK_NAMES[0].format(dev=storm.device))
            b.create("nfs.ops[client=127.0.0.1]")
        config = storm.workdir / "collect.toml"
        config.write_text(f'archive = "{storm.a}"\ndatasets = ["nfs.ops[client=127.0.0.9]"]\n')
        refs = {"nfs": NfsReference(eng), "disk": DiskReference(dev)}
        a = start_collect(storm.a, eng.proc.pid, storm.workdir / "collect-a.log", str(config))
        b = start_collect(storm.b, eng.proc.pid, storm.workdir / "collect-b.log")
        procs = [a, b]
        _wait_for_records(storm.b, 30, procs)
        load = Load(storm.workdir, "bg").start(arguments(
            "127.0.0.1", eng.port, eng.mount_port, "/data",
            {"profile": "mixed", "clients": clients, "threads": 2, "files": 8, "file_size": "2m",
             "io_size": "16k", "rate": 400, "duration": int(seconds), "setup": True, "seed": seed}))
        for r in refs.values():
            r.start()
        end = time.time() + seconds
        while time.time() < end:
            cmd = _step(storm, rng, a)
            if cmd.rc != 0:
                raise AssertionError(f"seed {seed}: {cmd.what} {cmd.name} failed: {cmd.said}")
            held = [s for s in status.running() if s.get("archive") in (storm.a, storm.b) and
                    s.get("state") != "writing"]
            assert not held, f"seed {seed}: a collector holds: {held}"
            time.sleep(rng.uniform(0.1, 1.2))
        for r in refs.values():
            r.stopping.set()
            r.join(timeout=10)
        refs["disk"].sweep()
        report = load.wait(timeout=120)
        time.sleep(2.5)                          # the last second of both written by both
        for p in procs:
            stop(p, signal.SIGTERM, 20)
    finally:
        for r in refs.values():
            r.stop()
        for p in procs:
            stop(p, signal.SIGTERM, 20)
        if load is not None and load.running():
            load.stop()
        eng.stop()
    for kind, r in refs.items():
        if r.error:
            raise AssertionError(f"seed {seed}: the {kind} reference failed: {r.error!r}")
    disk = refs["disk"]
    written = disk.kernel_writes() - disk.writes_before
    if written != sum(disk.sent.values()) + disk.swept:
        raise AssertionError(f"seed {seed}: /sys/block/{storm.device} counted {written} writes, "
                             f"the disk reference made {sum(disk.sent.values())} and swept {disk.swept}")
    return check(storm, refs, report, [(storm.workdir / f"collect-{x}.log").read_text() for x in "ab"])


def _wait_for_records(archive, timeout, procs):
    """Until the collector of archive stored a record of each of its datasets (a dataset's
    first interval is partial and not stored, two when its probes took long to attach)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for p in procs:
            if p.poll() is not None:
                raise AssertionError(f"strata collect exited {p.returncode}")
        with Archive.open(archive) as a:   # a first whole second of every dataset
            stored = a.conn.execute("SELECT COUNT(DISTINCT dataset) FROM records").fetchone()[0]
            if stored == len(a.datasets()):
                return
        time.sleep(0.3)
    raise AssertionError(f"not every dataset had a record within {timeout} s")


def events_per_second(archive, info, missed=False) -> dict:
    """{first second: (seconds, events)} of a dataset's second-level records: the events of
    every key but disk.ops' "missed" (a completion the kernel did not run the program for,
    counted when its request is issued again), or with missed=True those alone."""
    from strata.datasets import codec
    with Archive.open(archive) as a:
        spans = dict(a.conn.execute("SELECT t, seconds FROM spans WHERE dataset = ?", (info.id,)))
        rows = a.conn.execute("SELECT t, data FROM records WHERE dataset = ? AND step = 1 ORDER BY t",
                              (info.id,)).fetchall()
        idx = a.conn.execute("SELECT idx FROM keys WHERE dataset = ? AND key = 'missed'", (info.id,)).fetchone()
    out = {}
    for t, blob in rows:
        cells = codec.decode(info.kind, [blob])
        of_missed = cells.key == (idx[0] if idx else -1)
        out[t] = (spans.get(t, 1), int(cells.count[of_missed if missed else ~of_missed].sum()))
    return out


class Missed:
    """The disk reference's missed completions, by the second their request was issued again
    (the steady archive's disk.ops[device][op], op "missed"). A completion the kernel did not
    run the program for leaves its second short by one in every disk dataset; explain() owns
    such a shortfall to the next missed counts within window seconds, each used once per
    dataset. An unexplained shortfall is wrong."""

    def __init__(self, per_second: dict, window: int):
        self.per_second = {t: n for t, (_, n) in per_second.items() if n}
        self.window = window
        self.used = {}               # dataset id -> {second: missed counts used}
        self.explained = 0

    def explain(self, dataset: int, t: int, short: int) -> bool:
        used = self.used.setdefault(dataset, {})
        free = [(s, self.per_second[s] - used.get(s, 0)) for s in range(t, t + self.window + 1)
                if self.per_second.get(s, 0) > used.get(s, 0)]
        if short <= 0 or sum(n for _, n in free) < short:
            return False
        left = short
        for s, n in free:
            take = min(n, left)
            used[s] = used.get(s, 0) + take
            left -= take
        self.explained += short
        return True


def timelines(commands) -> dict:
    """{dataset id: [(surely active from, surely active until, maybe active from, maybe until)]}:
    each stretch an incarnation was active, from its activation's command window to its
    deactivation's (the end of the run for one still active)."""
    out, opened = {}, {}
    for c in commands:
        if c.rc != 0 or c.id is None:
            continue
        if c.what in ("create", "resume"):
            opened[c.id] = c
        elif c.what in ("suspend", "destroy") and c.id in opened:
            on = opened.pop(c.id)
            out.setdefault(c.id, []).append((on.end, c.start, on.start, c.end))
    for i, on in opened.items():
        out.setdefault(i, []).append((on.end, math.inf, on.start, math.inf))
    return out


def shifted(stored: dict, sent: dict) -> set:
    """Runs of consecutive stored seconds, each wrong alone and right together: the daemon,
    starved of CPU for a whole second or more, skipped a label and read everything since its
    last read into the next (collectors/FORMAT.md; a read late by less moves nothing). Nothing
    lost or added; a second's worth of time resolution is."""
    want = lambda t: sum(sent.get(s, 0) for s in range(t, t + stored[t][0]))
    wrong = sorted(t for t in stored if stored[t][1] != want(t))
    runs, out = [], set()
    for t in wrong:                                # consecutive wrong seconds
        if runs and t == runs[-1][-1] + 1:
            runs[-1].append(t)
        else:
            runs.append([t])
    for run in runs:                               # the shortest balanced stretches in each
        i = 0
        while i < len(run):
            ends = [j for j in range(i + 1, len(run)) if sum(stored[u][1] - want(u) for u in run[i:j + 1]) == 0]
            if ends:
                out |= set(run[i:ends[0] + 1])
                i = ends[0] + 1
            else:
                i += 1
    return out


def check(storm: Storm, refs: dict, report: dict, logs: list) -> dict:
    """The storm's findings; AssertionError naming the first failures. refs: {layer: its
    Reference}, the one a dataset is compared with named by its statistic's first part. A
    reference's unknown seconds (a reply crossed a second's end) must be stored but are not
    compared."""
    problems = []
    for archive in (storm.a, storm.b):
        v = strata("datasets", "verify", archive)
        if v.returncode != 0:
            problems.append(f"verify {archive}: {v.stdout.strip()}")
    for log in logs:
        for bad in ("holding", "damaged", "Traceback"):
            if bad in log:
                problems.append(f"a collector said {bad!r}: {log[-400:]}")
    last_ref = min(max(r.sent) if r.sent else 0 for r in refs.values())
    lines = timelines(storm.commands)
    prunes = {}
    for c in storm.commands:
        if c.what == "prune" and c.rc == 0:
            prunes[c.id] = max(prunes.get(c.id, 0), c.end - PRUNE_OLDER)
    checked = events = expected = lost = misplaced = wrong = moved = 0
    by_layer = {}
    steady = ids(storm.b)
    disk_ops = DISK_NAMES[0].format(dev=storm.device)
    # a request's tag comes round again within two rounds of the device's tags at the
    # reference's rate (the thread may change CPU, each with its own allocation hint)
    missed = Missed(events_per_second(storm.b, steady[disk_ops], missed=True),
                    math.ceil(2 * refs["disk"].tags / refs["disk"].per_second / 0.6) + 1)
    incarnations = dict(storm.destroyed)   # every dataset the storm made: destroyed ones as they were
    incarnations.update({i.id: (i, events_per_second(storm.a, i)) for i in ids(storm.a).values()})
    imported = {c.id: c.start for c in storm.commands if c.what == "import" and c.rc == 0}
    for info, stored in incarnations.values():
        name = info.name
        if name not in storm.names:
            continue
        ref = refs[name.split(".")[0]]
        sent, unknown = ref.sent, ref.unknown
        stretches = lines.get(info.id, [])
        late = shifted(stored, sent)
        moved += len(late)
        for t, (secs, n) in stored.items():
            want = sum(sent.get(s, 0) for s in range(t, t + secs))
            if t not in late and not unknown & set(range(t, t + secs)):
                checked += secs
                by_layer[name.split(".")[0]] = by_layer.get(name.split(".")[0], 0) + secs
                events += n
                expected += want
                if n != want and not (ref is refs["disk"] and missed.explain(info.id, t, want - n)):
                    wrong += 1
                    near = [f"{c.what} {c.name} (id {c.id}) {c.start - t:+.2f}..{c.end - t:+.2f}"
                            for c in storm.commands if t - 3 <= c.end and c.start <= t + secs + 1]
                    problems.append(f"{name} (id {info.id}) at {t}+{secs}s: {n} events stored, "
                                    f"the reference made {want}; stored seconds around it: "
                                    f"{[(u, stored[u][1]) for u in range(t - 2, t + 3) if u in stored]}; "
                                    f"commands around it (s from t): {near}")
            if t < imported.get(info.id, 0):
                continue      # copies of seconds checked under the incarnation they came from
            if not any(maybe_on <= t and t + secs <= maybe_off for _, _, maybe_on, maybe_off in stretches):
                misplaced += 1
                problems.append(f"{name} (id {info.id}): second {t} stored while it was not active")
        for sure_on, sure_off, _, _ in stretches:
            first = max(math.ceil(sure_on) + SETTLE, math.ceil(prunes.get(info.id, 0)))
            last = last_ref if sure_off == math.inf else min(math.floor(sure_off) - 2, last_ref)
            covered = {s for t, (secs, _) in stored.items() for s in range(t, t + secs)}
            missing = [s for s in range(first, last + 1) if s not in covered]
            lost += len(missing)
            if missing:
                problems.append(f"{name} (id {info.id}): {len(missing)} second(s) not stored while active, "
                                f"first {missing[0]}")
    # the steady archive: every second of the run equal to the references, strata-load's total
    for name, ref in ((NFS_NAMES[0], refs["nfs"]), (disk_ops, refs["disk"])):
        ref_stored = events_per_second(storm.b, steady[name])
        ref_seconds = {s for t, (secs, _) in ref_stored.items() for s in range(t, t + secs)}
        for t in ref.sent:
            if t not in ref_seconds:
                problems.append(f"steady archive: {name}: reference second {t} not stored")
        late = shifted(ref_stored, ref.sent)
        for t, (secs, n) in ref_stored.items():
            want = sum(ref.sent.get(s, 0) for s in range(t, t + secs))
            if n != want and t not in late and not ref.unknown & set(range(t, t + secs)) and \
                    not (ref is refs["disk"] and missed.explain(steady[name].id, t, want - n)):
                problems.append(f"steady archive: {name} at {t}: {n} events stored, the reference made {want}")
    load_stored = sum(n for _, n in events_per_second(storm.b, steady["nfs.ops[client=127.0.0.1]"]).values())
    load_sent = report["ops_total"] + sum(report["setup"]["ops"].values()) + \
        sum(report["setup"]["mount_ops"].values())    # the engine counts MOUNT's MNT in nfs.ops
    if load_stored != load_sent:
        problems.append(f"steady archive: strata-load sent {load_sent} NFS requests, {load_stored} stored")
    figures = {"seed": storm.seed, "commands": len(storm.commands),
               "by_kind": {k: sum(c.what == k for c in storm.commands) for k in
                           sorted({c.what for c in storm.commands})},
               "seconds_checked": checked, "seconds_checked_by_layer": by_layer, "events_compared": events,
               "reference_events": expected, "reference_seconds": len(refs["nfs"].sent),
               "disk_writes": sum(refs["disk"].sent.values()),
               "uncompared_seconds": sum(len(r.unknown) for r in refs.values()), "shifted_seconds": moved,
               "missed_completions": sum(missed.per_second.values()), "missed_explained": missed.explained,
               "lost_seconds": lost, "misplaced_seconds": misplaced, "wrong_seconds": wrong,
               "load_requests": load_sent, "problems": problems[:20]}
    if problems:
        raise AssertionError(json.dumps(figures, indent=1))
    return figures


if __name__ == "__main__":   # one seed by hand: python tests/lifecycle_storm.py SEED SECONDS DIR
    print(json.dumps(run(int(sys.argv[1]), Path(sys.argv[3]), float(sys.argv[2])), indent=1))
