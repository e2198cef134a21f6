"""`strata demo --server ganesha`: a server strata does not control, seen at the
wire, file-system and disk layers. Debian's nfs-ganesha (FSAL VFS) serves an ext4
file system on a loop device; 10 strata-load clients in network namespaces read
a working set that fits the page cache at random; halfway the page cache is
dropped, so the disk band appears under fs.latency and wire.latency and fades as
the cache fills again.

Everything it starts is undone by the Teardown, in reverse order: load,
collector, ganesha, mount, loop device, temporary files.
"""
import shutil
from dataclasses import dataclass

from strata.demos import page_cache_run
from strata.demos.page_cache_run import Settings
from strata.demos.steps import collect, say, scratch
from strata.lab.ganesha import Ganesha, GaneshaError

DATASETS = ["wire.latency[client]", "wire.ops[client]", "wire.ops[op]", "fs.latency[op]", "fs.ops[op]",
            "fs.latency[tier]", "disk.latency[device]", "disk.queue[device]"]


@dataclass
class Facts(page_cache_run.Facts):
    server: str = "ganesha"
    ganesha_pid: int = 0


def run(settings: Settings, undo, echo) -> Facts:
    """Runs the scenario; every resource goes on `undo` (a Teardown) as it is made."""
    why = Ganesha.missing()
    if why:
        raise GaneshaError(why)
    work = scratch(undo, echo)
    g = Ganesha()
    undo.callback(shutil.rmtree, g.dir, True)
    out, facts = page_cache_run.export(settings, Facts, work, g.export, undo, echo)

    g.start(new_session=True)
    undo.callback(g.stop)
    facts.ganesha_pid = g.pid
    say(echo, f"nfs-ganesha pid {g.pid} on 127.0.0.1:{g.nfsport} (mount {g.mountport}), FSAL VFS")

    options = ["--fs-pid", g.pid, "--wire-port", g.nfsport, "--wire-port", g.mountport,
               "--wire-iface", "stl*", "--wire-iface", "lo"]
    coll = collect(work, facts.archive, DATASETS, undo, "disk.latency[device]", options=options)
    say(echo, f"collecting {', '.join(DATASETS)} into {facts.archive}")

    def check():
        coll.check()
        if not g.alive():
            raise GaneshaError("nfs-ganesha died")

    page_cache_run.read_with_drop(settings, facts, out, work, (g.nfsport, g.mountport), coll, check, undo, echo)
    return facts
