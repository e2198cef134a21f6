"""`strata doctor`: what this kernel and machine offer for collection, what of
strata itself is built, and what each running collector is doing. One row per
check; each failing row says how to fix it."""
import json
import os
import platform
import resource
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass

import click

from strata.lab.binaries import MissingBinary, find_binary
from strata.cli import table
from strata.cli.doctor_views import describe, nfsd_running, server_views
from strata.collect import status

CAP_PERFMON, CAP_BPF = 38, 39


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = True  # collection cannot run while a required check fails
    state: str = ""        # shown instead of ok / FAIL / absent (a collector's state)


def _effective_caps() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return 0


def check_privileges() -> Check:
    if os.geteuid() == 0:
        return Check("privileges", True, "running as root")
    caps = _effective_caps()
    if caps >> CAP_BPF & 1 and caps >> CAP_PERFMON & 1:
        return Check("privileges", True, "CAP_BPF and CAP_PERFMON")
    return Check("privileges", False, "not root, no CAP_BPF + CAP_PERFMON",
                 "run as root, or: sudo setcap cap_bpf,cap_perfmon+ep build/bin/strata-collect")


def check_btf() -> Check:
    path = "/sys/kernel/btf/vmlinux"
    if os.path.exists(path):
        return Check("kernel BTF", True, f"{path} ({os.path.getsize(path) // 1024} KiB)")
    return Check("kernel BTF", False, f"{path} missing", "use a kernel built with CONFIG_DEBUG_INFO_BTF=y")


def check_tracefs() -> Check:
    if os.path.isdir("/sys/kernel/tracing/events"):
        return Check("tracefs", True, "mounted at /sys/kernel/tracing")
    return Check("tracefs", False, "not mounted", "mount -t tracefs nodev /sys/kernel/tracing (make deps does it)")


CAP_SYS_RESOURCE = 24


def check_memlock() -> Check:
    soft, hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    limit = "unlimited" if soft == resource.RLIM_INFINITY else f"{soft // 1024} KiB"
    major, minor = (int(x) for x in platform.release().split(".")[:2])
    if (major, minor) >= (5, 11):
        return Check("memlock rlimit", True, f"{limit}; kernel {major}.{minor} charges BPF maps to memcg, not memlock")
    if soft == resource.RLIM_INFINITY or soft >= 64 << 20:
        return Check("memlock rlimit", True, limit)
    if hard == resource.RLIM_INFINITY or os.geteuid() == 0 or _effective_caps() >> CAP_SYS_RESOURCE & 1:
        return Check("memlock rlimit", True, f"{limit}; strata-collect raises it (libbpf does on kernels "
                     "before 5.11, which count BPF maps here)")
    return Check("memlock rlimit", False, f"{limit}, hard limit {hard // 1024} KiB",
                 "ulimit -l unlimited (kernel < 5.11 counts BPF maps here)")


ATTACH_TYPES = [  # (key in strata-features output, row name, required, what needs it)
    ("tp_btf", "tp_btf attach", False, "disk layer (else classic tracepoints)"),
    ("tracepoint", "tracepoint attach", True, "disk layer"),
    ("syscalls", "syscall tracepoints", False,
     "fs view of any server process where fentry is refused (strata collect --fs-pid/--fs-comm/--fs-cgroup)"),
    ("uprobe", "uprobe/USDT attach", True, "NFS and cache layers (engine probes)"),
    ("kprobe", "kprobe attach", False, "not used by strata"),
    ("fentry", "fentry/fexit attach", False, "fs view's hook on each followed syscall (else syscall tracepoints)"),
    ("tc", "TC clsact attach", False, "wire layer (NFS of any server, from its interfaces)"),
    ("tcx", "tcx link attach", False, "wire layer's preferred hook (Linux 6.6+; else TC clsact)"),
]
KERNEL_FACTS = [  # helpers, maps and kfuncs strata-features asked the kernel for
    ("bpf_loop", "bpf_loop helper", False, "wire layer's parser loop (Linux 5.17+; else bounded loops)"),
    ("task_storage", "task storage", False, "fs layer's syscall in flight (Linux 5.11+; else a hash by thread)"),
    ("rdonly_cast", "bpf_rdonly_cast kfunc", False, "fs layer's typed loads (Linux 6.2+; else helper reads)"),
    ("disk_start", "block request start time", False,
     "disk.queue from the request's own start_time_ns read at completion, to its issue; disk.latency from "
     "issue to completion, paired by request at block_rq_issue (else no disk.queue)"),
    ("bpf_stats", "BPF run-time stats", False, "BPF ns per hit in bench/ (Linux 5.8+)"),
]


def probe_features() -> tuple[dict | None, Check | None]:
    """strata-features' findings, or None and the row that says why there are none."""
    try:
        prober = find_binary("strata-features")
    except MissingBinary as e:
        return None, Check("BPF program load", False, str(e), "make")
    proc = subprocess.run([prober], capture_output=True, text=True, timeout=30)
    try:
        return json.loads(proc.stdout), None
    except json.JSONDecodeError:
        return None, Check("BPF program load", False, f"strata-features failed: {proc.stderr.strip()[:200]}",
                           "run as root; check `strata-features` output")


def check_kernel_features(found: dict | None, failed: Check | None) -> list[Check]:
    if found is None:
        return [failed]
    attach = {key: found.get(key, {"ok": False, "error": "not probed"}) for key, *_ in ATTACH_TYPES}
    loads = [k for k, v in attach.items() if v["ok"] or not v["error"].startswith("load")]
    rows = [Check("BPF program load", bool(loads),
                  f"{len(loads)} of {len(attach)} program types load",
                  "" if loads else "need root/CAP_BPF and a kernel with CONFIG_BPF_SYSCALL")]
    for key, name, required, used_for in ATTACH_TYPES + KERNEL_FACTS:
        res = found.get(key, {"ok": False, "error": "not probed"})
        detail = f"works; {used_for}" if res["ok"] else f"absent here ({res['error']}); {used_for}"
        fix = "" if res["ok"] or not required else "needs a kernel with this attach type"
        rows.append(Check(name, res["ok"], detail, fix, required))
    return rows


def check_module_btf() -> Check:
    """BTF of loadable modules (CONFIG_DEBUG_INFO_BTF_MODULES): typed access to module
    tracepoints such as nfsd's and sunrpc's."""
    try:
        mods = [m for m in os.listdir("/sys/kernel/btf") if m != "vmlinux"]
    except OSError:
        mods = []
    if mods:
        return Check("module BTF", True, f"{len(mods)} loaded modules have BTF", required=False)
    return Check("module BTF", False, "no loaded module has BTF in /sys/kernel/btf", required=False)


def check_nfsd() -> Check:
    """Kernel nfsd: nfsd.* sees each request inside it while its modules are loaded; the
    wire layer sees it on its interfaces."""
    if nfsd_running():
        return Check("kernel nfsd", True, "running: nfsd.* sees each request inside nfsd "
                     "(sunrpc:svc_stats_latency), wire.* on its interfaces", required=False)
    return Check("kernel nfsd", False, "not running here (nfsd module not loaded): nfsd.* datasets wait until it "
                 "runs; wire.* still sees any user-space server (nfs-ganesha, strata-engine)", required=False)


def check_binaries() -> list[Check]:
    rows = []
    for name, required, role in [
        ("strata-collect", True, "collector daemon"),
        ("strata-engine", False, "companion NFS cache engine"),
        ("strata-load", False, "NFS load generator"),
    ]:
        try:
            rows.append(Check(name, True, find_binary(name), required=required))
        except MissingBinary as e:
            rows.append(Check(name, False, f"{role}: {e}", "make", required))
    return rows


def check_tools() -> list[Check]:
    rows = []
    for tool, pkg, role in [("nfs-cat", "libnfs-utils", "libnfs client tools"),
                            ("biolatency", "libbpf-tools", "peer tool for cross-checks")]:
        path = shutil.which(tool) or (f"/usr/sbin/{tool}" if os.path.exists(f"/usr/sbin/{tool}") else None)
        rows.append(Check(tool, bool(path), path or f"{role}: not installed",
                          "" if path else f"apt-get install {pkg} (make deps)", required=False))
    return rows


def _clock(t) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t)) if isinstance(t, (int, float)) else "?"


def check_collectors(now: float | None = None) -> list[Check]:
    """One row per running `strata collect` (its status file, collect/status.py): writing
    its archive, or holding the events in memory while it cannot (why, since when)."""
    now = time.time() if now is None else now
    rows = []
    for s in status.running():
        name, archive = f"collector (pid {s.get('pid')})", s.get("archive")
        errors = s.get("errors") or []
        said = f"; last problems: {' | '.join(map(str, errors[-3:]))}" if errors else ""
        collects = f"{s.get('datasets', '?')} dataset(s)"
        if s.get("state") == "holding":
            held = s.get("held_since") or s.get("since")
            pending = f"{int(now - held)} s" if isinstance(held, (int, float)) else "?"
            rows.append(Check(name, False, f"{archive} cannot be written: {s.get('problem')}. Holding the events "
                              f"of {collects} since {_clock(held)} ({pending}) in memory; stored as one span per "
                              f"dataset when it can be{said}", "make the archive writable (free space, repair or "
                              "remount its file system); nothing is lost meanwhile", required=False, state="holding"))
        else:
            rows.append(Check(name, not errors, f"writing {archive} every second, {collects}, since "
                              f"{_clock(s.get('since'))}{said}", "" if not errors else
                              "see the problems; `strata datasets list` shows what is collected",
                              required=False, state="writing"))
    if not rows:
        rows.append(Check("collector", False, "no strata collect is running", "strata collect (or: systemctl "
                          "start strata-collect)", required=False, state="none"))
    return rows


def run_checks() -> tuple[list[Check], list]:
    """(the checks, the views per server kind)."""
    found, failed = probe_features()
    binaries = check_binaries()
    have_engine = any(c.name == "strata-engine" and c.ok for c in binaries)
    checks = ([Check("kernel", True, f"Linux {platform.release()} {platform.machine()}"),
               check_privileges(), check_btf(), check_tracefs(), check_memlock()]
              + check_kernel_features(found, failed) + [check_module_btf(), check_nfsd()] + binaries + check_tools()
              + check_collectors())
    return checks, server_views(found or {}, have_engine)


def _status(c: Check) -> str:
    """A check's status word: its state, else ok, FAIL (required) or absent."""
    return c.state or ("ok" if c.ok else "FAIL" if c.required else "absent")


def _plain(checks: list, servers: list, ready: bool) -> list:
    """The report for a pipe or file: one whole line per check and per server kind
    (cli/table.lines), the fix of a failing check at the end of its line."""
    rows = [["check", "status", "detail"]] + [
        [c.name, _status(c), c.detail + (f"; fix: {c.fix}" if c.fix else "")] for c in checks]
    views = [["server", "on this host", "views here", "not here", "note"]] + [
        [s.server, "yes" if s.installed else "no", describe(s.here), ", ".join(s.absent) or "-", s.note]
        for s in servers]
    return ["strata doctor", *table.lines(rows, (2,)), "", "views this host offers, by server",
            *table.lines(views, (4,)), "",
            "collection can run here" if ready else "collection cannot run here: fix the FAIL rows"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def doctor(as_json):
    """Check what this kernel and machine offer for collection.

    Prints one row per check: BTF, tracefs, BPF program load, tp_btf,
    tracepoint, uprobe/USDT, kprobe, fentry, TC and tcx attach, the bpf_loop
    helper, task storage, bpf_rdonly_cast, BPF stats, module BTF, kernel nfsd,
    memlock, and strata's own programs. Each failing row says how to fix it.
    One row per running collector: writing its archive, or holding the
    events in memory while the archive cannot be written (why, since when),
    and the last problems it said.
    Then, per kind of NFS server (strata-engine, nfs-ganesha and other
    user-space servers, kernel nfsd), the views this host offers for it:
    wire (wire.*), fs (fs.*), disk (disk.*), nfsd (nfsd.*), engine USDT
    (nfs.*, arc.*, ...).

    Exits 0 when collection can run here, 1 otherwise.
    """
    checks, servers = run_checks()
    ready = all(c.ok for c in checks if c.required)
    if as_json:
        from strata.heatmaps import json_out   # numpy: only for --json
        click.echo(json_out.dumps(json_out.document("doctor", {
            "ready": ready, "checks": [asdict(c) for c in checks], "servers": [asdict(s) for s in servers]})))
    elif table.width() == table.UNLIMITED:
        for line in _plain(checks, servers, ready):
            click.echo(line)
    else:
        from rich.console import Console
        from rich.table import Table

        checks_table = Table(title="strata doctor", title_justify="left")
        checks_table.add_column("check", no_wrap=True)   # names never fold; min_width would crop the table at 80 columns
        checks_table.add_column("status", no_wrap=True, min_width=6)   # "absent": the status shows at any width
        for col in ("detail", "fix"):
            checks_table.add_column(col, overflow="fold")
        for c in checks:
            colour = "green" if c.ok else "yellow" if c.state or not c.required else "red"
            checks_table.add_row(c.name, f"[{colour}]{_status(c)}[/]", c.detail, c.fix)
        views = Table(title="views this host offers, by server", title_justify="left")
        for col in ("server", "on this host", "views here", "not here", "note"):
            views.add_column(col, overflow="fold")
        for s in servers:
            views.add_row(s.server, "yes" if s.installed else "no", f"[green]{describe(s.here)}[/]",
                          f"[yellow]{', '.join(s.absent)}[/]", s.note)
        console = Console()
        console.print(checks_table)
        console.print(views)
        console.print("collection can run here" if ready else "[red]collection cannot run here: fix the FAIL rows[/]")
    raise SystemExit(0 if ready else 1)
