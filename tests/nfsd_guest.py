"""The guest side of tests/test_collect_nfsd.py, run inside a kernel-matrix guest as root:
starts a collector and asks it for nfsd.* before nfsd runs (the datasets wait), starts the kernel's nfsd
(NFSv3 only, one export on the guest's ext4 /tmp), asks strata doctor, collects nfsd.* and wire.* while one
long-lived libnfs client (strata-load) drives a mixed load, and writes what it saw and
/proc/net/rpc/nfsd's procedure counts before and after to OUT/nfsd.json."""
import json
import subprocess
import sys
import time
from pathlib import Path

from collect_util import Collector
from conftest import built

EXPORT = "/tmp/nfsd-export"
NFS3_PROCS = ["null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write", "create", "mkdir",
              "symlink", "mknod", "remove", "rmdir", "rename", "link", "readdir", "readdirplus", "fsstat",
              "fsinfo", "pathconf", "commit"]
DATASETS = {"op": ("nfsd.ops", "op"), "client": ("nfsd.ops", "client"), "version": ("nfsd.ops", "version"),
            "status": ("nfsd.ops", "status"), "latency": ("nfsd.latency", "op"), "size": ("nfsd.size", "op"),
            "wire": ("wire.ops", "op"), "wire_latency": ("wire.latency", "op")}


def sh(cmd: str) -> str:
    return subprocess.run(["sh", "-c", cmd], check=True, capture_output=True, text=True).stdout


def proc3() -> dict:
    """nfsd's own count per NFSv3 procedure (/proc/net/rpc/nfsd, its proc3 line)."""
    for line in Path("/proc/net/rpc/nfsd").read_text().splitlines():
        if line.startswith("proc3 "):
            counts = [int(x) for x in line.split()[2:]]
            return dict(zip(NFS3_PROCS, counts))
    raise AssertionError("no proc3 line in /proc/net/rpc/nfsd")


def start_nfsd() -> None:
    sh("modprobe nfsd && mount -t nfsd nfsd /proc/fs/nfsd && (rpcbind -w || rpcbind)")
    sh(f"mkdir -p {EXPORT} && chmod 777 {EXPORT}")
    sh(f"exportfs -o rw,no_root_squash,insecure,fsid=1 127.0.0.1:{EXPORT}")
    sh("rpc.nfsd -N 4 2 && rpc.mountd -N 4")


def buckets(c: Collector, ident: str) -> dict:
    """A heat map's events per key and bucket, over all its records."""
    out: dict = {}
    for rec in c.data(ident):
        for key, counts in rec["data"].items():
            mine = out.setdefault(key, {})
            for b, n in counts.items():
                mine[b] = mine.get(b, 0) + n
    return out


def totals(c: Collector, ident: str) -> dict:
    out: dict = {}
    for rec in c.data(ident):
        for key, value in rec["data"].items():
            if isinstance(value, dict):  # a heat map: its events by bucket
                value = sum(value.values())
            out[key] = out.get(key, 0) + value
    return out


def main(out: Path, seconds: int) -> None:
    result = {}
    c = Collector("--interval", "1")  # started before nfsd: its nfsd.* datasets wait for it
    try:
        result["adds"] = {name: c.send(f"add {name} {stat} {bd}") for name, (stat, bd) in DATASETS.items()}
        result["waiting"] = c.wait_status(lambda s: s["waiting"], timeout=60)
        start_nfsd()
        doctor = subprocess.run([str(Path(sys.executable).parent / "strata"), "doctor", "--json"],
                                capture_output=True, text=True, timeout=300)
        result["doctor"] = json.loads(doctor.stdout)
        result["btf"] = sorted(p.name for p in Path("/sys/kernel/btf").iterdir())
        layers = ["nfsd"] + (["wire"] if result["adds"]["wire"]["type"] == "ack" else [])
        c.wait_status(lambda s: all(layer in s["attached"] for layer in layers), timeout=60)
        time.sleep(2)  # every probe attached for a whole interval before the load starts
        before = proc3()
        load = subprocess.run([str(built("bin/strata-load")), "--server", "127.0.0.1", "--export", EXPORT,
                               "--profile", "mixed", "--io-size", "8k", "--duration", str(seconds), "--setup",
                               "--files", "4", "--file-size", "256k", "--json", "-"],
                              capture_output=True, text=True, timeout=300)
        result["load"] = {"rc": load.returncode, "stderr": load.stderr[-2000:]}
        after = proc3()
        c.flush_now()
        time.sleep(2)
        c.flush_now()
        result["proc3"] = {op: after[op] - before[op] for op in NFS3_PROCS if after[op] != before[op]}
        result["seen"] = {name: totals(c, name) for name in DATASETS}
        result["heatmaps"] = {name: buckets(c, name) for name in ("latency", "wire_latency", "size")}
        result["status"] = c.statuses()[-1]
    finally:
        c.send("quit")
        c.proc.wait(timeout=60)
    (out / "nfsd.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
