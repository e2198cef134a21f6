#!/usr/bin/env python3
"""Benchmark: one hour of a 10-key latency dataset read for a heat map from Prometheus
(`strata heatmap --prometheus`) against the same hour read from the local archive.

The same per-second histograms are written to an archive (through the datasets API)
and, as `strata collect --metrics` would have exposed them to a 10 s scrape, to an
OpenMetrics file that Debian's promtool backfills into a TSDB; a private Prometheus
serves it. Both reads ask for 60 s columns; the bench checks they hold the same counts.
Usage: .venv/bin/python bench/heatmaps_prometheus.py
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from heatmaps_util import build_archive, histogram, seed_latencies   # noqa: E402
from strata.datasets import llhist                                    # noqa: E402
from strata.datasets.archive import Archive                           # noqa: E402
from strata.prometheus.openmetrics import family_name                  # noqa: E402
from strata.prometheus.reader import PrometheusReader              # noqa: E402

NAME, HOUR, SCRAPE, COLUMN = "nfs.latency[client]", 3600, 10, 60
SPAN = 600 if os.environ.get("BENCH_SMOKE") == "1" else HOUR   # smoke mode (bench/run.sh): 10 minutes
KEYS = [f"10.0.0.{i}" for i in range(10)]
T0 = (int(time.time()) - 6 * 3600) // HOUR * HOUR       # backfill stays clear of Prometheus' head block


def seconds_of_data():
    """{key: (SPAN, NBUCKETS) counts}: 32 distinct seconds of the seed's bands, reused."""
    rng = np.random.default_rng(5)
    pool = []
    for _ in range(32):
        row = np.zeros(llhist.NBUCKETS, np.int64)
        for b, c in histogram(seed_latencies(rng, 30)).items():
            row[b] = c
        pool.append(row)
    return {k: np.array([pool[(s * 7 + i) % 32] for s in range(SPAN)]) for i, k in enumerate(KEYS)}


def openmetrics_file(path, data):
    """The histograms as a 10 s scrape would have stored them, with sample timestamps."""
    family = family_name("nfs.latency", "ns", "heatmap")
    used = np.flatnonzero(sum(d.sum(axis=0) for d in data.values()))
    uppers = llhist.upper_bounds()
    les = [repr(float((uppers[b] - 1) / 1e9)) for b in used] + ["+Inf"]
    with open(path, "w") as f:
        f.write(f"# TYPE {family} histogram\n# UNIT {family} seconds\n")
        for key, per_second in data.items():
            labels = f'dataset="{NAME}",client="{key}"'
            scraped = np.cumsum(per_second, axis=0)[SCRAPE - 1::SCRAPE]      # cumulative at each scrape
            cum = np.cumsum(scraped[:, used], axis=1)
            cum = np.hstack([cum, cum[:, -1:]])                               # +Inf
            times = T0 + SCRAPE * np.arange(1, len(scraped) + 1)
            for j, le in enumerate(les):
                f.writelines(f'{family}_bucket{{{labels},le="{le}"}} {int(c)} {t}\n'
                             for c, t in zip(cum[:, j], times))
            f.write(f"{family}_created{{{labels}}} {T0} {T0 + SCRAPE}\n")
        f.write("# EOF\n")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def best(fn, repeat=3):
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


def main():
    data = seconds_of_data()
    with tempfile.TemporaryDirectory(prefix="strata-bench-prom-") as d:
        d = Path(d)
        build_archive(d / "a.db", {NAME: lambda t: {k: {int(b): int(c) for b, c in enumerate(data[k][t - T0]) if c}
                                                     for k in KEYS}}, start=T0, seconds=SPAN)
        openmetrics_file(d / "scrapes.om", data)
        subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", "-q", str(d / "scrapes.om"),
                        str(d / "tsdb")], check=True)
        (d / "prometheus.yml").write_text("global: {scrape_interval: 1m}\n")
        web = f"127.0.0.1:{free_port()}"
        prom = subprocess.Popen(["prometheus", f"--config.file={d / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={d / 'tsdb'}", f"--web.listen-address={web}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(300):
                try:
                    with urllib.request.urlopen(f"http://{web}/-/ready", timeout=1) as r:
                        if r.status == 200:
                            break
                except OSError:
                    time.sleep(0.1)
            reader = PrometheusReader(f"http://{web}")
            with Archive.open(str(d / "a.db")) as archive:
                mine = archive.query(NAME, T0, T0 + SPAN, COLUMN)
                theirs = reader.query(NAME, T0, T0 + SPAN, COLUMN)
                same = (list(mine.buckets) == list(theirs.buckets)
                        and np.array_equal(mine.counts.sum(axis=1), theirs.counts.sum(axis=1)))
                local = best(lambda: archive.query(NAME, T0, T0 + SPAN, COLUMN))
                remote = best(lambda: reader.query(NAME, T0, T0 + SPAN, COLUMN))
            series = json.load(urllib.request.urlopen(
                f"http://{web}/api/v1/series?match[]={{dataset=%22{NAME}%22}}"))["data"]
        finally:
            prom.terminate()
            prom.wait(timeout=10)
    print(f"heat map of {SPAN // 60} min, {len(KEYS)} keys, {COLUMN} s columns ({len(series)} Prometheus series, "
          f"{SCRAPE} s scrapes); best of 3")
    print(f"  local archive: {local * 1000:.0f} ms   Prometheus: {remote * 1000:.0f} ms   "
          f"({remote / local:.1f}x the archive); same counts per key and bucket: {'yes' if same else 'NO'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
