"""Helpers for the demo and check-run tests: running `strata demo` to its end or
interrupting it, band shares from an archive, where the time went (`strata show time:`),
PNG sizes, and leftovers of an interrupted run."""
import json
import signal
import struct
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from strata.datasets import llhist
from strata.datasets.archive import Archive

STRATA = [sys.executable, "-c", "from strata.cli.main import main; main()"]


@contextmanager
def finished_demo(out: Path, *args: str, timeout: int = 150):
    """Runs `strata demo ARGS -o OUT` to its end; yields (out, stdout, summary, load
    report, open archive). A demo over `timeout` seconds is stopped with SIGINT (its own
    teardown: servers, collector, loop devices) and fails the test."""
    proc = subprocess.Popen([*STRATA, "demo", *args, "-o", str(out), "--color", "none"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        pytest.fail(f"strata demo {' '.join(args)} took over {timeout} s: {stderr[-2000:]}")
    assert proc.returncode == 0, stderr + stdout[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    load = json.loads((out / "load.json").read_text())
    with Archive.open(summary["archive"]) as archive:
        yield out, stdout, summary, load, archive


def interrupted_demo(out: Path, *args: str, started: str, said: tuple, deadline: int = 60) -> tuple:
    """Runs `strata demo ARGS -o OUT` until it prints `started`, then sends SIGINT 2 s
    later; returns (exit code, stderr, {marker: rest of the line} for each marker in
    `said` the demo printed before)."""
    proc = subprocess.Popen([*STRATA, "demo", *args, "-o", str(out), "--color", "none"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    found, end = {}, time.monotonic() + deadline
    try:
        for line in proc.stdout:
            for marker in said:
                if marker in line:
                    found[marker] = line.split(marker, 1)[1].strip()
            if started in line or time.monotonic() > end:
                break
        assert all(m in found for m in said), f"the demo did not say {said}: {found}"
        time.sleep(2)
        proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return rc, proc.stderr.read(), found


def histogram(archive, name: str, start: int, end: int, keys=None) -> tuple:
    """(buckets, counts) of a heat-map dataset over [start, end), summed over `keys` (all if None)."""
    qr = archive.query(name, start, end)
    rows = [i for i, k in enumerate(qr.keys) if keys is None or k in keys]
    counts = qr.counts[rows].sum(axis=(0, 1)) if rows else np.zeros(len(qr.buckets), np.uint64)
    return qr.buckets, counts.astype(np.float64)


def share_below(buckets, counts, ns: int) -> float:
    """Fraction of events in buckets wholly below ns."""
    total = counts.sum()
    upper = np.array([llhist.upper(int(b)) for b in buckets])
    return float(counts[upper <= ns].sum() / total) if total else 0.0


def share_between(buckets, counts, lo_ns: int, hi_ns: int) -> float:
    total = counts.sum()
    lower = np.array([llhist.lower(int(b)) for b in buckets])
    return float(counts[(lower >= lo_ns) & (lower < hi_ns)].sum() / total) if total else 0.0


def median(buckets, counts) -> float:
    cum = np.cumsum(counts)
    return float(llhist.lower(int(buckets[np.searchsorted(cum, cum[-1] / 2)])))


def png_size(path: Path) -> tuple:
    """(width, height) from a PNG's IHDR chunk."""
    head = Path(path).read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def leftovers(*folders: str) -> list:
    """Processes, loop devices, mounts and files that still mention the given folders
    (scratch directories of a run)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if any(f in cmdline for f in folders):
                found.append(f"process {proc.name}: {cmdline[:120]}")
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    found += [f"loop device {line}" for line in loops.splitlines() if any(f in line for f in folders)]
    mounts = Path("/proc/mounts").read_text().splitlines()
    found += [f"mount {line}" for line in mounts if any(f in line for f in folders)]
    found += [f"directory {f}" for f in folders if Path(f).exists()]
    return found


def time_went(archive_path, family: str, start: int, end: int) -> dict:
    """`strata show time:FAMILY --json` over [start, end): its document, with "mean" added:
    {component: mean ns per op over the range}."""
    from click.testing import CliRunner
    from strata.cli.main import cli
    out = CliRunner().invoke(cli, ["show", f"time:{family}", "--json", "--archive", str(archive_path),
                                   "--since", str(start), "--until", str(end)])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    return {**doc, "mean": {row["key"]: row["rate"] for row in doc["table"]}}
