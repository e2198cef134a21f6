"""Archive benchmark: a synthetic 7-day archive of one heat-map dataset with 20 keys at 1 Hz.

Prints bytes on disk per dataset-day and per second of data, query times (the last 24 h and
the whole week at display resolutions, the last 10 minutes at full resolution; wall and CPU
time, best of several) and the ingest cost of one second, each next to a peer measured in the
same run: for size, the same seconds stored as the collector's JSON lines in SQLite; for
queries, fetching the same rows without decoding them, and with --before REV the same query
answered by the archive code (datasets/) of git revision REV, alternating with this tree's;
for ingest, json.loads of the same lines alone. The week at 10-minute columns (read from the
minute level's ten-minute records) is also timed against the same archive without them, as
one written before they were stored answers it from its minute records (alternating).

Usage: .venv/bin/python bench/datasets_archive.py [--days 7] [--keep FILE] [--before REV]
       (--keep: an archive already at FILE is reused; BENCH_SMOKE=1, bench/run.sh: 1 hour)
"""
import argparse
import importlib
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from strata.datasets import codec
from strata.datasets.archive import Archive

sys.path.insert(0, str(Path(__file__).resolve().parent))
from revision import datasets_of  # noqa: E402
from strata.collect.collector import Collector
from strata.datasets.retention import Retention

KEYS, SPREAD, HOUR, DAY = 20, 40, 3600, 86400
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
REPO = Path(__file__).resolve().parent.parent


def hour_of_cells(rng, hour):
    """Cells of one hour: per second and key, ~14 buckets near a per-key latency mode."""
    mask = rng.random((HOUR, KEYS, SPREAD)) < 0.35
    sec, key, off = np.nonzero(mask)
    base = 280 + 12 * np.arange(KEYS) + (hour % 24)  # 20 clients, 100 us .. 10 ms, drifting daily
    count = rng.geometric(0.15, len(sec)).astype(np.uint64)
    return codec.Cells(sec.astype(np.int64), key.astype(np.int64), (base[key] + off).astype(np.int64),
                       count, np.zeros(len(sec)))


def generate(path, hours, rng):
    """Write `hours` of data with the archive's encoding and rollups, in batched inserts."""
    archive = Archive.open(path, readonly=False)
    t_end = int(time.time()) // HOUR * HOUR
    t0 = t_end - hours * HOUR
    info = archive.create("nfs.latency[client]", Retention(second=None, minute=None, hour=None), now=t0)
    with archive.write() as c:
        c.executemany("INSERT INTO keys VALUES (?, ?, ?)", [(info.id, k, f"10.0.0.{k + 1}") for k in range(KEYS)])
    sample = None
    for h in range(hours):
        t = t0 + h * HOUR
        cells = hour_of_cells(rng, h)
        secs = codec.encode("heatmap", cells, HOUR)
        mins = codec.encode("heatmap", codec.combine(cells, cells.row // 60), 60)
        tens = codec.encode("heatmap", codec.combine(cells, cells.row // 600), 6)
        hour = codec.encode("heatmap", codec.combine(cells, np.zeros(len(cells), np.int64)), 1)
        rows = ([(info.id, 1, t + i, b) for i, b in enumerate(secs)] +
                [(info.id, 60, t + 60 * i, b) for i, b in enumerate(mins)] +
                [(info.id, 600, t + 600 * i, b) for i, b in enumerate(tens)] + [(info.id, HOUR, t, hour[0])])
        with archive.write() as c:
            c.executemany("INSERT INTO records (dataset, step, t, data) VALUES (?, ?, ?, ?)", rows)
        if sample is None:
            sample = cells
    archive.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return archive, info, t_end, sample


def json_lines(cells, t0, ds):
    """The collector's JSON lines for the seconds in cells (the peer format; cells in row order)."""
    out = []
    bounds = np.searchsorted(cells.row, np.arange(int(cells.row.max()) + 2))
    for s in range(len(bounds) - 1):
        pick = slice(bounds[s], bounds[s + 1])
        data = {}
        for k, b, n in zip(cells.key[pick].tolist(), cells.bucket[pick].tolist(), cells.count[pick].tolist()):
            data.setdefault(f"10.0.0.{k + 1}", {})[str(b)] = n
        out.append(json.dumps({"v": 1, "type": "data", "t": t0 + s, "id": str(ds), "kind": "heatmap",
                               "data": data}))
    return out


def best(fn, repeat=5):
    """(wall, CPU) seconds of fn, the fastest of `repeat` runs each."""
    wall = cpu = float("inf")
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        wall, cpu = min(wall, time.perf_counter() - t), min(cpu, time.process_time() - c)
    return wall, cpu


def archive_of(rev, folder):
    """The Archive class of git revision rev's datasets/, imported as a package of its own."""
    package = datasets_of(rev, folder)
    return importlib.import_module(package + ".archive").Archive


def queries(path, info, now, span, before, folder):
    """Each query's time (and its peers': the rows fetched alone, --before's code)."""
    archive = Archive.open(path)
    old = archive_of(before, folder).open(path) if before else None
    week = f"the whole {span // DAY} days" if span >= DAY else f"the whole {span // HOUR} h"
    for label, seconds, resolution in (("last 24 h at 60 s/column", DAY, 60),
                                       ("last 24 h at 180 s/column", DAY, 180),
                                       ("last 10 min at 1 s/column", 600, None),
                                       (f"{week} at 10 min/column", span, 600),
                                       (f"{week} at 1 h/column", span, HOUR)):
        r = archive.query(info.name, now - seconds, now, resolution)
        step = {"second": 1, "minute": 600 if resolution == 600 else 60, "hour": HOUR}[r.level]
        fetch = best(lambda: archive.conn.execute(
            "SELECT t, data FROM records WHERE dataset = ? AND step = ? AND t >= ? AND t < ?",
            (info.id, step, now - seconds, now)).fetchall())
        ours, theirs = (float("inf"),) * 2, (float("inf"),) * 2
        for _ in range(3):           # alternating with --before's, as many runs of each, best of each
            ours = min(ours, best(lambda: archive.query(info.name, now - seconds, now, resolution), 3))
            if old:
                theirs = min(theirs, best(lambda: old.query(info.name, now - seconds, now, resolution), 3))
        line = (f"query {label} ({len(r.times)} columns, level {r.level}): {ours[0] * 1e3:.1f} ms "
                f"(CPU {ours[1] * 1e3:.1f} ms); fetching its rows alone: {fetch[0] * 1e3:.1f} ms "
                f"({ours[0] / fetch[0]:.1f}x)")
        if old:
            line += (f"; {before}'s code: {theirs[0] * 1e3:.1f} ms (CPU {theirs[1] * 1e3:.1f} ms), "
                     f"{theirs[0] / ours[0]:.2f}x this tree's wall time, {theirs[1] / ours[1]:.2f}x its CPU time")
        print(line, flush=True)
    archive.close()
    ten_minutes_against_minutes(path, info, now - span, now, week, folder)


def ten_minutes_against_minutes(path, info, start, end, week, folder):
    """The query of [start, end) at 10-minute columns, from the ten-minute records against the
    same archive without them (answered from its minute records), alternating, best of each."""
    bare_path = os.path.join(folder, "no-ten-minutes.db")
    shutil.copy(path, bare_path)
    with sqlite3.connect(bare_path) as c:
        c.execute("DELETE FROM records WHERE step = 600")
    archive, bare = Archive.open(path), Archive.open(bare_path)
    ours, theirs = (float("inf"),) * 2, (float("inf"),) * 2
    for _ in range(3):
        ours = min(ours, best(lambda: archive.query(info.name, start, end, 600), 2))
        theirs = min(theirs, best(lambda: bare.query(info.name, start, end, 600), 2))
    print(f"query {week} at 10 min/column from ten-minute records: {ours[0] * 1e3:.1f} ms (CPU "
          f"{ours[1] * 1e3:.1f} ms); from minute records (no ten-minute records stored): "
          f"{theirs[0] * 1e3:.1f} ms (CPU {theirs[1] * 1e3:.1f} ms): {theirs[0] / ours[0]:.1f}x faster",
          flush=True)
    archive.close()
    bare.close()
    os.unlink(bare_path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--keep", help="keep the generated archive at this path")
    ap.add_argument("--before", metavar="REV", help="also time each query with git revision REV's archive code")
    args = ap.parse_args()
    rng = np.random.default_rng(42)
    folder = tempfile.mkdtemp(prefix="strata-bench-ds-")
    path = args.keep or os.path.join(folder, "week.db")
    hours = 1 if SMOKE else args.days * 24
    if os.path.exists(path):
        archive = Archive.open(path, readonly=False)
        info = archive.datasets()[0]
        now = archive.extent(info.name)[1] + 1
        hours = (now - archive.extent(info.name)[0]) // HOUR
        sample = codec.decode("heatmap", [r[0] for r in archive.conn.execute(
            "SELECT data FROM records WHERE step = 1 ORDER BY t LIMIT ?", (HOUR,))])
        print(f"reusing {path} ({hours} h)")
    else:
        t = time.perf_counter()
        archive, info, now, sample = generate(path, hours, rng)
        print(f"generated {hours} h ({KEYS} keys, {len(sample) / HOUR:.0f} buckets/s) in "
              f"{time.perf_counter() - t:.1f} s")
    size = os.path.getsize(path)
    seconds = hours * HOUR

    # size peer: one hour of the collector's JSON lines in SQLite, scaled to a day
    lines = json_lines(sample, now, info.id)
    peer_path = os.path.join(folder, "json.db")
    peer = sqlite3.connect(peer_path)
    peer.execute("CREATE TABLE lines(t INTEGER PRIMARY KEY, line TEXT)")
    peer.executemany("INSERT INTO lines VALUES (?, ?)", [(now + i, ln) for i, ln in enumerate(lines)])
    peer.commit()
    peer_day = os.path.getsize(peer_path) * DAY / (len(lines) or 1)
    per_day = size * DAY / seconds
    print(f"on disk: {per_day / 1e6:.1f} MB per dataset-day, {size / seconds:.0f} B per second of data "
          f"(all levels); JSON lines in SQLite: {peer_day / 1e6:.1f} MB/day -> "
          f"{per_day / peer_day:.2f}x of the peer")
    archive.close()
    queries(path, info, now, seconds, args.before, folder)
    name = info.name

    # ingest: the collector's real path (JSON line -> second + minute + hour records), fresh archive
    live = Archive.open(os.path.join(folder, "live.db"), readonly=False)
    d = live.create(name)
    col = Collector(live, command=[], log=lambda m: print(m, file=sys.stderr))
    col.kinds = {d.id: "heatmap"}
    lines = json_lines(sample, now, d.id)[:20 if SMOKE else 600]
    t = time.perf_counter()
    for ln in lines:  # one transaction per second, as during collection
        col.handle([ln])
    ingest = (time.perf_counter() - t) / len(lines)
    parse = best(lambda: [json.loads(ln) for ln in lines])[0] / len(lines)
    print(f"ingest: {ingest * 1e3:.2f} ms per second of data ({ingest * 100:.2f}% of one CPU at 1 Hz); "
          f"json.loads alone: {parse * 1e3:.3f} ms ({ingest / parse:.0f}x)")
    live.close()
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
