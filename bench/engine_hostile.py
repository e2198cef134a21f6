#!/usr/bin/env python3
"""Benchmark: a well-behaved client's GETATTR latency on the engine, alone and
while a hostile mix runs against the same engine (its peer is itself, unloaded,
measured in the same run just before and just after the mix, the two averaged
against the machine's drift): 1,000 idle connections, 300 connections each holding
an unfinished 1 MiB record, and one client that pipelines 64 READs of 1 MiB and
never reads the 64 MiB of replies.  The engine's RSS is sampled throughout.
Goals: loaded p99 at most 2x the unloaded p99; RSS within arc_max + 256 MiB.
Usage: .venv/bin/python bench/engine_hostile.py   (PHASE_SECONDS=10 by default)
"""
import multiprocessing as mp
import os
import resource
import socket
import struct
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from engine_util import NFS_PROG, Engine, RpcClient, call_header, create, mkpool, write, xdr_opaque  # noqa: E402

SMOKE = os.environ.get("BENCH_SMOKE") == "1"   # smoke mode (bench/run.sh): a small mix, goals not judged
PHASE_SECONDS = 0.5 if SMOKE else float(os.environ.get("PHASE_SECONDS", "10"))
ARC_MAX = 256 << 20
MIB = 1 << 20
IDLE, UNFINISHED, READS = (50, 10, 64) if SMOKE else (1000, 300, 64)


def record(payload: bytes) -> bytes:
    return struct.pack(">I", 0x80000000 | len(payload)) + payload


def connect(port, src, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def hostile(port, fh, ready, done):
    """The mix, from addresses spread over 127.0.0.0/8 (each under the per-address limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    held = [connect(port, f"127.0.4.{i % 20 + 1}") for i in range(IDLE)]
    body = b"\0" * (MIB - 1)
    for i in range(UNFINISHED):
        s = connect(port, f"127.0.5.{i % 10 + 1}")
        s.setblocking(False)
        data = struct.pack(">I", 0x80000000 | MIB) + body
        try:
            s.send(data)  # what the socket takes now; the engine decides how much it keeps
        except BlockingIOError:
            pass
        held.append(s)
    s = connect(port, "127.0.6.1", rcvbuf=4096)
    s.sendall(b"".join(record(call_header(9000 + i, NFS_PROG, 3, 6) + xdr_opaque(fh) + struct.pack(">QI", 0, MIB))
                       for i in range(READS)))
    held.append(s)
    ready.set()
    done.wait()
    for s in held:
        s.close()


def getattrs(c, root, seconds):
    args, lat = xdr_opaque(root), []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.perf_counter_ns()
        r = c.call(NFS_PROG, 1, args)
        lat.append(time.perf_counter_ns() - t)
        assert r.u32() == 0
    return np.array(lat) / 1e3  # us


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    with tempfile.TemporaryDirectory(prefix="strata-hostile-") as d:
        tmp = Path(d)
        eng = Engine(tmp, mkpool(tmp, nvdevs=1, size="128M"), exports=("data:no_root_squash",)).start()
        peak, stop_sampling = [0], threading.Event()

        def sample():
            while not stop_sampling.wait(0.05):
                peak[0] = max(peak[0], rss_bytes(eng.proc.pid))
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            c = RpcClient(eng.port, timeout=30)
            root = c.mount()
            _, fh = create(c, root, "big")
            write(c, fh, 0, b"\xab" * MIB, 2)
            alone = getattrs(c, root, PHASE_SECONDS)
            ready, done = mp.Event(), mp.Event()
            p = mp.Process(target=hostile, args=(eng.port, fh, ready, done))
            p.start()
            if not ready.wait(120):
                raise SystemExit("engine_hostile: the hostile mix did not start")
            time.sleep(1)
            loaded = getattrs(c, root, PHASE_SECONDS)
            stats = eng.stats()
            done.set()
            p.join(60)
            time.sleep(1)
            after = getattrs(c, root, PHASE_SECONDS)
            c.close()
        finally:
            stop_sampling.set()
            sampler.join()
            eng.stop()
    p99a = (np.percentile(alone, 99) + np.percentile(after, 99)) / 2
    p99b = np.percentile(loaded, 99)
    limit = ARC_MAX + (256 << 20)
    for name, lat in (("alone, before", alone), ("alone, after", after)):
        print(f"GETATTR {name + ':':15} n={len(lat)} p50={np.median(lat):.0f}us p99={np.percentile(lat, 99):.0f}us "
              f"max={lat.max() / 1e3:.1f}ms")
    print(f"GETATTR hostile mix:   n={len(loaded)} p50={np.median(loaded):.0f}us p99={p99b:.0f}us "
          f"max={loaded.max() / 1e3:.1f}ms")
    print(f"p99 ratio (mix / mean of alone): {p99b / p99a:.2f}x  (goal <= 2x)")
    print(f"engine RSS peak: {peak[0] / MIB:.0f} MiB  (goal <= arc_max + 256 MiB = {limit / MIB:.0f} MiB)")
    n = stats["net"]
    print(f"during the mix: connections_open={stats['rpc']['connections_open']} "
          f"unfinished_record_bytes={n['unfinished_record_bytes'] / MIB:.1f}MiB "
          f"queued_reply_bytes={n['queued_reply_bytes'] / MIB:.1f}MiB record_mem_waits={n['record_mem_waits']} "
          f"backpressure={n['backpressure']} refused={n['refused'] + n['refused_per_addr']}")
    return 0 if SMOKE or (p99b <= 2 * p99a and peak[0] <= limit) else 1


if __name__ == "__main__":
    sys.exit(main())
