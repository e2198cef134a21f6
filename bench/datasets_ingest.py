"""Ingest benchmark: the collector's cost per collected second against json.loads of the same record.

For heat-map datasets (~12 llhist buckets per key per second around a per-key latency) and
counters of 30, 300, 3,000 and 10,000 breakdown keys, the collector's own path
(Collector.handle: the JSON line parsed, checked, the second and its minute, ten-minute and
hour rollups written, one transaction per second) is timed per second over the first
minute of an hour and into the next minute, in CPU and wall time, for this tree's archive
code and, alternating with it in chunks of a few seconds on an archive of its own, for git
revision REV's (--before, default main). The peer is json.loads of the same lines, timed in
the same run. This tree's collector writes its ten-minute and hour records once a minute
(its flush interval, counted here in the seconds fed, not the bench's own time).

Usage: .venv/bin/python bench/datasets_ingest.py [--before REV] [--keys 30,300,3000,10000]
       (BENCH_SMOKE=1: 30 and 300 keys, 4 seconds each)
"""
import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from strata.datasets.archive import Archive

sys.path.insert(0, str(Path(__file__).resolve().parent))
from revision import datasets_of  # noqa: E402
from strata.collect.collector import Collector

SMOKE = os.environ.get("BENCH_SMOKE") == "1"
REPO = Path(__file__).resolve().parent.parent
T0 = 1_700_000_000 - 1_700_000_000 % 3600       # an hour's first second
CHUNK = 5                                       # seconds fed to one side before the other's turn
NAMES = {"heatmap": "nfs.latency[client]", "counter": "nfs.ops[client]"}


def package_of(rev, folder):
    """git revision rev's datasets/, imported as a package of its own (strata_before), and its
    collector: the one in its datasets/ where it kept one there, else this tree's (collect/),
    which writes through the archive object it is given (rev's ingest and rollups)."""
    package = datasets_of(rev, folder)
    try:
        collector = importlib.import_module(package + ".collector").Collector
    except ModuleNotFoundError:
        collector = Collector
    return importlib.import_module(package + ".archive").Archive, collector


def lines_of(kind, nkeys, seconds, rng):
    """The collector's JSON lines (dataset id 1) of `seconds` seconds from T0."""
    mode = 250 + rng.integers(0, 300, nkeys)
    keys = [f"10.{k >> 16 & 255}.{k >> 8 & 255}.{k & 255}" for k in range(nkeys)]
    out = []
    for s in range(seconds):
        if kind == "heatmap":
            offs = rng.integers(-20, 20, (nkeys, 12))
            counts = rng.geometric(0.3, (nkeys, 12))
            data = {key: {str(int(b)): int(c) for b, c in zip(mode[k] + offs[k], counts[k])}
                    for k, key in enumerate(keys)}
        else:
            data = {key: int(c) for key, c in zip(keys, rng.geometric(0.05, nkeys))}
        out.append(json.dumps({"v": 1, "type": "data", "t": T0 + s, "id": "1", "kind": kind, "data": data}))
    return out


class Side:
    """One archive code's collector over a fresh archive, fed seconds and timed."""

    def __init__(self, archive_cls, collector_cls, path, kind, labelled):
        self.archive = archive_cls.open(path, readonly=False)
        info = self.archive.create(NAMES[kind], now=T0 - 10)
        self.collector = collector_cls(self.archive, command=[], log=lambda m: print(m, file=sys.stderr))
        self.collector.kinds, self.collector.infos = {info.id: kind}, {info.id: info}
        self.label = T0
        if labelled:   # the flush interval counted in the seconds fed
            self.collector.ingest.clock = lambda: self.label
        self.cpu = self.wall = 0.0
        self.fed = 0

    def feed(self, lines):
        for line in lines:
            self.label = json.loads(line)["t"]
            self._timed(self.collector.handle, [line])
            self.fed += 1

    def close(self):
        """Stop as the collector stops: this tree's writes its open periods then (timed)."""
        if hasattr(self.collector, "_flush"):
            self._timed(self.collector._flush)
        self.archive.close()

    def _timed(self, fn, *args):
        w, c = time.perf_counter(), time.process_time()
        fn(*args)
        self.wall += time.perf_counter() - w
        self.cpu += time.process_time() - c


def parse_time(lines):
    """CPU seconds of json.loads per line, the best of three passes."""
    best = float("inf")
    for _ in range(3):
        c = time.process_time()
        for line in lines:
            json.loads(line)
        best = min(best, (time.process_time() - c) / len(lines))
    return best


def run(kind, nkeys, seconds, before, folder, rng):
    lines = lines_of(kind, nkeys, seconds, rng)
    sides = {"this tree": Side(Archive, Collector, os.path.join(folder, f"{kind}{nkeys}-new.db"), kind, True)}
    if before:
        sides[before[0]] = Side(*before[1], os.path.join(folder, f"{kind}{nkeys}-old.db"), kind, False)
    order = list(sides.values())
    for i in range(0, len(lines), CHUNK):
        for side in order:
            side.feed(lines[i:i + CHUNK])
        order.reverse()
    for side in sides.values():
        side.close()
    parse = parse_time(lines)
    size = sum(map(len, lines)) / len(lines)
    print(f"{kind} {nkeys} keys ({size / 1e3:.0f} kB a line, {seconds} s from an hour's start): "
          f"json.loads {parse * 1e3:.2f} ms")
    for name, side in sides.items():
        cpu, wall = side.cpu / side.fed, side.wall / side.fed
        print(f"  {name:>10}: {cpu * 1e3:8.2f} ms CPU per second ({wall * 1e3:.2f} ms wall), "
              f"{cpu / parse:5.1f}x json.loads")
    if before:
        new, old = sides["this tree"], sides[before[0]]
        print(f"  {before[0]} / this tree: {old.cpu / new.cpu:.1f}x CPU")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", metavar="REV", default="main", help="the archive code to compare ('' for none)")
    ap.add_argument("--keys", default="30,300,3000,10000")
    args = ap.parse_args()
    rng = np.random.default_rng(7)
    folder = tempfile.mkdtemp(prefix="strata-bench-ingest-")
    try:
        before = (args.before, package_of(args.before, folder)) if args.before else None
        for kind in ("heatmap", "counter"):
            for nkeys in ([30, 300] if SMOKE else [int(k) for k in args.keys.split(",")]):
                seconds = 4 if SMOKE else (30 if nkeys > 3000 else 65)
                run(kind, nkeys, seconds, before, folder, rng)
    finally:
        shutil.rmtree(folder)


if __name__ == "__main__":
    main()
