"""The two sides of `strata check ab`: engines (a binary, a build folder or a git
revision) or server commands, each started with its own collector on its own archive,
in a random order, and the load runs against one side. Both modes (rounds.py,
duet.py) build on these."""
import random
import time
from dataclasses import dataclass
from pathlib import Path

from strata.checks import engines, servers
from strata.checks.errors import CheckError
from strata.checks.layout import same_layout
from strata.datasets.archive import Archive
from strata.lab.collect import Collection, create_datasets
from strata.lab.load import Load, arguments
from strata.lab.logs import say


@dataclass
class Side:
    name: str            # A or B
    label: str           # what the user gave: a path, a revision or a server command
    binary: str | None   # None: a foreign server
    work: Path
    delays: dict
    server: servers.Server | None = None
    export: str = engines.EXPORT
    archive: str = ""
    host: str = ""
    ports: tuple = ()
    coll: Collection | None = None
    pid: int | None = None   # the server's process
    pool: tuple = ()         # vdev files of a pool the engine serves as it is (empty: a fresh pool)


def make_sides(specs: dict, server_export, repo, delays, scratch: Path) -> dict:
    """Side A and side B from specs {"A": (path, rev, server), "B": ...}: engines from a
    path or a revision, or server commands; delays apply to B."""
    sides = {}
    for name, (path, rev, server) in specs.items():
        work = scratch / name
        work.mkdir()
        d = delays if name == "B" else {}
        try:
            if server:
                sides[name] = Side(name, server, None, work, d, servers.Server(name, server, work, server_export))
                continue
            if rev:
                say("check ab", f"building engine {name} from {rev}")
                binary = engines.build_revision(engines.repo_root(repo), rev, scratch / f"src-{name}")
            else:
                binary = engines.from_path(path)
        except (engines.EngineSourceError, servers.ServerError) as e:
            raise CheckError(str(e)) from None
        sides[name] = Side(name, rev or path, binary, work, d)
    return sides


def start_sides(prof, sides: dict, undo, wait: bool = True):
    """Starts both sides and their collectors, in a random order (so neither side is
    always the one started first on a fresh machine) and with one address-space layout
    (checks/layout.py), and waits for their first data (wait=False: not, and the caller
    keeps only the seconds both stored, first_collected);
    returns the order they were started in ("AB" or "BA")."""
    options = load_options(prof)
    if not same_layout():
        say("check ab", "warning: cannot turn address-space randomisation off (personality), so each side keeps "
                        "a layout of its own, which can move its latency by a few percent")
    wire = any(s.server for s in sides.values())
    order = random.sample(list(sides.values()), len(sides))
    for s in order:
        if s.server:
            undo.callback(s.server.stop)
            s.server.start()
            s.host, s.ports, s.export, pid = servers.HOST, s.server.ports(), s.server.export, None
            s.pid = s.server.proc.pid
        else:
            s.host, nfsport, mountport, _, pid = engines.private_engine(prof, s.work, undo, s.binary, s.delays,
                                                                                     s.pool)
            s.ports, s.pid = (nfsport, mountport), pid
        s.archive = str(s.work / "collect.db")
        create_datasets(s.archive, prof.datasets)
        s.coll = Collection(s.work, s.archive, pid, wire_options(s, options) if wire else ()).start()
        undo.callback(s.coll.stop)
    for s in sides.values() if wait else ():
        s.coll.wait_for_data(prof.datasets[0])
    return "".join(s.name for s in order)


def first_collected(prof, sides: dict, start: int, end: int) -> int:
    """The first second of [start, end) that both sides' collectors stored (their probes
    attach while the working sets are written and the warm-up runs); CheckError when
    one of them stored none."""
    first = start
    for s in sides.values():
        with Archive.open(s.archive) as ar:
            q = ar.query(prof.datasets[0], start, end)
        seconds = q.times[q.present] if len(q.present) else []
        if not len(seconds):
            raise CheckError(f"side {s.name}'s collector stored no {prof.datasets[0]} while it was measured: "
                             f"{s.coll.log_tail()}")
        first = max(first, int(seconds[0]))
    return first


def first_stored(prof, sides: dict, since: int) -> int | None:
    """The latest of both sides' first stored second of the first dataset at or after since;
    None while one of them has stored none."""
    firsts = []
    for s in sides.values():
        check_running(sides)
        with Archive.open(s.archive) as ar:
            q = ar.query(prof.datasets[0], since, int(time.time()) + 2)
        if not q.present.any():
            return None
        firsts.append(int(q.times[q.present][0]))
    return max(firsts)


def wait_for_second(prof, sides: dict, second: int, timeout: float = 15):
    """Blocks until both sides' collectors have stored `second` (or a later one); CheckError
    after timeout seconds."""
    deadline = time.monotonic() + timeout
    for s in sides.values():
        while True:
            check_running(sides)
            with Archive.open(s.archive) as ar:
                q = ar.query(prof.datasets[0], second, second + 60)
            if q.present.any():
                break
            if time.monotonic() > deadline:
                raise CheckError(f"side {s.name}'s collector has not stored second {second} within {timeout:.0f}s: "
                                 f"{s.coll.log_tail()}")
            time.sleep(0.1)


def load_options(prof) -> dict:
    """The profile's [load] table without its setup switch."""
    return {k: v for k, v in prof.load.items() if k != "setup"}


def wire_options(side: Side, options: dict) -> list:
    """The wire layer on lo (and the client namespaces' veths), following this side's ports only."""
    ifaces = ["lo"] + (["stl*"] if options.get("netns") else [])
    return [a for p in side.ports if p for a in ("--wire-port", p)] + [a for i in ifaces for a in ("--wire-iface", i)]


def load_args(side: Side, options: dict) -> list:
    """strata-load's arguments for a load against this side."""
    nfsport, mountport = side.ports
    return arguments(side.host, nfsport, mountport, side.export, options)


def check_running(sides: dict):
    """Raises the lab's one-line error when a side's collector or server has stopped."""
    for s in sides.values():
        s.coll.check()
        if s.server:
            s.server.check()


def run_load(side: Side, options: dict, duration: int, tag: str, sides: dict) -> tuple:
    """Runs the load against one side for `duration` seconds; returns when it began and its report."""
    began = time.time()
    load = Load(side.work, tag).start(load_args(side, {**options, "duration": duration}))
    try:
        while load.running():
            time.sleep(0.25)
            check_running(sides)
        report = load.wait(timeout=60)
    finally:
        load.stop()
    return began, report


def whole(path, name):
    """All of dataset name in the archive file at path."""
    with Archive.open(str(path)) as ar:
        return ar.query_whole(name)
