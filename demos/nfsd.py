"""`strata demo --server nfsd`: the kernel's own NFS server, seen from inside the
kernel (the nfsd layer: latency per request, by client and op, and its wait for a
thread; the nfsd_io layer under it: nfsd's reads of the files), on the wire (the network
part of time:nfsd) and at the disk. The
kernel's nfsd serves an ext4 file system on a loop device; strata-load clients in
network namespaces read a working set that fits the page cache at random; halfway
the page cache is dropped, so the disk band appears in nfsd.io.latency (and under
nfsd.latency) and disk.latency, and fades as the cache fills again.

Everything it starts is undone by the Teardown, in reverse order: load, collector,
nfsd (its threads, export, mountd, rpcbind), mount, loop device, temporary files.
"""
from dataclasses import dataclass

from strata.demos import page_cache_run
from strata.demos.page_cache_run import Settings
from strata.demos.steps import collect, say, scratch
from strata.lab.nfsd import KernelNfsd, NfsdError

DATASETS = ["nfsd.latency[client]", "nfsd.ops[client]", "nfsd.latency[op]", "nfsd.ops[op]", "nfsd.io.latency[op]",
            "disk.latency[device]", "disk.latency[op=read][device]", "nfsd.queue[op]", "disk.queue[device]",
            "wire.latency[op]"]


WIRE_ATTACH = 3   # seconds for the wire view to attach to the clients' new interfaces (time:nfsd's network)
FIRST_DATA = 150  # seconds the collector may take to load its programs (the wire's, on an emulated CPU, are slow)


@dataclass
class Facts(page_cache_run.Facts):
    server: str = "nfsd"


def run(settings: Settings, undo, echo) -> Facts:
    """Runs the scenario; every resource goes on `undo` (a Teardown) as it is made."""
    why = KernelNfsd.missing()
    if why:
        raise NfsdError(why)
    work = scratch(undo, echo)
    out, facts = page_cache_run.export(settings, Facts, work, work / "export", undo, echo)

    nfsd = KernelNfsd(facts.export)
    undo.callback(nfsd.stop)
    nfsd.start()
    say(echo, f"kernel nfsd on port {nfsd.nfsport} (rpc.mountd on {nfsd.mountport}), exporting {facts.export}")

    coll = collect(work, facts.archive, DATASETS, undo, "disk.latency[device]", timeout=FIRST_DATA)
    say(echo, f"collecting {', '.join(DATASETS)} into {facts.archive}")

    def check():
        coll.check()
        if not nfsd.alive():
            raise NfsdError("the kernel's nfsd stopped")

    page_cache_run.read_with_drop(settings, facts, out, work, (nfsd.nfsport, nfsd.mountport), coll, check, undo, echo,
                                  attach_wait=WIRE_ATTACH)
    return facts
