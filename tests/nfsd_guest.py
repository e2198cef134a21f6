"""The guest side of tests/test_collect_nfsd.py, run inside a kernel-matrix guest as root:
starts a collector and asks it for nfsd.* before nfsd runs (the datasets wait), starts the
kernel's nfsd (NFSv3 and NFSv4; two exports on the guest's ext4 /tmp: EXPORT for NFSv3 and
V4ROOT, the NFSv4 root), asks strata doctor, and collects nfsd.* and wire.* while
NETNS_CLIENTS libnfs NFSv3 clients (strata-load --netns, each in its own network
namespace) drive a mixed load and one NFSv4.0 client (tests/nfs4_ops) sends COMPOUNDs of
known main ops from 127.0.0.1. Datasets filtered on each NFSv3 client's address are added
once its veth appears (the load waits before its first RPC). Writes what it saw, what the
clients said they sent and /proc/net/rpc/nfsd's counts before and after to OUT/nfsd.json,
with the records of nfsd.latency, nfsd.queue, nfsd.io.latency and wire.latency by op.
Then, the page cache dropped, one client reads the files again (cold_reads); and with
readahead off, the page cache dropped, one client reads TIER_READS blocks of a file twice
(tier_passes): nfsd.*[tier] and nfsd.io.*[tier] against /proc/diskstats."""
import json
import re
import subprocess
import sys
import time
from pathlib import Path

from collect_util import Collector
from conftest import built

EXPORT = "/tmp/nfsd-export"
V4ROOT = "/tmp/nfsd-v4"  # the NFSv4 root (fsid=0): nfs4_ops walks to V4ROOT/dir/f
NETNS_CLIENTS = 3
NFS4_COUNT = 40  # nfs4_ops: compounds of each main op
COLD_SECONDS = 4  # reads after the page cache is dropped
TIER_RATE, TIER_SECONDS = 100, 3  # tier_passes: reads per second and seconds of each pass
NFS3_PROCS = ["null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write", "create", "mkdir",
              "symlink", "mknod", "remove", "rmdir", "rename", "link", "readdir", "readdirplus", "fsstat",
              "fsinfo", "pathconf", "commit"]
NFS4_OPS = {3: "access", 9: "getattr", 15: "lookup", 22: "putfh", 24: "putrootfh", 25: "read", 38: "write",
            10: "getfh"}  # proc4ops columns (opcode) of the ops nfs4_ops sends
DATASETS = {"op": ("nfsd.ops", "op"), "client": ("nfsd.ops", "client"), "version": ("nfsd.ops", "version"),
            "status": ("nfsd.ops", "status"), "export": ("nfsd.ops", "export"), "latency": ("nfsd.latency", "op"),
            "size": ("nfsd.size", "op"), "v4op": ("nfsd.ops", "op version=nfs4"),
            "v4status": ("nfsd.ops", "status version=nfs4"), "v4ok": ("nfsd.ops", "op version=nfs4 status=ok"),
            "io_op": ("nfsd.io.ops", "op"), "io_latency": ("nfsd.io.latency", "op"), "wire": ("wire.ops", "op"),
            "queue": ("nfsd.queue", "op"),
            "wire_latency": ("wire.latency", "op")}
PER_CLIENT = {"op": ("nfsd.ops", "op"), "latency": ("nfsd.latency", "op"), "wire": ("wire.ops", "op"),
              "wire_latency": ("wire.latency", "op")}  # added per NFSv3 client, filtered on its address


def sh(cmd: str) -> str:
    return subprocess.run(["sh", "-c", cmd], check=True, capture_output=True, text=True).stdout


def rpc_counts() -> dict:
    """nfsd's own counts (/proc/net/rpc/nfsd): per NFSv3 procedure (proc3), NFSv4
    COMPOUNDs (proc4) and NFSv4 ops inside them by opcode (proc4ops)."""
    out = {}
    for line in Path("/proc/net/rpc/nfsd").read_text().splitlines():
        name, *words = line.split()
        if name == "proc3":
            out["proc3"] = dict(zip(NFS3_PROCS, map(int, words[1:])))
        elif name == "proc4":
            out["compound"] = int(words[2])
        elif name == "proc4ops":
            counts = list(map(int, words[1:]))
            out["proc4ops"] = {op: counts[code] for code, op in NFS4_OPS.items()}
    assert "proc3" in out and "proc4ops" in out, out
    return out


def delta(after: dict, before: dict) -> dict:
    return {op: after[op] - before[op] for op in after if after[op] != before[op]}


def start_nfsd() -> None:
    sh("modprobe nfsd && mount -t nfsd nfsd /proc/fs/nfsd && (rpcbind -w || rpcbind)")
    sh(f"mkdir -p {EXPORT} {V4ROOT}/dir && chmod 777 {EXPORT} && head -c 65536 /dev/zero > {V4ROOT}/dir/f")
    sh(f"exportfs -o rw,no_root_squash,insecure,fsid=1 '*:{EXPORT}'")
    sh(f"exportfs -o rw,no_root_squash,insecure,fsid=0 '*:{V4ROOT}'")
    sh("rpc.nfsd 2 && rpc.mountd")


def netns_clients(count: int, timeout: float = 60) -> list:
    """The addresses of strata-load --netns's clients, from their host-side veths
    (stlB-I is client 10.213.B.I+1: workloads/PROFILES.md), once count are up."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        names = re.findall(r"^\d+: stl(\d+)-(\d+)[@:]", sh("ip -o link show"), re.M)
        if len(names) >= count:
            return sorted(f"10.213.{b}.{int(i) + 1}" for b, i in names)
        time.sleep(0.2)
    raise AssertionError(f"strata-load's {count} veths did not appear: {sh('ip -o link show')}")


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


def block_reads(dev: str) -> int:
    """Reads the block device completed (/sys/block/DEV/stat, its first field)."""
    return int(Path(f"/sys/block/{dev}/stat").read_text().split()[0])


def cold_reads(c: Collector) -> dict:
    """The page cache dropped, one client reads the files again for COLD_SECONDS: nfsd's
    reads (nfsd.io.*), the disk layer's reads of /tmp's device and its sysfs count, and
    nfsd's own READ count, over the same span."""
    dev = Path(sh("findmnt -no SOURCE /tmp").strip()).name
    names = {"io_op": ("nfsd.io.ops", "op"), "io_latency": ("nfsd.io.latency", "op"),
             "disk": ("disk.ops", f"op device={dev}"), "disk_latency": ("disk.latency", f"op device={dev}")}
    adds = {name: c.send(f"add cold_{name} {stat} {bd}") for name, (stat, bd) in names.items()}
    c.wait_status(lambda s: all(f"cold_{name}" in s["overflows"] for name in names), timeout=60)
    sh("sync")
    before, reads_before = block_reads(dev), rpc_counts()["proc3"]["read"]
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    load = subprocess.run([str(built("bin/strata-load")), "--server", "127.0.0.1", "--export", EXPORT,
                           "--profile", "randread", "--io-size", "8k", "--duration", str(COLD_SECONDS),
                           "--files", "2", "--file-size", "256k", "--json", "-"],
                          capture_output=True, text=True, timeout=300)
    after, reads_after = block_reads(dev), rpc_counts()["proc3"]["read"]
    c.flush_now()
    time.sleep(2)
    c.flush_now()
    return {"device": dev, "adds": adds, "load": {"rc": load.returncode, "stderr": load.stderr[-2000:]},
            "sysfs_reads": after - before, "nfs_reads": reads_after - reads_before,
            "seen": {name: totals(c, f"cold_{name}") for name in names},
            "heatmaps": {name: buckets(c, f"cold_{name}") for name in ("io_latency", "disk_latency")}}


def device_reads(dev: str) -> int:
    """Reads completed by the block device (/proc/diskstats, its fourth field)."""
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if f[2] == dev:
            return int(f[3])
    raise AssertionError(f"{dev} not in /proc/diskstats")


def tier_passes(c: Collector) -> dict:
    """With readahead off and the page cache dropped, one client READs up to TIER_RATE *
    TIER_SECONDS 8 KiB blocks of a 4 MiB file in order (seqread), twice: each cold READ waits
    for the device; before the warm pass both files are read into the page cache, so each
    warm READ finds its blocks there. Per pass: nfsd.ops[tier] and
    nfsd.io.ops[tier] of the READs, nfsd's own READ count and the device's reads."""
    dev = Path(sh("findmnt -no SOURCE /tmp").strip()).name
    names = {"tier": ("nfsd.ops", "tier op=read"), "io_tier": ("nfsd.io.ops", "tier op=read")}
    adds = {name: c.send(f"add {name} {stat} {bd}") for name, (stat, bd) in names.items()}
    c.wait_status(lambda s: all(name in s["overflows"] for name in names), timeout=60)
    for i in range(2):
        sh(f"head -c 4M /dev/urandom > {EXPORT}/load-000000{i}")
    ra = sh(f"blockdev --getra /dev/{dev}").strip()
    sh(f"sync && blockdev --setra 0 /dev/{dev}")
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    passes = {}
    try:
        for name in ("cold", "warm"):
            if name == "warm":  # every block of both files in the page cache, whatever the cold pass reached
                sh(f"cat {EXPORT}/load-0000000 {EXPORT}/load-0000001 > /dev/null")
            c.flush_now()
            seen = {n: len(c.data(n)) for n in names}
            reads, nfs_reads = device_reads(dev), rpc_counts()["proc3"]["read"]
            load = subprocess.run([str(built("bin/strata-load")), "--server", "127.0.0.1", "--export", EXPORT,
                                   "--profile", "seqread", "--io-size", "8k", "--rate", str(TIER_RATE),
                                   "--duration", str(TIER_SECONDS), "--files", "2", "--file-size", "4m"],
                                  capture_output=True, text=True, timeout=300)
            after, nfs_after = device_reads(dev), rpc_counts()["proc3"]["read"]
            c.flush_now()
            time.sleep(1)
            c.flush_now()
            seen = {n: c.data(n)[seen[n]:] for n in names}
            passes[name] = {"rc": load.returncode, "stderr": load.stderr[-2000:], "device_reads": after - reads,
                            "nfs_reads": nfs_after - nfs_reads,
                            **{n: {k: sum(r["data"].get(k, 0) for r in recs) for k in ("cache", "disk")}
                               for n, recs in seen.items()}}
    finally:
        sh(f"blockdev --setra {ra} /dev/{dev}")
    return {"device": dev, "adds": adds, "passes": passes}


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
        wire = result["adds"]["wire"]["type"] == "ack"
        layers = ["nfsd"] + (["wire"] if wire else [])
        c.wait_status(lambda s: all(layer in s["attached"] for layer in layers), timeout=60)
        time.sleep(2)  # every probe attached for a whole interval before the load starts
        before = rpc_counts()
        load = subprocess.Popen([str(built("bin/strata-load")), "--server", "127.0.0.1", "--export", EXPORT,
                                 "--profile", "mixed", "--io-size", "8k", "--duration", str(seconds), "--setup",
                                 "--files", "2", "--file-size", "256k", "--clients", str(NETNS_CLIENTS),
                                 "--netns", "--netns-delay", "6", "--json", "-"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        clients = netns_clients(NETNS_CLIENTS)
        result["clients"] = clients
        result["client_adds"] = {f"{name}:{addr}": c.send(f"add {name}:{addr} {stat} {bd} client={addr}")
                                 for addr in clients for name, (stat, bd) in PER_CLIENT.items()
                                 if wire or not name.startswith("wire")}
        nfs4 = subprocess.run([str(built("tests/nfs4_ops")), "127.0.0.1", "2049", "dir", "f", str(NFS4_COUNT)],
                              capture_output=True, text=True, timeout=300)
        result["nfs4"] = {"rc": nfs4.returncode, "stderr": nfs4.stderr[-2000:],
                          "sent": json.loads(nfs4.stdout) if nfs4.returncode == 0 else None}
        stdout, stderr = load.communicate(timeout=300)
        result["load"] = {"rc": load.returncode, "stderr": stderr[-2000:],
                          "report": json.loads(stdout) if load.returncode == 0 else None}
        after = rpc_counts()
        c.flush_now()
        time.sleep(2)
        c.flush_now()
        result["proc3"] = delta(after["proc3"], before["proc3"])
        result["proc4ops"] = delta(after["proc4ops"], before["proc4ops"])
        result["compounds"] = after["compound"] - before["compound"]
        result["seen"] = {name: totals(c, name) for name in [*DATASETS, *result["client_adds"]]}
        result["heatmaps"] = {name: buckets(c, name) for name in
                              ["latency", "wire_latency", "size", "queue",
                               *(n for n in result["client_adds"] if "latency" in n)]}
        result["records"] = {f"{DATASETS[name][0]}[op]": c.data(name)
                             for name in ("latency", "queue", "io_latency", *(["wire_latency"] if wire else []))}
        result["exports"] = Path("/proc/net/rpc/nfsd.fh/content").read_text()
        result["cold"] = cold_reads(c)
        result["tier"] = tier_passes(c)
        result["status"] = c.statuses()[-1]
    finally:
        c.send("quit")
        c.proc.wait(timeout=60)
    (out / "nfsd.json").write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
