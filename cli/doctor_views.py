"""Which views strata offers on this host for each kind of NFS server: from the kernel
features `strata-features` found and the programs present. A view is a family of
statistics and the attach type it needs:

    wire   wire.*   TC (tcx, or clsact) on the ifaces any NFS server, nothing asked of it
    fs     fs.*     fentry, else syscall tracepoints a user-space server's own syscalls
    disk   disk.*   block tracepoints                every block device below any server
    nfsd   nfsd.*   sunrpc's svc_stats_latency, and  the kernel's nfsd, while its modules are loaded
                    nfsd's read/write tracepoints (nfsd.io.*)
    usdt   nfs.*, arc.*, l2arc.*, zil.*, vdev.*      uprobes on strata-engine's USDT probes
"""
import os
import shutil
from dataclasses import dataclass

VIEWS = {  # view -> (statistics, the strata-features keys it needs: any one of them)
    "wire": ("wire.*", ("tc",)),
    "fs": ("fs.*", ("fentry", "syscalls")),
    "disk": ("disk.*", ("tracepoint",)),
    "nfsd": ("nfsd.*", ("tracepoint",)),
    "engine USDT": ("nfs.*, arc.*, l2arc.*, zil.*, vdev.*", ("uprobe",)),
}

SERVERS = [  # (server kind, the views that apply to it, why the others do not)
    ("strata-engine", ("wire", "fs", "disk", "engine USDT"), ""),
    ("nfs-ganesha, other user-space servers", ("wire", "fs", "disk"),
     "no USDT probes of strata's (fs: --fs-comm ganesha.nfsd)"),
    ("kernel nfsd", ("nfsd", "wire", "disk"),
     "its threads make no syscalls; no USDT probes; nfsd.* while nfsd runs (its modules loaded)"),
]


def nfsd_running() -> bool:
    """The kernel's nfsd is loaded (what strata-collect asks before loading nfsd.*)."""
    return os.path.exists("/proc/net/rpc/nfsd")


def _installed(server: str, have_engine: bool) -> bool:
    if server == "strata-engine":
        return have_engine
    if server == "kernel nfsd":
        return nfsd_running()
    return shutil.which("ganesha.nfsd") is not None


@dataclass
class ServerViews:
    server: str
    installed: bool     # the server is on this host (ganesha.nfsd on PATH, nfsd in the kernel)
    here: list          # views that work on this host
    absent: list        # views that apply to this server but this host lacks
    note: str


def server_views(features: dict, have_engine: bool) -> list[ServerViews]:
    """features: strata-features' {key: {"ok": bool, ...}}; have_engine: strata-engine found."""
    def works(view):
        ok = any(features.get(key, {}).get("ok", False) for key in VIEWS[view][1])
        return ok and (view != "engine USDT" or have_engine) and (view != "nfsd" or nfsd_running())

    rows = []
    for server, views, note in SERVERS:
        rows.append(ServerViews(server, _installed(server, have_engine), [v for v in views if works(v)], [v for v in views if not works(v)], note))
    return rows


def describe(views: list) -> str:
    return ", ".join(f"{v} ({VIEWS[v][0]})" for v in views) or "none"
