"""Rollups written once per period (datasets/ingest.py) against the sum of their seconds, with
real SQLite: the collector's own line handler is fed the documented collector lines over
labels that cross minutes, ten minutes and an hour in a second of test time, and "crashes"
by being dropped with its connection closed, unflushed (what kill -9 leaves: the committed
transactions; tests/test_datasets_collect.py kills a real `strata collect`). After each
restart, and across a suspend, a resume and a prune of the second level, every minute,
ten-minute and hour record equals the sum of its seconds, and a query of a period still
open reads it whole."""
import numpy as np

from datasets_util import data_line, heat_second, rollups_against_seconds, second_records
from strata.datasets import salvage, transfer
from strata.datasets.archive import Archive
from strata.collect.collector import Collector

T0 = 1_700_000_000 - 1_700_000_000 % 3600 + 2880 + 17   # 17 s into a minute, 12 minutes before an hour
NAMES = {"nfs.latency[client]": "heatmap", "disk.ops[op]": "counter", "arc.size": "gauge"}


def second_of(kind, t):
    return {"heatmap": heat_second(t, nkeys=4), "counter": {"read": t % 7, "write": 1 + t % 3} if t % 5 else {},
            "gauge": {"": float(t % 100)}}[kind]


def collecting(path):
    """A collector over the archive at path that writes rollups only when periods end (no
    daemon: its line handler is fed)."""
    c = Collector(Archive.open(path, readonly=False), command=[], log=lambda m: None, flush_every=None)
    for d in c.archive.datasets():
        if d.state == "active":
            c.kinds[d.id], c.infos[d.id] = d.kind, d
    return c


def feed(c, t0, t1, batch=47):
    ids = {d.name: d.id for d in c.archive.datasets()}
    for s in range(t0, t1, batch):
        c.handle([data_line(ids[n], t, kind, second_of(kind, t)) for t in range(s, min(s + batch, t1))
                  for n, kind in NAMES.items()])


def crash(c):
    """What kill -9 leaves of a collector: its committed transactions."""
    c.archive.close()


def made(tmp_path):
    path = str(tmp_path / "a.db")
    with Archive.open(path, readonly=False) as a:
        for n in NAMES:
            a.create(n, now=T0 - 10)
    return path


def open_periods_read_whole(path, lo, end):
    """Queries at minute, ten-minute and hour columns from lo on (rounded up to a column) equal
    the seconds summed, the periods still open (the last columns) included."""
    checked = 0
    with Archive.open(path) as a:
        for n, kind in NAMES.items():
            for step in (60, 600, 3600):
                s0 = lo + (-lo) % step
                if kind == "gauge" or s0 >= end:
                    continue
                fine, coarse = a.query(n, s0, end), a.query(n, s0, end, resolution=step)
                assert fine.level == "second" and coarse.level == ("hour" if step == 3600 else "minute")
                cut = np.arange(0, len(fine.times), step)
                if kind == "heatmap":
                    assert fine.keys == coarse.keys and np.array_equal(fine.buckets, coarse.buckets)
                    assert np.array_equal(np.add.reduceat(fine.counts, cut, axis=1), coarse.counts)
                else:
                    assert np.array_equal(np.add.reduceat(fine.values, cut, axis=1), coarse.values)
                checked += 1
    return checked


def test_crashes_mid_period_leave_every_rollup_the_sum_of_its_seconds(tmp_path):
    path = made(tmp_path)
    # each run: [first, stop) of labels, stopped mid-minute, the third past an hour; the fourth
    # starts ten minutes after the third stopped (the periods left open then get no second:
    # only the restart's recovery writes them)
    runs = [(T0, T0 + 200), (T0 + 200, T0 + 650), (T0 + 650, T0 + 777), (T0 + 1400, T0 + 1620)]
    for first, stop in runs:
        c = collecting(path)
        feed(c, first, stop)
        assert c.ingest.open and c.archive.conn.execute("SELECT count(*) FROM pending").fetchone()[0] > 0
        crash(c)
    assert open_periods_read_whole(path, T0 - T0 % 3600, stop) == 6
    c = collecting(path)
    feed(c, stop, stop + 50)
    c._flush()                                              # as at stop
    with Archive.open(path) as a:
        assert rollups_against_seconds(a.conn, second_records(a.conn)) > 3 * (15 + 1 + 1)


def test_suspend_resume_and_a_prune_of_the_seconds_keep_every_rollup_exact(tmp_path):
    path = made(tmp_path)
    c = collecting(path)
    feed(c, T0, T0 + 200)
    with Archive.open(path, readonly=False) as other:
        other.set_state(["disk.ops[op]"], "suspended", now=T0 + 200)
    feed(c, T0 + 200, T0 + 230)                             # disk.ops dropped: its open periods written
    assert not any(k[0] == 2 for k in c.ingest.open)
    with Archive.open(path, readonly=False) as other:
        other.set_state(["disk.ops[op]"], "active", now=T0 + 240)
    c.sync()
    feed(c, T0 + 230, T0 + 690)
    seen = second_records(c.archive.conn)
    with Archive.open(path, readonly=False) as other:    # cuts into the open minute, ten minutes and hour
        other.prune("nfs.latency[client]", 30, level="second", now=T0 + 690)
        other.prune("disk.ops[op]", 30, level="second", now=T0 + 690)
    feed(c, T0 + 690, T0 + 700)
    crash(c)                                             # before those periods end
    c = collecting(path)
    feed(c, T0 + 700, T0 + 800)
    seen.update(second_records(c.archive.conn))
    assert open_periods_read_whole(path, T0 + 660, T0 + 800) == 6   # from the seconds the prune left
    c._flush()
    with Archive.open(path) as a:
        assert a.conn.execute("SELECT min(t) FROM records WHERE step = 1 AND dataset = 1").fetchone()[0] == T0 + 660
        assert rollups_against_seconds(a.conn, seen) > 0
        assert not any(ds == 2 and T0 + 200 <= t <= T0 + 240 for ds, t in seen)


def test_copies_of_an_archive_with_open_periods_hold_them_whole(tmp_path):
    """`datasets archive` and `verify --salvage` write the periods a collector left open as the
    sums of their seconds; `import` carries them open, read whole."""
    path = made(tmp_path)
    c = collecting(path)
    feed(c, T0, T0 + 100)
    crash(c)
    for out in (tmp_path / "x.db", tmp_path / "s.db"):
        with Archive.open(path) as a:
            if out.name == "x.db":
                transfer.export(a, list(NAMES), str(out), say=lambda line: None)
            else:
                assert not salvage.salvage(path, str(out)).problems
        with Archive.open(out) as copy:
            assert rollups_against_seconds(copy.conn, second_records(copy.conn)) == 3 * (2 + 1 + 1)
    with Archive.open(tmp_path / "i.db", readonly=False) as into:
        transfer.import_from(into, path, say=lambda line: None)
        assert into.conn.execute("SELECT count(*) FROM pending").fetchone()[0] > 0
    assert open_periods_read_whole(str(tmp_path / "i.db"), T0 - T0 % 3600, T0 + 100) == 6
