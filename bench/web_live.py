#!/usr/bin/env python3
"""Benchmark of `strata web`, each figure against a peer measured in the same run:

- live: a real `strata collect` storing one second per second (its daemon replaced by
  bench/replaydaemon.py, which replays this bench's records: no BPF), and `strata web`
  with 0 and PAGES open pages of 4 views over the last 5 minutes (a column per second):
  the time from a second's collection (its record leaving the daemon, at the end of the
  second) to its column reaching a page, the server's CPU per open page, the bytes per
  update; with --before REV, REV's `strata web` (bench/revision.py) is measured the same
  way, alternating with this tree's, ROUNDS rounds each, on the same collector;
- first full draw in headless chromium of 4 views x 1 h and x 1 week, against the
  same 4 views rendered today as static HTML files (`strata heatmap/breakdown --format
  html`, one process each) and opened in the same browser.

The archive (a week: one second a minute for 6 days 23 h, every second of the last
hour; 4 datasets, 8 clients) is written through the datasets API, about a minute.
Usage: .venv/bin/python bench/web_live.py [--seconds 20] [--before REV] [--no-draw]
Smoke mode (BENCH_SMOKE=1, bench/run.sh): "an hour" is 10 minutes and "a week" 2 hours, one
draw of the week only (its last 10 minutes are the hour's per-second data), 1 s of live
updates after 1 s of settling, 1 open page, one round.
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

sys.path.insert(0, str(REPO / "bench"))
from heatmaps_util import histogram, seed_latencies                     # noqa: E402
from revision import strata_of                                           # noqa: E402
from strata.datasets.archive import Archive                              # noqa: E402
from strata.lab.process import stop                                     # noqa: E402
from web_util import browser, plots_ready, state_url, stderr_of, web_server  # noqa: E402

STRATA = str(Path(sys.executable).parent / "strata")
VIEWS = ["nfs.latency", "nfs.latency[client]", "nfs.size", "nfs.ops[client]"]
CLIENTS = [f"10.0.0.{i}" for i in range(1, 9)]
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
HOUR, WEEK = (600, 7200) if SMOKE else (3600, 7 * 86400)
PAGES = 1 if SMOKE else 8
ROUNDS = 1 if SMOKE else 3
LIVE_LAST = 300            # the live pages' views: 5 minutes, a column per second
REPLAY = str(REPO / "bench" / "replaydaemon.py")
SPANS = ((WEEK, "1 week"),) if SMOKE else ((HOUR, "1 h"), (WEEK, "1 week"))
# seconds from the streams opening to the measure, and from a case's end (its pages closing) to the next
SETTLE = 1 if SMOKE else 2     # seconds from the streams opening to the measure
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
    """CPU time of every thread of the process so far (schedstat: nanoseconds, not clock ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass                        # a thread that ended meanwhile
    return total / 1e9


def get_json(url):
    with NO_PROXY.open(url, timeout=60) as r:
        body = r.read()
    return json.loads(body), len(body)


class Page(threading.Thread):
    """What an open page asks of the server: its views (the 4 VIEWS) over the last `last`
    seconds, then their live stream; arrivals: (time received, view, newest column's second) per update."""

    def __init__(self, base, views=VIEWS, last=LIVE_LAST):
        super().__init__(daemon=True)
        self.base, self.views, self.last, self.received, self.arrivals = base, views, last, 0, []
        self.updates, self.stop, self.streaming, self.error = 0, False, False, None

    def run(self):
        try:
            self._run()
        except Exception as e:          # said by live(): a page that did not stream
            self.error = e

    def _run(self):
        ids, after = [], []
        for name in self.views:
            v, _ = get_json(f"{self.base}/api/view?name={urllib.request.quote(name)}&last={self.last}")
            ids.append(v["live"]["id"])
            after.append(v["live"]["next"] - v["live"]["width"])
        path = f"/api/live?ids={','.join(ids)}&after={','.join(map(str, after))}"
        host, port = self.base.split("//")[1].split(":")
        buffer = b""
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
                now = time.time()
                self.received += len(data)
                buffer += data
                while b"\n\n" in buffer:            # events, between the chunks' size lines
                    event, buffer = buffer.split(b"\n\n", 1)
                    for line in event.split(b"\n"):
                        if line.startswith(b"data: "):
                            self.updates += 1
                            event = json.loads(line[6:])
                            self.arrivals.append((now, event["i"], max(c["t"] for c in event["cols"])))


def delays(pages, since) -> list:
    """Seconds from each second's end (when the daemon emits its record) to the first update
    of a view holding its column, per page, view and second from `since` on."""
    out = []
    for p in pages:
        first = {}
        for at, i, t in p.arrivals:
            if t >= since:
                first.setdefault((i, t), at)
        out += [at - (t + 1) for (_, t), at in first.items()]
    return out


def replay_pool(records, folder) -> str:
    """The replay daemon's records (bench/replaydaemon.py): this bench's pool."""
    path = os.path.join(folder, "replay.json")
    kinds = {"nfs.latency": "heatmap", "nfs.latency[client]": "heatmap", "nfs.size": "heatmap",
             "nfs.ops[client]": "counter"}
    with open(path, "w") as f:
        json.dump({"kinds": kinds, "pool": records.pool}, f)
    return path


def measure(command, archive, seconds) -> dict:
    """One `strata web` (command): its CPU with no page for `seconds`, then with PAGES pages
    (after SETTLE s) for `seconds`: the delays of their columns, the bytes per update."""
    with web_server(archive, command=command) as base:
        time.sleep(SETTLE + 1)                              # started, the collector's feed found
        before, t0 = cpu_seconds(base.pid), time.monotonic()
        time.sleep(seconds)
        idle = (cpu_seconds(base.pid) - before) / (time.monotonic() - t0)
        pages = [Page(base) for _ in range(PAGES)]
        for p in pages:
            p.start()
        deadline = time.time() + 120                        # views loaded, streams open
        while not all(p.streaming for p in pages):
            failed = [p.error for p in pages if p.error]
            assert not failed and time.time() < deadline, f"pages did not stream: {failed}"
            time.sleep(0.2)
        time.sleep(SETTLE)
        since = int(time.time()) + 1
        before, t0 = cpu_seconds(base.pid), time.monotonic()
        got = [(p.received, p.updates) for p in pages]
        time.sleep(seconds)
        busy = (cpu_seconds(base.pid) - before) / (time.monotonic() - t0)
        sent = [(p.received - b, p.updates - u) for p, (b, u) in zip(pages, got)]
        for p in pages:
            p.stop = True
        said = stderr_of(base)
    waits = delays(pages, since)
    return {"idle": idle, "busy": busy, "per_page": (busy - idle) / PAGES, "delays": waits,
            "bytes": sum(b for b, _ in sent) / max(sum(u for _, u in sent), 1),
            "feed": "live columns from the seconds the collector" in said}


def live(archive, records, seconds, folder, before) -> dict:
    """measure() of this tree's `strata web` (and of --before's, alternating), on one collector."""
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    env["STRATA_REPLAY"] = replay_pool(records, folder)
    collect = subprocess.Popen([STRATA, "collect", "--archive", str(archive), "--collector", REPLAY],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    builds = [("this tree", [STRATA])] + ([(before, strata_of(before, folder))] if before else [])
    out = {name: [] for name, _ in builds}
    try:
        deadline = time.time() + 60
        while newest(archive) < int(time.time()) - 3:       # the collector stores every second
            assert collect.poll() is None and time.time() < deadline, collect.stderr.read()
            time.sleep(0.5)
        for r in range(ROUNDS):
            for name, command in (builds if r % 2 == 0 else builds[::-1]):
                out[name].append(measure(command, archive, seconds))
    finally:
        stop(collect)
    return out


def newest(archive) -> int:
    with Archive.open(str(archive)) as a:
        return a.conn.execute("SELECT COALESCE(MAX(t), 0) FROM records WHERE step = 1").fetchone()[0]


def summary(runs) -> dict:
    waits = sorted(w for r in runs for w in r["delays"])
    pick = (lambda q: waits[min(int(q * len(waits)), len(waits) - 1)]) if waits else (lambda q: float("nan"))
    return {"median": pick(0.5), "p90": pick(0.9), "n": len(waits),
            "idle": statistics.median(r["idle"] for r in runs),
            "per_page": statistics.median(r["per_page"] for r in runs),
            "bytes": statistics.median(r["bytes"] for r in runs), "feed": all(r["feed"] for r in runs)}


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
    ap.add_argument("--before", metavar="REV", help="also measure git revision REV's strata web, alternating")
    ap.add_argument("--no-draw", action="store_true", help="leave out the first full draws")
    args = ap.parse_args()
    records = Records()
    with tempfile.TemporaryDirectory() as folder:
        archive = Path(folder) / "web.db"
        end = int(time.time()) - 5
        print(f"archive: 4 datasets, a week (the last hour every second), written in {build(archive, end, records):.0f} s")

        for span, label in () if args.no_draw else SPANS:
            page = first_draw(archive, end, span)
            files = static_draw(archive, end, span, folder)
            print(f"first full draw, 4 views x {label}: page {page:.2f} s; static HTML files {files:.2f} s "
                  f"(page/static {page / files:.2f})")

        res = {name: summary(runs) for name, runs in live(archive, records, args.seconds, folder,
                                                              args.before).items()}
        for name, r in res.items():
            print(f"live, {name}: {PAGES} page(s) x 4 views x last {LIVE_LAST} s, a column per second: "
                  f"a second's column reaches a page {1e3 * r['median']:.0f} ms after the second ends "
                  f"(p90 {1e3 * r['p90']:.0f} ms, {r['n']} columns); server CPU {100 * r['idle']:.2f}% idle, "
                  f"{100 * r['per_page']:.2f}% of a core per page; {r['bytes']:.0f} bytes per view update; "
                  f"following the collector's feed: {'yes' if r['feed'] else 'no'}")
        if args.before:
            ours, theirs = res["this tree"], res[args.before]
            print(f"live, this tree against {args.before} ({ROUNDS} alternating rounds): delay median "
                  f"{ours['median'] / theirs['median']:.2f}x, p90 {ours['p90'] / theirs['p90']:.2f}x; "
                  f"CPU per page {ours['per_page'] / theirs['per_page']:.2f}x; idle CPU "
                  f"{ours['idle'] / max(theirs['idle'], 1e-9):.2f}x")


if __name__ == "__main__":
    main()
