"""The archive with real SQLite: ingest of collector lines, exact rollups, queries, pruning,
retention, export/import. Records are fed as the documented collector JSON lines through
the collector's own line handler (the real ingest path; no daemon needed)."""
import json
import os
import shutil
import sqlite3

import numpy as np
import pytest

from datasets_util import data_line, heat_second, strata
from strata.datasets import schema, transfer
from strata.datasets.archive import Archive
from strata.collect.collector import Collector
from strata.datasets.errors import ArchiveError
from strata.datasets.retention import Retention

T0 = 1_700_000_000 - 1_700_000_000 % 3600 + 3000  # 10 minutes before an hour boundary
N = 1500


def feed(archive, lines):
    c = Collector(archive, command=[], log=lambda m: None)
    c.kinds = {d.id: d.kind for d in archive.datasets()}
    c.names = {d.id: d.name for d in archive.datasets()}
    c.handle(lines)
    return c


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """An archive of N seconds of three datasets, built once; each test gets a copy."""
    path = tmp_path_factory.mktemp("template") / "a.db"
    a = Archive.open(path, readonly=False)
    heat = a.create("nfs.latency[client]", now=T0)
    ops = a.create("disk.ops[op]", now=T0)
    gauge = a.create("arc.size", now=T0)
    lines = []
    for t in range(T0, T0 + N):
        lines.append(data_line(heat.id, t, "heatmap", heat_second(t)))
        lines.append(data_line(ops.id, t, "counter", {"read": t % 9, "write": 3} if t % 5 else {}))
        lines.append(data_line(gauge.id, t, "gauge", {"": float(t % 100)}))
    for i in range(0, len(lines), 300):
        feed(a, lines[i:i + 300])
    a.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    a.close()
    return path


@pytest.fixture()
def filled(template, tmp_path):
    shutil.copy(template, tmp_path / "a.db")
    a = Archive.open(tmp_path / "a.db", readonly=False)
    yield a
    a.close()


def expected_heat(t0, t1):
    """Per (key, bucket) totals of heat_second over [t0, t1)."""
    out = {}
    for t in range(t0, t1):
        for k, bs in heat_second(t).items():
            for b, c in bs.items():
                out[(k, int(b))] = out.get((k, int(b)), 0) + c
    return out


def as_totals(r):
    tot = r.counts.sum(axis=1)
    return {(k, int(b)): int(tot[i, j]) for i, k in enumerate(r.keys) for j, b in enumerate(r.buckets)
            if tot[i, j]}


def test_seconds_come_back_exactly(filled):
    r = filled.query("nfs.latency[client]", T0 + 100, T0 + 160)
    assert r.level == "second" and r.step == 1 and len(r.times) == 60 and r.present.all()
    assert r.keys == ["10.0.0.0", "10.0.0.1", "10.0.0.2"]
    assert as_totals(r) == expected_heat(T0 + 100, T0 + 160)
    col = 17
    one = {(k, int(b)): int(r.counts[i, col, j]) for i, k in enumerate(r.keys)
           for j, b in enumerate(r.buckets) if r.counts[i, col, j]}
    assert one == {(k, int(b)): c for k, bs in heat_second(T0 + 117).items() for b, c in bs.items()}


def test_rollups_equal_the_sum_of_their_seconds(filled):
    conn = filled.conn
    for step in (60, 3600):
        fine = filled.query("nfs.latency[client]", T0, T0 + N)
        coarse = filled.query("nfs.latency[client]", T0, T0 + N, resolution=step)
        assert coarse.level == {60: "minute", 3600: "hour"}[step]
        assert coarse.step == step
        # every coarse column, every key and bucket: the sum of the seconds in it
        col = (fine.times - coarse.times[0]) // step
        summed = np.zeros_like(coarse.counts)
        for j, b in enumerate(fine.buckets):
            jj = int(np.searchsorted(coarse.buckets, b))
            for i in range(len(fine.keys)):
                np.add.at(summed[i, :, jj], col, fine.counts[i, :, j])
        assert np.array_equal(summed, coarse.counts)
    n_minutes = conn.execute("SELECT count(*) FROM records WHERE step = 60 AND dataset = 1").fetchone()[0]
    assert n_minutes == len(range(T0 - T0 % 60, T0 + N, 60))


def test_counter_and_gauge_rollups(filled):
    sec = filled.query("disk.ops[op]", T0, T0 + 600)
    mins = filled.query("disk.ops[op]", T0, T0 + 600, resolution=60)
    assert sec.keys == mins.keys == ["read", "write"]
    assert np.array_equal(sec.values.reshape(2, -1, 60).sum(axis=2), mins.values)
    assert sec.values[1].sum() == 3 * sum(1 for t in range(T0, T0 + 600) if t % 5)
    g = filled.query("arc.size", T0, T0 + 600, resolution=300)
    assert g.kind == "gauge" and g.values.shape == (1, 2)
    assert g.values[0, 0] == pytest.approx(np.mean([t % 100 for t in range(T0, T0 + 300)]))


def test_resolution_that_is_not_a_level(filled):
    r = filled.query("nfs.latency[client]", T0, T0 + 600, resolution=90)
    assert r.level == "second" and r.step == 90
    r = filled.query("nfs.latency[client]", T0, T0 + 600, resolution=120)
    assert r.level == "minute" and r.step == 120
    assert as_totals(r) == expected_heat(T0 - T0 % 120, T0 + 600)


def test_duplicate_second_adds_up(filled):
    ds = filled.dataset("disk.ops[op]").id
    feed(filled, [data_line(ds, T0 + 1, "counter", {"read": 1000})])
    r = filled.query("disk.ops[op]", T0 + 1, T0 + 2)
    assert r.values[r.keys.index("read"), 0] == (T0 + 1) % 9 + 1000


def test_prune_levels_and_coverage(filled):
    now = T0 + N
    removed = filled.prune("nfs.latency[client]", 600, level="second", now=now)
    assert removed == N - 600
    info = filled.dataset("nfs.latency[client]")
    assert info.usage["second"][0] == 600 and info.horizon["second"] == now - 600
    old = filled.query("nfs.latency[client]", T0, T0 + 600)
    assert old.level == "minute"  # seconds no longer cover the start
    assert as_totals(old) == expected_heat(T0 - T0 % 60, T0 + 600)
    assert filled.query("nfs.latency[client]", now - 300, now).level == "second"
    # pruning the hour level prunes the finer ones too
    filled.prune("nfs.latency[client]", 0, level="hour", now=now + 7200)
    info = filled.dataset("nfs.latency[client]")
    assert all(info.usage[lv][0] == 0 for lv in ("second", "minute", "hour"))


def test_retention_is_enforced(tmp_path):
    a = Archive.open(tmp_path / "r.db", readonly=False)
    d = a.create("disk.ops", Retention(second=3600, minute=86400, hour=None), now=T0)
    feed(a, [data_line(d.id, t, "counter", {"": 1}) for t in range(T0, T0 + 7200, 10)])
    a.enforce_retention(now=T0 + 7200)
    rows = dict(a.conn.execute("SELECT step, min(t) FROM records GROUP BY step").fetchall())
    assert rows[1] >= T0 + 3600 and rows[60] == T0 - T0 % 60 and rows[3600] == T0 - T0 % 3600


def test_bad_lines_are_skipped_not_fatal(filled):
    ds = filled.dataset("nfs.latency[client]").id
    logged = []
    c = Collector(filled, command=[], log=logged.append)
    c.kinds = {ds: "heatmap"}
    c.handle(["not json", data_line(ds, T0 + N, "heatmap", {"k": {"99999": 1}}),
              data_line(ds, T0 + N, "counter", {"k": 1}), data_line(ds, T0 + N, "heatmap", {"k": {"12": -1}}),
              data_line(ds, T0 + N + 1, "heatmap", {"k": {"12": 5}})])
    assert len(logged) == 4
    r = filled.query("nfs.latency[client]", T0 + N, T0 + N + 2)
    assert r.keys == ["k"] and r.counts.sum() == 5 and r.present.tolist() == [False, True]


def test_lifecycle_state_and_change_counter(filled):
    before = filled.changes()
    assert filled.set_state(None, "suspended") == [d.name for d in filled.datasets()]
    assert all(d.state == "suspended" for d in filled.datasets())
    assert filled.set_state(["disk.ops[op]"], "active") == ["disk.ops[op]"]
    filled.destroy("arc.size")
    assert filled.changes() == before + 5
    assert [d.name for d in filled.datasets()] == ["nfs.latency[client]", "disk.ops[op]"]
    assert filled.conn.execute("SELECT count(*) FROM records WHERE dataset = 3").fetchone()[0] == 0
    with pytest.raises(ArchiveError, match="no dataset arc.size"):
        filled.query("arc.size", T0, T0 + 10)


def test_export_is_self_contained_and_imports(filled, tmp_path):
    out = tmp_path / "bug.strata"
    transfer.export(filled, ["nfs.latency[client]"], str(out))
    assert not (tmp_path / "bug.strata-wal").exists()
    with Archive.open(out) as b:
        assert [d.name for d in b.datasets()] == ["nfs.latency[client]"]
        assert as_totals(b.query("nfs.latency[client]", T0, T0 + N)) == expected_heat(T0, T0 + N)
    with pytest.raises(ArchiveError, match="exists"):
        transfer.export(filled, ["nfs.latency[client]"], str(out))
    other = Archive.open(tmp_path / "other.db", readonly=False)
    other.create("disk.ops", now=T0)
    assert transfer.import_from(other, str(out)) == ["nfs.latency[client]"]
    got = other.dataset("nfs.latency[client]")
    assert got.state == "suspended" and got.usage == filled.dataset("nfs.latency[client]").usage
    assert as_totals(other.query("nfs.latency[client]", T0, T0 + N, 60)) == expected_heat(T0 - T0 % 60, T0 + N)
    with pytest.raises(ArchiveError, match="already has"):
        transfer.import_from(other, str(out))
    assert sqlite3.connect(out).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_reader_sees_committed_data_while_writer_is_open(filled, tmp_path):
    reader = Archive.open(filled.path)
    ds = filled.dataset("disk.ops[op]").id
    filled.conn.execute("BEGIN IMMEDIATE")  # a writer holding the lock does not block readers (WAL)
    try:
        assert reader.query("disk.ops[op]", T0, T0 + 10).present.all()
    finally:
        filled.conn.execute("ROLLBACK")
    feed(filled, [data_line(ds, T0 + N + 5, "counter", {"read": 4})])
    assert reader.query("disk.ops[op]", T0 + N + 5, T0 + N + 6).values.sum() == 4
    reader.close()


def test_a_long_reader_blocks_no_second_and_the_wal_is_cut_back(tmp_path):
    """A reader holding one snapshot (a long heat map) while the collector writes second
    after second: every second commits at once and the reader keeps its snapshot; the WAL
    grows past its limit meanwhile, and is cut back to it once the reader lets go."""
    a = Archive.open(tmp_path / "w.db", readonly=False)
    heat = a.create("nfs.latency[client]", now=T0)
    c = Collector(a, command=[], log=lambda m: None)
    c.kinds = {heat.id: "heatmap"}
    reader = Archive.open(a.path)
    reader.conn.execute("BEGIN")
    seen = reader.query("nfs.latency[client]", T0, T0 + 4000).counts.sum()
    wal = a.path + "-wal"
    t = T0
    while os.path.getsize(wal) <= 1.5 * schema.WAL_LIMIT:   # one transaction a second, as collected
        c.handle([data_line(heat.id, t, "heatmap", heat_second(t, 40))])
        t += 1
        assert t < T0 + 4000, "the WAL did not grow past its limit"
    assert a.conn.execute("SELECT count(*) FROM records WHERE step = 1").fetchone()[0] == t - T0
    assert reader.query("nfs.latency[client]", T0, T0 + 4000).counts.sum() == seen == 0
    reader.conn.execute("COMMIT")
    reader.close()
    for _ in range(3):   # the next commits checkpoint the whole WAL, then start it over
        c.handle([data_line(heat.id, t, "heatmap", heat_second(t, 40))])
        t += 1
    assert os.path.getsize(wal) <= schema.WAL_LIMIT
    r = a.query("nfs.latency[client]", T0, t)
    assert r.present.all() and r.counts.sum() == sum(sum(sum(b.values()) for b in heat_second(s, 40).values())
                                                     for s in range(T0, t))
    a.close()


def test_a_gap_in_the_seconds_is_one_record_spread_evenly_over_it(tmp_path):
    """The daemon stalled: the record after a gap holds the gap's events. It is stored once,
    marked as spanning the gap; second-level queries spread it evenly (exact totals over any
    window holding the gap), rollups count it once, heat maps name the outage."""
    a = Archive.open(tmp_path / "g.db", readonly=False)
    ops, lat = a.create("disk.ops[op]", now=T0), a.create("disk.latency[op]", now=T0)
    c = Collector(a, command=[], log=lambda m: None)
    c.kinds = {ops.id: "counter", lat.id: "heatmap"}
    for t in [T0, T0 + 1, T0 + 12, T0 + 13]:   # seconds T0+2 .. T0+11 not reported: a stall
        n = 103 if t == T0 + 12 else 1
        c.handle([data_line(ops.id, t, "counter", {"write": n}),
                  data_line(lat.id, t, "heatmap", {"write": {"150": n, "160": 1}})])
    assert a.conn.execute("SELECT dataset, t, seconds, cause FROM spans").fetchall() == \
        [(ops.id, T0 + 2, 11, "stall"), (lat.id, T0 + 2, 11, "stall")]
    r = a.query("disk.ops[op]", T0, T0 + 20)
    assert r.values[0].tolist()[:15] == [1, 1] + [10] * 4 + [9] * 7 + [1, 0]   # 103 over 11 seconds
    assert r.present.tolist() == [True] * 14 + [False] * 6
    assert r.spans == [(T0 + 2, T0 + 13, "stall")]
    assert a.query("disk.ops[op]", T0 + 5, T0 + 7).values.sum() == 19      # a window inside: its share
    assert a.query("disk.ops[op]", T0, T0 + 20, resolution=60).values.sum() == 106
    h = a.query("disk.latency[op]", T0 - 5, T0 + 30)
    assert h.counts.sum() == 106 + 4 and h.counts[0, 5 + 2:5 + 13].sum() == 103 + 1
    a.close()
    env = {"NO_COLOR": "1", "COLUMNS": "200"}
    grid = json.loads(strata("heatmap", "disk.latency[op]", "--archive", a.path, "--since", str(T0 - 5),
                             "--until", str(T0 + 30), "--json", env=env).stdout)
    assert grid["spans"] == [{"start": T0 + 2, "end": T0 + 13, "cause": "stall"}] and grid["events"] == 110
    text = strata("heatmap", "disk.latency[op]", "--archive", a.path, "--since", str(T0 - 5),
                  "--until", str(T0 + 30), env=env).stdout
    assert "outage" in text and "(11s, the collector stalled)" in text, text


def test_wall_clock_steps_are_placed_by_how_long_the_daemon_measured_each_interval(tmp_path):
    """The daemon's interval records (collectors/FORMAT.md) say how long each interval lasted
    on CLOCK_MONOTONIC and how far the wall clock stepped. After a step back of 30 s, the next
    record (31 s of events under the next label) spans the 31 s it lasted, cause clock; after
    a step forward of an hour, the record holds its one second and the skipped hour holds
    nothing (not collected). Each step is said once."""
    a = Archive.open(tmp_path / "c.db", readonly=False)
    ops = a.create("disk.ops[op]", now=T0)
    said = []
    c = Collector(a, command=[], log=said.append)
    c.kinds = {ops.id: "counter"}

    def tick(t, n, mono=1000, step=0):
        return [json.dumps({"v": 1, "type": "interval", "t": t, "mono_ms": mono, "step_ms": step}),
                data_line(ops.id, t, "counter", {"write": n})]
    c.handle(tick(T0, 1) + tick(T0 + 1, 62, mono=31004, step=-30002) + tick(T0 + 2, 5))
    c.handle(tick(T0 + 3603, 7, mono=998, step=3600001) + tick(T0 + 3604, 3))
    assert a.conn.execute("SELECT dataset, t, seconds, cause FROM spans").fetchall() == [(ops.id, T0 + 1, 31, "clock")]
    assert [t for (t,) in a.conn.execute("SELECT t FROM records WHERE step = 1 ORDER BY t")] == \
        [T0, T0 + 1, T0 + 2, T0 + 3603, T0 + 3604]
    r = a.query("disk.ops[op]", T0, T0 + 3605)
    assert r.values.sum() == 1 + 62 + 5 + 7 + 3
    assert r.values[0, :4].tolist() == [1, 2, 2 + 5, 2]          # 62 spread over the 31 s it lasted
    assert r.present[:32].all() and not r.present[32:3603].any() and r.present[3603:].all()
    steps = [m for m in said if "wall clock stepped" in m]
    assert len(steps) == 2 and "stepped back 30.0 s" in steps[0] and "spans the 31 s" in steps[0], said
    assert "stepped forward 3600.0 s" in steps[1] and "hold no record" in steps[1], said
    a.close()


def test_an_archive_without_spans_reads_and_gets_them_when_written(filled):
    filled.conn.execute("DROP TABLE spans")
    filled.close()
    with Archive.open(filled.path) as old:
        assert old.query("disk.ops[op]", T0, T0 + 10).spans == []
    with Archive.open(filled.path, readonly=False) as again:
        ds = again.dataset("disk.ops[op]").id
        feed(again, [data_line(ds, T0 + N, "counter", {"read": 1}), data_line(ds, T0 + N + 3, "counter", {"read": 8})])
        assert again.query("disk.ops[op]", T0 + N, T0 + N + 4).values[0].tolist() == [1, 3, 3, 2]


def test_spans_travel_with_export_and_import(tmp_path):
    a = Archive.open(tmp_path / "s.db", readonly=False)
    ops = a.create("disk.ops[op]", now=T0)
    feed(a, [data_line(ops.id, T0, "counter", {"write": 1}), data_line(ops.id, T0 + 5, "counter", {"write": 50})])
    transfer.export(a, ["disk.ops[op]"], str(tmp_path / "x.strata"))
    other = Archive.open(tmp_path / "o.db", readonly=False)
    other.create("nfs.ops[op]", now=T0)
    transfer.import_from(other, str(tmp_path / "x.strata"))
    for path in (tmp_path / "x.strata", tmp_path / "o.db"):
        with Archive.open(path) as b:
            r = b.query("disk.ops[op]", T0, T0 + 6)
            assert r.spans == [(T0 + 1, T0 + 6, "stall")] and r.values[0].tolist() == [1, 10, 10, 10, 10, 10]
    a.close()
    other.close()
