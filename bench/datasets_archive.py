"""Archive benchmark: a synthetic 7-day archive of one heat-map dataset with 20 keys at 1 Hz.

Prints bytes on disk per dataset-day and per second of data, query times (last 24 h at
display resolution, last 10 minutes at full resolution) and the ingest cost of one second,
each next to a peer measured in the same run: for size, the same seconds stored as the
collector's JSON lines in SQLite; for queries, fetching the same rows without decoding
them; for ingest, json.loads of the same lines alone.

Usage: .venv/bin/python bench/datasets_archive.py [--days 7] [--keep FILE]
"""
import argparse
import json
import os
import sqlite3
import sys
import tempfile
import time

import numpy as np

from strata.datasets import codec
from strata.datasets.archive import Archive
from strata.datasets.collector import Collector
from strata.datasets.retention import Retention

KEYS, SPREAD, HOUR = 20, 40, 3600


def hour_of_cells(rng, hour):
    """Cells of one hour: per second and key, ~14 buckets near a per-key latency mode."""
    mask = rng.random((HOUR, KEYS, SPREAD)) < 0.35
    sec, key, off = np.nonzero(mask)
    base = 280 + 12 * np.arange(KEYS) + (hour % 24)  # 20 clients, 100 us .. 10 ms, drifting daily
    count = rng.geometric(0.15, len(sec)).astype(np.uint64)
    return codec.Cells(sec.astype(np.int64), key.astype(np.int64), (base[key] + off).astype(np.int64),
                       count, np.zeros(len(sec)))


def generate(path, days, rng):
    """Write `days` of data with the archive's encoding and rollups, in batched inserts."""
    archive = Archive.open(path, readonly=False)
    t_end = int(time.time()) // HOUR * HOUR
    t0 = t_end - days * 86400
    info = archive.create("nfs.latency[client]", Retention(second=None, minute=None, hour=None), now=t0)
    with archive.write() as c:
        c.executemany("INSERT INTO keys VALUES (?, ?, ?)", [(info.id, k, f"10.0.0.{k + 1}") for k in range(KEYS)])
    sample = None
    for h in range(days * 24):
        t = t0 + h * HOUR
        cells = hour_of_cells(rng, h)
        secs = codec.encode("heatmap", cells, HOUR)
        mins = codec.encode("heatmap", codec.combine(cells, cells.row // 60), 60)
        hour = codec.encode("heatmap", codec.combine(cells, np.zeros(len(cells), np.int64)), 1)
        rows = ([(info.id, 1, t + i, b) for i, b in enumerate(secs)] +
                [(info.id, 60, t + 60 * i, b) for i, b in enumerate(mins)] + [(info.id, HOUR, t, hour[0])])
        with archive.write() as c:
            c.executemany("INSERT INTO records (dataset, step, t, data) VALUES (?, ?, ?, ?)", rows)
        if sample is None:
            sample = cells
    archive.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return archive, info, t_end, sample


def json_lines(cells, t0, ds):
    """The collector's JSON lines for the seconds in cells (the peer format)."""
    out = []
    for s in range(int(cells.row.max()) + 1):
        pick = cells.row == s
        data = {}
        for k, b, n in zip(cells.key[pick], cells.bucket[pick], cells.count[pick]):
            data.setdefault(f"10.0.0.{k + 1}", {})[str(b)] = int(n)
        out.append(json.dumps({"v": 1, "type": "data", "t": t0 + s, "id": str(ds), "kind": "heatmap",
                               "data": data}))
    return out


def best(fn, repeat=5):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--days", type=int, default=7)
    ap.add_argument("--keep", help="keep the generated archive at this path")
    args = ap.parse_args()
    rng = np.random.default_rng(42)
    folder = tempfile.mkdtemp(prefix="strata-bench-ds-")
    path = args.keep or os.path.join(folder, "week.db")
    t = time.perf_counter()
    archive, info, now, sample = generate(path, args.days, rng)
    gen = time.perf_counter() - t
    size = os.path.getsize(path)
    seconds = args.days * 86400
    cells_per_s = len(sample) / HOUR
    print(f"generated {args.days} days ({seconds} s, {KEYS} keys, {cells_per_s:.0f} buckets/s) in {gen:.1f} s")

    # size peer: one hour of the collector's JSON lines in SQLite, scaled to a day
    lines = json_lines(sample, now, info.id)
    peer_path = os.path.join(folder, "json.db")
    peer = sqlite3.connect(peer_path)
    peer.execute("CREATE TABLE lines(t INTEGER PRIMARY KEY, line TEXT)")
    peer.executemany("INSERT INTO lines VALUES (?, ?)", [(now + i, ln) for i, ln in enumerate(lines)])
    peer.commit()
    peer_day = os.path.getsize(peer_path) * 24
    per_day = size / args.days
    print(f"on disk: {per_day / 1e6:.1f} MB per dataset-day, {size / seconds:.0f} B per second of data "
          f"(all three levels); JSON lines in SQLite: {peer_day / 1e6:.1f} MB/day -> "
          f"{per_day / peer_day:.2f}x of the peer")

    name = info.name
    day = best(lambda: archive.query(name, now - 86400, now, resolution=60))
    day_peer = best(lambda: archive.conn.execute(
        "SELECT t, data FROM records WHERE dataset = ? AND step = 60 AND t >= ? AND t < ?",
        (info.id, now - 86400, now)).fetchall())
    r = archive.query(name, now - 86400, now, resolution=60)
    print(f"query last 24 h at 60 s/column ({len(r.times)} columns, level {r.level}): {day * 1e3:.1f} ms "
          f"(goal <= 200 ms); fetching its rows alone: {day_peer * 1e3:.1f} ms ({day / day_peer:.1f}x)")
    day2 = best(lambda: archive.query(name, now - 86400, now, resolution=180))
    print(f"query last 24 h at 180 s/column (480 columns): {day2 * 1e3:.1f} ms")
    ten = best(lambda: archive.query(name, now - 600, now))
    ten_peer = best(lambda: archive.conn.execute(
        "SELECT t, data FROM records WHERE dataset = ? AND step = 1 AND t >= ? AND t < ?",
        (info.id, now - 600, now)).fetchall())
    print(f"query last 10 min at 1 s/column: {ten * 1e3:.1f} ms (goal <= 50 ms); "
          f"fetching its rows alone: {ten_peer * 1e3:.1f} ms ({ten / ten_peer:.1f}x)")
    week = best(lambda: archive.query(name, now - seconds, now, resolution=3600), repeat=3)
    print(f"query the whole {args.days} days at 1 h/column: {week * 1e3:.1f} ms")
    archive.close()

    # ingest: the collector's real path (JSON line -> second + minute + hour records), fresh archive
    live = Archive.open(os.path.join(folder, "live.db"), readonly=False)
    d = live.create(name)
    col = Collector(live, command=[], log=lambda m: print(m, file=sys.stderr))
    col.kinds = {d.id: "heatmap"}
    lines = json_lines(sample, now, d.id)[:600]
    t = time.perf_counter()
    for ln in lines:  # one transaction per second, as during collection
        col.handle([ln])
    ingest = (time.perf_counter() - t) / len(lines)
    parse = best(lambda: [json.loads(ln) for ln in lines]) / len(lines)
    print(f"ingest: {ingest * 1e3:.2f} ms per second of data ({ingest * 100:.2f}% of one CPU at 1 Hz); "
          f"json.loads alone: {parse * 1e3:.3f} ms ({ingest / parse:.0f}x)")
    live.close()
    for f in os.listdir(folder):
        os.unlink(os.path.join(folder, f))
    os.rmdir(folder)


if __name__ == "__main__":
    main()
