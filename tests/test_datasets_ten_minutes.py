"""The minute level's ten-minute records (step 600): written by the real ingest path, a query
at 10-minute columns reads them and answers exactly as from the minute records; an archive
without them (or whose first one began part way) answers the same from its minutes; pruning
the minute level prunes them."""
import shutil
import sqlite3

import numpy as np
import pytest

from datasets_util import data_line, heat_second
from strata.datasets.archive import Archive
from strata.collect.collector import Collector

T0 = 1_700_000_000 - 1_700_000_000 % 3600 + 3000  # on a ten-minute boundary, 10 minutes before an hour
N = 1500
NAMES = ("nfs.latency[client]", "disk.ops[op]", "arc.size")


def lines(archive, t0, t1, names=NAMES):
    """The collector's lines of [t0, t1) for the datasets named (of NAMES)."""
    ids = {n: archive.dataset(n).id for n in names}
    out = []
    for t in range(t0, t1):
        for n, ds in ids.items():
            kind, data = {NAMES[0]: ("heatmap", heat_second(t)),
                          NAMES[1]: ("counter", {"read": t % 9, "write": 3} if t % 5 else {}),
                          NAMES[2]: ("gauge", {"": float(t % 100)})}[n]
            out.append(data_line(ds, t, kind, data))
    return out


def feed(archive, batch):
    c = Collector(archive, command=[], log=lambda m: None)
    c.kinds = {d.id: d.kind for d in archive.datasets()}
    c.names = {d.id: d.name for d in archive.datasets()}
    c.handle(batch)


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """An archive of N seconds of three datasets, built once; each test gets a copy."""
    path = tmp_path_factory.mktemp("template") / "a.db"
    with Archive.open(path, readonly=False) as a:
        for n in NAMES:
            a.create(n, now=T0)
        feed(a, lines(a, T0, T0 + N))
        a.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


@pytest.fixture()
def filled(template, tmp_path):
    shutil.copy(template, tmp_path / "a.db")
    a = Archive.open(tmp_path / "a.db", readonly=False)
    yield a
    a.close()


def without_ten_minutes(archive, path):
    """A copy of the archive as one written before ten-minute records were stored."""
    archive.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.copy(archive.path, path)
    with sqlite3.connect(path) as c:
        c.execute("DELETE FROM records WHERE step = 600")
    return Archive.open(path, readonly=False)


def same(a, b):
    assert (a.level, a.step, a.keys) == (b.level, b.step, b.keys)
    for x, y in ((a.times, b.times), (a.present, b.present), (a.buckets, b.buckets), (a.counts, b.counts),
                 (a.values, b.values)):
        assert x.shape == y.shape and np.array_equal(x, y, equal_nan=x.dtype.kind == "f")


QUERIES = ((T0, T0 + N, 600), (T0 + 601, T0 + N, 1200), (T0, T0 + N, 1800), (T0 + 30, T0 + 1000, 600))


def test_ten_minute_columns_read_the_ten_minute_records_and_equal_the_minutes(filled, tmp_path):
    assert filled.conn.execute("SELECT count(*) FROM records WHERE step = 600 AND dataset = 1").fetchone()[0] == 3
    with without_ten_minutes(filled, tmp_path / "bare.db") as bare:
        for name in NAMES:
            for start, end, res in QUERIES:
                same(filled.query(name, start, end, res), bare.query(name, start, end, res))
    # the query did read them: without the middle one its column holds nothing
    filled.conn.execute("DELETE FROM records WHERE step = 600 AND t = ?", (T0 + 600,))
    r = filled.query(NAMES[0], T0, T0 + N, 600)
    assert r.present.tolist() == [True, False, True] and r.counts[:, 1].sum() == 0


def test_ten_minute_records_that_began_part_way_are_read_only_after_their_first(filled, tmp_path):
    """An archive written before them gets them from the next second on: the first (partial)
    ten-minute window is answered from its minutes, the later ones from the new records."""
    more = lines(filled, T0 + N, T0 + 2400, NAMES[:1])
    with without_ten_minutes(filled, tmp_path / "old.db") as bare:
        feed(filled, more)
        feed(bare, more)
        assert bare.conn.execute("SELECT min(t) FROM records WHERE step = 600").fetchone()[0] == T0 + 1200
        with without_ten_minutes(filled, tmp_path / "ref.db") as ref:
            for start in (T0, T0 + 1200, T0 + 1800):
                want = ref.query(NAMES[0], start, T0 + 2400, 600)
                same(bare.query(NAMES[0], start, T0 + 2400, 600), want)
                same(filled.query(NAMES[0], start, T0 + 2400, 600), want)


def test_pruning_the_minute_level_prunes_its_ten_minute_records(filled):
    filled.prune(NAMES[1], 800, level="minute", now=T0 + N)
    left = filled.conn.execute("SELECT t FROM records WHERE step = 600 AND dataset = ? ORDER BY t",
                               (filled.dataset(NAMES[1]).id,)).fetchall()
    assert left == [(T0 + 600,), (T0 + 1200,)]   # the first lay wholly before T0 + 700
    assert filled.dataset(NAMES[1]).usage["minute"][0] == 2 + len(range(T0 + 660, T0 + N, 60))
    filled.enforce_retention(now=T0 + 1800 + 90 * 86400)   # the minutes' 90 days
    assert filled.conn.execute("SELECT count(*) FROM records WHERE step = 600").fetchone()[0] == 0
