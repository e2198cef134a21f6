"""Helpers for the strata-load tests: run the tool, a real nfs-ganesha server
(strata.lab.ganesha, the one strata demo runs), and the twin of workloads/load_pattern.h
to check what the tool wrote."""
import json
import subprocess
import time
from pathlib import Path

import numpy as np

from strata.lab.ganesha import Ganesha  # noqa: F401 (the lab's harness, shared with strata demo)
from strata.lab.process import stop  # noqa: F401
from strata.datasets import llhist

REPO = Path(__file__).resolve().parent.parent
LOAD = REPO / "build" / "bin" / "strata-load"


def ganesha_running(cpu: int | None = None, protocols: tuple[int, ...] = (3,)):
    """A started nfs-ganesha serving NFS versions protocols, for a fixture to yield from (the
    test skips where it is not installed), closed after; with cpu, every thread of it on
    that CPU."""
    import pytest
    why = Ganesha.missing()
    if why:
        pytest.skip(why)
    g = Ganesha(protocols=protocols)
    g.start()
    try:
        if cpu is not None:
            subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(g.proc.pid)], check=True, capture_output=True)
        yield g
    finally:
        g.close()


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
    # the run started on the wall clock, after its setup and at least its duration ago
    assert time.time() - 3600 < r["start_unix"] <= time.time() - r["duration_s"]
    setup = r["setup"]
    for op, n in setup["ops"].items():
        assert sum(c["setup"]["ops"].get(op, 0) for c in r["clients"]) == n
    assert setup["mount_ops"]["mnt"] == len(r["clients"])
    assert setup["ops"]["fsinfo"] == len(r["clients"])
