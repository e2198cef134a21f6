#!/usr/bin/env python3
"""Benchmark of `strata web`, each figure against a peer measured in the same run:

- live: per open page, for 1 and 8 pages (4 views over the last hour, a writer adding one second per
  second as the collector does), the server's CPU per second of live updates and the
  bytes sent per update, against loading the 4 views again (what a page without live
  columns would fetch every second);
- first full draw in headless chromium of 4 views x 1 h and x 1 week, against the
  same 4 views rendered today as static HTML files (`strata heatmap/breakdown --format
  html`, one process each) and opened in the same browser.

The archive (a week: one second a minute for 6 days 23 h, every second of the last
hour; 4 datasets, 8 clients) is written through the datasets API, about a minute.
Usage: .venv/bin/python bench/web_live.py [--seconds 20]
Smoke mode (BENCH_SMOKE=1, bench/run.sh): "an hour" is 10 minutes and "a week" 2 hours, one
draw of the week only (its last 10 minutes are the hour's per-second data), 1 s of live
updates after 1 s of settling, 1 open page (not 8).
"""
import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from heatmaps_util import histogram, seed_latencies                     # noqa: E402
from strata.datasets.archive import Archive                              # noqa: E402
from web_util import browser, plots_ready, state_url, web_server         # noqa: E402

STRATA = str(Path(sys.executable).parent / "strata")
VIEWS = ["nfs.latency", "nfs.latency[client]", "nfs.size", "nfs.ops[client]"]
CLIENTS = [f"10.0.0.{i}" for i in range(1, 9)]
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
HOUR, WEEK = (600, 7200) if SMOKE else (3600, 7 * 86400)
PAGES = (0, 1) if SMOKE else (0, 1, 8)
SPANS = ((WEEK, "1 week"),) if SMOKE else ((HOUR, "1 h"), (WEEK, "1 week"))
# seconds from the streams opening to the measure, and from a case's end (its pages closing) to the next
SETTLE, PAUSE = (1, 0) if SMOKE else (2, 1)
NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Records:
    """One second's record of each view's dataset, from a small pool (fast to write)."""

    def __init__(self):
        rng = np.random.default_rng(5)
        self.pool = [{
            "nfs.latency": {"": histogram(seed_latencies(rng, 800))},
            "nfs.latency[client]": {c: histogram(seed_latencies(rng, 100)) for c in CLIENTS},
            "nfs.size": {"": histogram(rng.choice([4096, 8192, 131072], 800))},
            "nfs.ops[client]": {c: 100 for c in CLIENTS},
        } for _ in range(16)]

    def write(self, archive, ids, seconds):
        ing = archive.ingestor()
        with ing.transaction():
            for t in seconds:
                for name, data in self.pool[t % 16].items():
                    ing.add(ids[name][0], t, ids[name][1], data)


def build(path, end, records) -> float:
    started = time.perf_counter()
    with Archive.open(str(path), readonly=False) as a:
        ids = {}
        for name in VIEWS:
            info = a.create(name, now=end - WEEK)
            ids[name] = (info.id, info.kind)
        records.write(a, ids, range(end - WEEK, end - HOUR, 60))
        records.write(a, ids, range(end - HOUR, end))
    return time.perf_counter() - started


def cpu_seconds(pid) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def get_json(url):
    with NO_PROXY.open(url, timeout=60) as r:
        body = r.read()
    return json.loads(body), len(body)


class Page(threading.Thread):
    """What an open page asks of the server: its views (the 4 VIEWS unless said) over the
    last `last` seconds, then their live stream."""

    def __init__(self, base, views=VIEWS, last=HOUR):
        super().__init__(daemon=True)
        self.base, self.views, self.last, self.received, self.view_bytes = base, views, last, bytearray(), 0
        self.stop, self.streaming, self.error = False, False, None

    def run(self):
        try:
            self._run()
        except Exception as e:          # said by live(): a page that did not stream
            self.error = e

    def _run(self):
        ids, after = [], []
        for name in self.views:
            v, size = get_json(f"{self.base}/api/view?name={urllib.request.quote(name)}&last={self.last}")
            self.view_bytes += size
            ids.append(v["live"]["id"])
            after.append(v["live"]["next"] - v["live"]["width"])
        path = f"/api/live?ids={','.join(ids)}&after={','.join(map(str, after))}"
        host, port = self.base.split("//")[1].split(":")
        with socket.create_connection((host, int(port))) as sock:   # the stream as it arrives
            sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode())
            sock.settimeout(1.0)
            self.streaming = True
            while not self.stop:
                try:
                    data = sock.recv(65536)
                except socket.timeout:
                    continue
                if not data:
                    return
                self.received += data

    @property
    def bytes(self) -> int:
        return len(self.received)

    @property
    def updates(self) -> int:
        return self.received.count(b"data: ")


def write_seconds(archive, records, ids, running):
    """As the collector does: each second's records, a moment after the second ends."""
    with Archive.open(str(archive), readonly=False) as a:
        while running[0]:
            records.write(a, ids, [int(time.time()) - 1])
            time.sleep(1 - time.time() % 1 + 0.05)


def live(archive, records, seconds) -> dict:
    """Server CPU per second and bytes per update, for 0, 1 and (not in smoke mode) 8 open
    pages; each case with a writer of its own (opened, then closed as a collector's restart)."""
    with Archive.open(str(archive)) as a:
        ids = {i.name: (i.id, i.kind) for i in a.datasets()}
    out = {}
    with web_server(archive) as base:
        for pages in PAGES:
            running = [True]
            w = threading.Thread(target=write_seconds, args=(archive, records, ids, running), daemon=True)
            w.start()
            open_pages = [Page(base) for _ in range(pages)]
            for p in open_pages:
                p.start()
            deadline = time.time() + 120                       # views loaded, streams open
            while not all(p.streaming for p in open_pages):
                failed = [p.error for p in open_pages if p.error]
                assert not failed and time.time() < deadline, f"pages did not stream: {failed}"
                time.sleep(0.2)
            time.sleep(SETTLE)
            before, t0 = cpu_seconds(base.pid), time.monotonic()
            bytes0 = [(p.bytes, p.updates) for p in open_pages]
            time.sleep(seconds)
            cpu = (cpu_seconds(base.pid) - before) / (time.monotonic() - t0)
            sent = [(p.bytes - b, p.updates - u) for p, (b, u) in zip(open_pages, bytes0)]
            running[0] = False
            w.join()
            for p in open_pages:
                p.stop = True
            out[pages] = {"cpu": cpu, "seconds": seconds, "bytes": sum(b for b, _ in sent), "updates": sum(u for _, u in sent),
                          "view_bytes": statistics.mean(p.view_bytes for p in open_pages) if open_pages else 0}
            time.sleep(PAUSE)
    return out


def first_draw(archive, end, span, runs=1 if SMOKE else 3) -> float:
    state = {"views": [{"name": n} for n in VIEWS], "since": end - span, "until": end, "live": False,
             "axis": "linear"}
    times = []
    with web_server(archive) as base, browser() as page:
        for _ in range(runs):
            page.get("about:blank")
            t = time.perf_counter()
            page.get(state_url(base, state))
            plots_ready(page, len(VIEWS))
            page.execute_script("return 0")
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def static_draw(archive, end, span, folder) -> float:
    """4 HTML files from the CLI (one process each, as a user runs them), each opened until drawn."""
    t = time.perf_counter()
    files = []
    for i, name in enumerate(VIEWS):
        out = Path(folder) / f"v{i}.html"
        cmd = "breakdown" if name.startswith("nfs.ops") else "heatmap"
        subprocess.run([STRATA, cmd, name, "--archive", str(archive), "--since", str(end - span),
                        "--until", str(end), "--format", "html", "-o", str(out)], check=True, capture_output=True)
        files.append(out)
    with browser() as page:
        for f in files:
            page.get(f"file://{f}")
            deadline = time.time() + 60
            while not page.execute_script("return document.querySelector('.main-svg') !== null"):
                assert time.time() < deadline, f"{f} never drew"
                time.sleep(0.02)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=1 if SMOKE else 20, help="seconds of live updates measured per case")
    args = ap.parse_args()
    records = Records()
    with tempfile.TemporaryDirectory() as folder:
        archive = Path(folder) / "web.db"
        end = int(time.time()) - 5
        print(f"archive: 4 datasets, a week (the last hour every second), written in {build(archive, end, records):.0f} s")

        for span, label in SPANS:
            page = first_draw(archive, end, span)
            files = static_draw(archive, end, span, folder)
            print(f"first full draw, 4 views x {label}: page {page:.2f} s; static HTML files {files:.2f} s "
                  f"(page/static {page / files:.2f})")

        res = live(archive, records, args.seconds)
        idle = res[0]["cpu"]
        for pages in PAGES[1:]:
            r = res[pages]
            per_update = r["bytes"] / max(r["updates"], 1)
            per_page_cpu = (r["cpu"] - idle) / pages
            # an update is one view's new columns; a page gets 4 a second
            print(f"live, {pages} page(s), 4 views x last hour: server CPU {100 * r['cpu']:.1f}% "
                  f"({100 * per_page_cpu:.2f}% of a core per page above idle {100 * idle:.1f}%); "
                  f"{per_update:.0f} bytes per view update, {4 * per_update:.0f} bytes per page-second; "
                  f"loading the 4 views again: {r['view_bytes']:.0f} bytes "
                  f"({r['view_bytes'] / max(4 * per_update, 1):.0f}x); "
                  f"{r['updates'] / pages / r['seconds']:.1f} view updates per page-second")


if __name__ == "__main__":
    main()
