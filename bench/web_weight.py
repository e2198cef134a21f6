#!/usr/bin/env python3
"""Benchmark of what `strata web` sends for a page's first load: bytes on the wire (headers
and bodies as they travel) of the page, its assets and 4 views x 1 h (nfs.latency,
nfs.latency[client], nfs.size, nfs.ops[client]), as a browser asks (Accept-Encoding: gzip)
against the same requests without it (what every client got before answers were gzipped),
and, with --before STRATA (another build's `strata`, e.g. the main branch's venv), against
that build's server asked as a browser asks; the servers alternate, 3 rounds each.

Usage: .venv/bin/python bench/web_weight.py [--before /path/to/other/.venv/bin/strata]
Smoke mode (BENCH_SMOKE=1): "an hour" is a minute, one round.
"""
import argparse
import http.client as httpclient
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from heatmaps_util import T0, build_archive, histogram, seed_latencies     # noqa: E402

STRATA = str(Path(sys.executable).parent / "strata")
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
SPAN = 60 if SMOKE else 3600
ROUNDS = 1 if SMOKE else 3
VIEWS = ["nfs.latency", "nfs.latency%5Bclient%5D", "nfs.size", "nfs.ops%5Bclient%5D"]
CLIENTS = [f"10.0.0.{i}" for i in range(1, 9)]
FIRST_LOAD = ["/", "/static/worksheet.css", "/static/plotly.min.js", "/static/worksheet.js", "/api/datasets",
              "/api/worksheets"] + [f"/api/view?name={v}&since={T0}&until={T0 + SPAN}" for v in VIEWS]


def archive(folder: Path) -> Path:
    rng = np.random.default_rng(43)
    pool = [{"nfs.latency": {"": histogram(seed_latencies(rng, 800))},
             "nfs.latency[client]": {c: histogram(seed_latencies(rng, 100)) for c in CLIENTS},
             "nfs.size": {"": {12 + i % 6: 50 for i in range(6)}},
             "nfs.ops[client]": {c: 100 + 10 * i for i, c in enumerate(CLIENTS)}} for _ in range(16)]
    return build_archive(folder / "a.db", {name: (lambda t, n=name: pool[t % 16][n]) for name in pool[0]},
                         seconds=SPAN)


class Server:
    """`STRATA web --archive A --listen 127.0.0.1:0`, its port read from its first line."""

    def __init__(self, strata: str, path: Path):
        env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
        self.proc = subprocess.Popen([strata, "web", "--archive", str(path), "--listen", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        m = re.search(r"https?://[^:/ ]+:(\d+)", self.proc.stdout.readline())
        if not m:
            self.proc.kill()
            sys.exit(f"web_weight: {strata} web did not start")
        self.port = int(m.group(1))

    def first_load(self, gzipped: bool) -> tuple:
        """(bytes on the wire, bytes of plotly alone) of FIRST_LOAD on one keep-alive connection."""
        conn = httpclient.HTTPConnection("127.0.0.1", self.port, timeout=60)
        total = plotly = 0
        for path in FIRST_LOAD:
            conn.request("GET", path, headers={"Accept-Encoding": "gzip, deflate"} if gzipped else {})
            r = conn.getresponse()
            body = r.read()                          # as sent: http.client does not decompress
            if r.status != 200:
                sys.exit(f"web_weight: {path}: {r.status}")
            size = len(body) + sum(len(k) + len(v) + 4 for k, v in r.getheaders()) + 17
            total += size
            plotly += size if "plotly" in path else 0
        conn.close()
        return total, plotly

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="another build's strata executable, asked as a browser asks")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = archive(Path(folder))
        builds = [("this build", STRATA)] + ([("--before", args.before)] if args.before else [])
        figures = {}
        for _ in range(ROUNDS):
            for name, strata in builds:
                server = Server(strata, path)
                try:
                    for gzipped in ((True, False) if name == "this build" else (True,)):
                        figures.setdefault((name, gzipped), []).append(server.first_load(gzipped))
                finally:
                    server.stop()
    after = figures[("this build", True)][-1]
    plain = figures[("this build", False)][-1]
    print(f"first load, 4 views x {SPAN // 60} min ({len(FIRST_LOAD)} requests), bytes on the wire:")
    print(f"  this build, gzip:        {after[0]:>10,}  (plotly {after[1]:,})")
    print(f"  this build, no gzip:     {plain[0]:>10,}  (plotly {plain[1]:,})   ratio gzip/plain {after[0] / plain[0]:.3f}")
    if args.before:
        before = figures[("--before", True)][-1]
        print(f"  --before build, gzip:    {before[0]:>10,}  (plotly {before[1]:,})   ratio this/before "
              f"{after[0] / before[0]:.3f}")
    varied = {k: len(set(v)) for k, v in figures.items() if len(set(v)) > 1}
    print(f"  rounds: {ROUNDS}; sizes that varied between rounds: {varied or 'none'}")


if __name__ == "__main__":
    main()
