"""Helpers for the strata-load tests: run the tool, a real nfs-ganesha server
(FSAL VFS over a temp dir, NFSv3 only), and the twin of workloads/load_pattern.h
to check what the tool wrote."""
import json
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from strata.datasets import llhist

REPO = Path(__file__).resolve().parent.parent
LOAD = REPO / "build" / "bin" / "strata-load"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_port(port: int, proc: subprocess.Popen, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if port_open(port):
            return True
        time.sleep(0.1)
    return False


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_load(*args: str, timeout: float = 120) -> tuple[int, dict | None, str]:
    """Runs strata-load with --json -; returns (exit code, report or None, stderr)."""
    res = subprocess.run([str(LOAD), *args, "--json", "-"], capture_output=True,
                         text=True, timeout=timeout)
    report = json.loads(res.stdout) if res.stdout.strip() else None
    return res.returncode, report, res.stderr


def load_ok(*args: str, timeout: float = 120) -> dict:
    rc, report, err = run_load(*args, timeout=timeout)
    assert rc == 0, f"strata-load exited {rc}: {err}"
    assert report is not None and report["errors"] == 0, report and report["error"]
    return report


# ---- twin of workloads/load_pattern.h ----

_M = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def expected_bytes(tag: int, file: int, off: int, length: int) -> bytes:
    """Bytes [off, off+length) of working-set file `file` written under `tag`."""
    key = ((tag * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF) ^ (file << 40)
    first, last = off // 8, (off + length + 7) // 8
    words = _splitmix64(np.uint64(key) ^ np.arange(first, last, dtype=np.uint64))
    raw = words.astype("<u8").tobytes()
    start = off - first * 8
    return raw[start:start + length]


def file_name(i: int) -> str:
    return f"load-{i:07d}"


# ---- nfs-ganesha ----

class Ganesha:
    """nfs-ganesha on 127.0.0.1 (fresh ports), exporting a temp dir over NFSv3/TCP.
    Needs rpcbind: ganesha exits when it cannot register, so one is started
    (and stopped afterwards) when none listens on port 111."""

    def __init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="strata-load-ganesha-"))
        self.export = self.dir / "export"
        self.export.mkdir()
        self.export.chmod(0o777)  # clients use distinct AUTH_SYS uids
        self.nfsport, self.mountport = free_port(), free_port()
        self.proc: subprocess.Popen | None = None
        self.rpcbind: subprocess.Popen | None = None
        self.log = self.dir / "ganesha.log"

    @staticmethod
    def missing() -> str | None:
        for tool in ("ganesha.nfsd", "rpcbind"):
            if not shutil.which(tool):
                return f"{tool} is not installed (Debian nfs-ganesha, nfs-ganesha-vfs, rpcbind)"
        return None

    def config(self) -> str:
        return f"""
NFS_CORE_PARAM {{
    NFS_Port = {self.nfsport};
    MNT_Port = {self.mountport};
    Bind_Addr = 127.0.0.1;
    Protocols = 3;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
}}
NFSV4 {{ Graceless = true; }}
EXPORT {{
    Export_Id = 1;
    Path = {self.export};
    Pseudo = /strata;
    Protocols = 3;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    FSAL {{ Name = VFS; }}
}}
"""

    def start(self) -> None:
        if not port_open(111):
            self.rpcbind = subprocess.Popen(["rpcbind", "-f"], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL)
            if not wait_port(111, self.rpcbind, 10) and not port_open(111):
                raise RuntimeError("rpcbind did not start")
        conf = self.dir / "ganesha.conf"
        conf.write_text(self.config())
        self.proc = subprocess.Popen(
            ["ganesha.nfsd", "-F", "-L", str(self.log), "-f", str(conf),
             "-p", str(self.dir / "ganesha.pid")],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        if not (wait_port(self.nfsport, self.proc) and wait_port(self.mountport, self.proc)):
            log = self.log.read_text() if self.log.exists() else ""
            self.close()
            raise RuntimeError(f"nfs-ganesha did not start:\n{log[-2000:]}")

    def close(self) -> None:
        if self.proc:
            stop(self.proc)
        if self.rpcbind:
            stop(self.rpcbind)
        shutil.rmtree(self.dir, ignore_errors=True)

    def args(self) -> list[str]:
        return ["--server", "127.0.0.1", "--nfsport", str(self.nfsport),
                "--mountport", str(self.mountport), "--export", str(self.export)]

    def url(self, name: str) -> str:
        return (f"nfs://127.0.0.1{self.export}/{name}?nfsport={self.nfsport}"
                f"&mountport={self.mountport}&version=3")


def nfs_cat(url: str) -> bytes:
    """Reads a file back through libnfs's nfs-cat (a second, independent client)."""
    return subprocess.run(["nfs-cat", url], capture_output=True, check=True, timeout=60).stdout


def check_report(r: dict) -> None:
    """Invariants every run report keeps: totals are the sum of the clients, every
    reply has exactly one latency sample, the series adds up to the ops."""
    assert r["version"] == 1 and r["errors"] == 0 and r["error"] is None
    ops = r["ops"]
    assert r["ops_total"] == sum(ops.values())
    for op, n in ops.items():
        assert sum(c["ops"].get(op, 0) for c in r["clients"]) == n
        lat = r["latency_ns"][op]
        assert lat["count"] == n
        assert sum(lat["llhist"].values()) == n
        assert 0 < lat["min"] <= lat["p50"] <= lat["p99"] <= lat["p999"] <= lat["max"]
        # the C side's buckets agree with the Python twin of bpf/llhist.h
        buckets = sorted(int(b) for b in lat["llhist"])
        assert buckets[0] == llhist.bucket(lat["min"]) and buckets[-1] == llhist.bucket(lat["max"])
        assert llhist.lower(llhist.bucket(lat["p50"])) <= lat["p50"]
        below = sum(c for b, c in lat["llhist"].items() if llhist.upper(int(b)) <= lat["p50"])
        assert below <= n / 2  # p50 is not above half of the samples
    assert sum(r["per_second"]["ops"]) == r["ops_total"]
    setup = r["setup"]
    for op, n in setup["ops"].items():
        assert sum(c["setup"]["ops"].get(op, 0) for c in r["clients"]) == n
    assert setup["mount_ops"]["mnt"] == len(r["clients"])
    assert setup["ops"]["fsinfo"] == len(r["clients"])
