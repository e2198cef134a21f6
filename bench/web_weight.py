#!/usr/bin/env python3
"""Benchmark of what `strata web` costs a page, this tree against other revisions (--before
REV, e.g. main, or the revision before the live page's security and weight work; unpacked by
bench/revision.py), the servers alternating round by round on the same archives:

- first load: bytes on the wire (headers and bodies as they travel) of the page, its assets
  and 4 views x 1 h (nfs.latency, nfs.latency[client], nfs.size, nfs.ops[client]) as a
  browser asks (Accept-Encoding: gzip); for this tree also without gzip;
- first draw of those 4 views in headless chromium: cold (a fresh browser, nothing cached)
  and warm (the same page again, the median of 2; of 1 in smoke mode);
- live, a writer adding one second per second as the collector does, on an archive of the
  last hour: bytes on the wire per live second of a page of 1 view and of 4 views, and the
  server's CPU per viewer (a page of the 4 views) above the same server idle, over --seconds.

Usage: .venv/bin/python bench/web_weight.py [--before REV ...] [--rounds 2] [--seconds 60]
Smoke mode (BENCH_SMOKE=1): "an hour" is a minute, one round, 1 s of live.
"""
import argparse
import http.client as httpclient
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from heatmaps_util import T0, build_archive, histogram, seed_latencies     # noqa: E402
from strata.datasets.archive import Archive                                 # noqa: E402
from revision import strata_of                                                # noqa: E402
from web_live import Page, Records, cpu_seconds                             # noqa: E402
from web_util import browser, plots_ready, state_url                        # noqa: E402

STRATA = str(Path(sys.executable).parent / "strata")
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
SPAN = 60 if SMOKE else 3600
VIEWS = ["nfs.latency", "nfs.latency%5Bclient%5D", "nfs.size", "nfs.ops%5Bclient%5D"]
LIVE_VIEWS = ["nfs.latency", "nfs.latency[client]", "nfs.size", "nfs.ops[client]"]   # web_live's datasets
IDLE = 1 if SMOKE else 15          # seconds of the idle server's CPU
SETTLE = 1 if SMOKE else 3         # seconds from a page's stream opening to the measure
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


def live_archive(folder: Path, records: Records) -> tuple:
    """(path, dataset ids) of an archive holding every second of the last SPAN seconds."""
    path, end = folder / "live.db", int(time.time())
    with Archive.open(str(path), readonly=False) as a:
        ids = {}
        for name in LIVE_VIEWS:
            info = a.create(name, now=end - SPAN)
            ids[name] = (info.id, info.kind)
        records.write(a, ids, range(end - SPAN, end))
    return path, ids


def write_seconds(archive, records, ids, running):
    """As the collector does: each second's records, a moment after the second ends."""
    with Archive.open(str(archive), readonly=False) as a:
        while running[0]:
            records.write(a, ids, [int(time.time()) - 1])
            time.sleep(1 - time.time() % 1 + 0.05)


class Server:
    """`STRATA web --archive A --listen 127.0.0.1:0` (strata: a command line), its port read
    from its first line."""

    def __init__(self, strata: list, path: Path):
        env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
        self.proc = subprocess.Popen([*strata, "web", "--archive", str(path), "--listen", "127.0.0.1:0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        m = re.search(r"https?://[^:/ ]+:(\d+)", self.proc.stdout.readline())
        if not m:
            self.proc.kill()
            sys.exit(f"web_weight: {strata} web did not start")
        self.port = int(m.group(1))
        self.base = f"http://127.0.0.1:{self.port}"

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

    def first_draw(self) -> tuple:
        """(cold, warm) seconds from asking for the page of 4 views x 1 h to every view drawn."""
        state = {"views": [{"name": v.replace("%5B", "[").replace("%5D", "]")} for v in VIEWS], "since": T0,
                 "until": T0 + SPAN, "live": False}
        times = []
        with browser() as page:
            for _ in range(2 if SMOKE else 3):
                page.get("about:blank")
                t = time.perf_counter()
                page.get(state_url(self.base, state))
                plots_ready(page, len(VIEWS))
                times.append(time.perf_counter() - t)
        return times[0], statistics.median(times[1:])

    def live(self, seconds: int) -> dict:
        """Bytes on the wire per live second of a page of 1 view and of the 4, and the CPU (share
        of a core) of the 4 views' page above the server idle."""
        cpu0, t0 = cpu_seconds(self.proc.pid), time.monotonic()
        time.sleep(IDLE)
        idle = (cpu_seconds(self.proc.pid) - cpu0) / (time.monotonic() - t0)
        out = {"idle": idle}
        for views, measure in ((LIVE_VIEWS, seconds), (LIVE_VIEWS[:1], min(seconds, 10))):
            page = Page(self.base, views, SPAN)
            page.start()
            deadline = time.time() + 120
            while not page.streaming:
                if page.error or time.time() > deadline:
                    sys.exit(f"web_weight: a page did not stream: {page.error}")
                time.sleep(0.1)
            time.sleep(SETTLE)
            cpu0, t0, bytes0 = cpu_seconds(self.proc.pid), time.monotonic(), page.received
            time.sleep(measure)
            spent = time.monotonic() - t0
            out[len(views)] = (page.received - bytes0) / spent
            if len(views) == len(LIVE_VIEWS):
                out["cpu"] = (cpu_seconds(self.proc.pid) - cpu0) / spent - idle
            page.stop = True
            page.join()
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def measure(strata, static, live, seconds, gzip_too) -> dict:
    out = {}
    server = Server(strata, static)
    try:
        for gzipped in ((True, False) if gzip_too else (True,)):
            out["load" if gzipped else "plain"] = server.first_load(gzipped)[0]
        out["cold"], out["warm"] = server.first_draw()
    finally:
        server.stop()
    server = Server(strata, live)
    try:
        out.update(server.live(seconds))
    finally:
        server.stop()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", action="append", default=[], metavar="REV",
                    help="another git revision measured against this tree (repeatable)")
    ap.add_argument("--rounds", type=int, default=1 if SMOKE else 2)
    ap.add_argument("--seconds", type=int, default=1 if SMOKE else 60, help="seconds of live measured per viewer")
    args = ap.parse_args()
    records = Records()
    with tempfile.TemporaryDirectory() as folder:
        builds = [("this tree", [STRATA])] + [(rev, strata_of(rev, folder)) for rev in args.before]
        static = archive(Path(folder))
        live, ids = live_archive(Path(folder), records)
        running = [True]
        writer = threading.Thread(target=write_seconds, args=(live, records, ids, running), daemon=True)
        writer.start()
        figures = {}
        try:
            for _ in range(args.rounds):                      # the builds alternate, round by round
                for name, strata in builds:
                    got = measure(strata, static, live, args.seconds, name == "this tree")
                    for key, value in got.items():
                        figures.setdefault((name, key), []).append(value)
        finally:
            running[0] = False
            writer.join()
    rows = (("load", "first load, 4 views x %d min, bytes on the wire (gzip)" % (SPAN // 60), "{:,.0f}"),
            ("cold", "first draw, cold (s)", "{:.2f}"), ("warm", "first draw, warm (s)", "{:.2f}"),
            (1, "live bytes on the wire per second, 1 view", "{:,.0f}"),
            (4, "live bytes on the wire per second, 4 views", "{:,.0f}"),
            ("cpu", f"server CPU per viewer of 4 views above idle, % of a core ({args.seconds} s)", "{:.2%}"))
    print(f"medians of {args.rounds} round(s), builds alternating; ratios this tree / REV")
    for key, label, form in rows:
        mine = statistics.median(figures[("this tree", key)])
        line = f"  {label}: this tree {form.format(mine)}"
        for rev in args.before:
            theirs = statistics.median(figures[(rev, key)])
            line += f"; {rev} {form.format(theirs)} (ratio {mine / theirs:.3f})" if theirs else f"; {rev} 0"
        print(line)
    plain = statistics.median(figures[("this tree", "plain")])
    print(f"  first load without gzip, this tree: {plain:,.0f} bytes "
          f"(gzip/plain {statistics.median(figures[('this tree', 'load')]) / plain:.3f})")


if __name__ == "__main__":
    main()
