"""Bad archive bytes from the field, through the real CLI on real SQLite files: a torn page,
a copy cut short, a file of a newer strata, and records that break strata's own rules.
Every command says one line; `strata datasets verify` names the damage and exits 1;
`--salvage OUT` keeps exactly the records that are still readable and whole."""
import json
import os
import re
import sqlite3

import pytest

from datasets_util import data_line, heat_second, one_line_error, strata, template_copy
from strata.datasets import codec, schema, verify as verify_
from strata.datasets.archive import Archive
from strata.collect.collector import Collector

T0 = 1_700_000_000
N = 2000
PAGE = 4096


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A real archive: a heat-map dataset of 2000 seconds (60 pages), with a stall span."""
    path = tmp_path_factory.mktemp("template") / "a.db"
    with Archive.open(path, readonly=False) as a:
        d = a.create("nfs.latency[client]", now=T0)
        # a transaction per second, each writing its rollups (flush_every=0): the page layout
        # (records rewritten in place) the torn page below was chosen in
        c = Collector(a, command=[], log=lambda m: None, flush_every=0)
        c.kinds = {d.id: "heatmap"}
        for t in range(T0, T0 + N):
            if t != T0 + 5:
                c.handle([data_line(d.id, t, "heatmap", heat_second(t, 8))])
        a.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


archive = template_copy()


def records(path) -> dict:
    """rowid -> (dataset, step, t, data) of every record of an intact archive."""
    with sqlite3.connect(path) as c:
        return {r[0]: r[1:] for r in c.execute("SELECT rowid, dataset, step, t, data FROM records")}


def varint(buf, pos):
    """SQLite's big-endian base-128 varint at pos: (value, next position)."""
    v = 0
    for i in range(9):
        b = buf[pos + i]
        if i == 8:
            return (v << 8) | b, pos + 9
        v = (v << 7) | (b & 0x7F)
        if b < 0x80:
            return v, pos + i + 1


def leaves(path) -> dict:
    """page number -> rowids of the records table's leaf pages (parsed from the file)."""
    with sqlite3.connect(path) as c:
        pages = [p for (p,) in c.execute("SELECT pageno FROM dbstat WHERE name = 'records' AND pagetype = 'leaf'")]
    out = {}
    with open(path, "rb") as f:
        for p in pages:
            f.seek((p - 1) * PAGE)
            page = f.read(PAGE)
            assert page[0] == 0x0D                      # a table b-tree leaf
            cells = int.from_bytes(page[3:5], "big")
            ids = []
            for i in range(cells):
                _, pos = varint(page, int.from_bytes(page[8 + 2 * i:10 + 2 * i], "big"))   # payload size
                ids.append(varint(page, pos)[0])
            out[p] = ids
    return out


def verify(*args):
    return strata("datasets", "verify", *map(str, args))


def salvaged(out) -> set:
    with sqlite3.connect(out) as c:
        return set(c.execute("SELECT dataset, step, t, data FROM records"))


def test_an_intact_archive_verifies_and_salvages_whole(archive, tmp_path):
    p = verify(archive)
    assert p.returncode == 0 and p.stdout.startswith(f"{archive}: ok (1 dataset(s): {N - 1} of {N - 1} seconds")
    p = verify(archive, "--salvage", tmp_path / "s.db")
    assert p.returncode == 0, p.stdout + p.stderr
    assert salvaged(tmp_path / "s.db") == set(records(archive).values())
    with sqlite3.connect(tmp_path / "s.db") as c:
        assert c.execute("SELECT t, seconds, cause FROM spans").fetchall() == [(T0 + 5, 2, "stall")]
    one_line_error(verify(archive, "--salvage", tmp_path / "s.db"), "exists")


def test_a_torn_page_is_named_and_every_other_record_salvaged(archive, tmp_path):
    before, pages = records(archive), leaves(archive)
    # whether a torn page's garbage reads as an error (and so as a gap) depends on the bytes that
    # land where its cells were: this page's tear does, in this archive's layout
    torn = sorted(pages)[len(pages) // 4 + 1]
    with open(archive, "r+b") as f:           # the page's second half never reached the disk
        f.seek((torn - 1) * PAGE + PAGE // 2)
        f.write(bytes(range(256)) * (PAGE // 512))
    p = verify(archive)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"sqlite: page {torn} (of records)" in p.stdout, p.stdout
    lost = pages[torn]
    gap = re.search(r"records: rows between rowid (\d+) and rowid (\d+) cannot be read", p.stdout)
    assert gap and min(lost) - 1 <= int(gap[1]) < int(gap[2]) <= max(lost) + 1, p.stdout
    one_line_error(strata("heatmap", "nfs.latency[client]", "--archive", archive, "--since", str(T0),
                          "--until", str(T0 + N), "--json"), "damaged archive")

    p = verify(archive, "--salvage", tmp_path / "s.db")
    assert p.returncode == 1 and "salvaged 1 dataset(s)" in p.stdout.splitlines()[-1], p.stdout
    kept = salvaged(tmp_path / "s.db")       # the torn page's cells in its intact half are kept too
    assert {v for k, v in before.items() if k not in lost} <= kept <= set(before.values())
    assert len(kept) < len(before)
    assert verify(tmp_path / "s.db").returncode == 0
    events = int(codec.decode("heatmap", [d for _, step, _, d in kept if step == 1]).count.sum())
    grid = json.loads(strata("heatmap", "nfs.latency[client]", "--archive", str(tmp_path / "s.db"), "--since",
                             str(T0), "--until", str(T0 + N), "--json").stdout)
    assert grid["events"] == events


def test_a_torn_records_root_reads_as_one_line_per_dataset_and_page(archive):
    """The records table's root page torn: SQLite's many findings on that page fold into one
    line, and the dataset's levels, none found whole, into one usage line; the Report keeps
    every finding."""
    with sqlite3.connect(archive) as c:
        [root] = c.execute("SELECT pageno FROM dbstat WHERE name = 'records' AND pagetype = 'internal'").fetchall()
    with open(archive, "r+b") as f:
        f.seek((root[0] - 1) * PAGE + PAGE // 2)
        f.write(bytes(range(256)) * (PAGE // 512))
    p = verify(archive)
    lines = p.stdout.splitlines()
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    [sqlite] = [line for line in lines if line.startswith(f"sqlite: On tree page {root[0]} ")]
    assert re.search(rf"\(and \d+ more on page {root[0]}\)$", sqlite), sqlite
    [usage] = [line for line in lines if line.startswith("usage: ")]
    assert re.fullmatch(r"usage: nfs\.latency\[client\]: record\(s\) found whole of those counted: "
                        rf"0 of {N - 1} second, 0 of \d+ minute, 0 of \d+ ten-minute, 0 of \d+ hour", usage), usage
    assert len(lines) <= 5, p.stdout
    full = verify_.check(archive).problems
    assert sum(line.startswith(f"sqlite: On tree page {root[0]} ") for line in full) > 1


def test_a_truncated_copy_salvages_the_records_of_its_whole_pages(archive, tmp_path):
    before, pages = records(archive), leaves(archive)
    size = os.path.getsize(archive)
    cut = (size // PAGE // 2) * PAGE
    os.truncate(archive, cut)
    for command in (["datasets", "list"], ["heatmap", "nfs.latency[client]", "--last", "1h"]):
        one_line_error(strata(*command, "--archive", archive), f"truncated archive ({cut} of {size} bytes)")
    p = verify(archive, "--salvage", tmp_path / "s.db")
    assert p.returncode == 1 and p.stdout.startswith(f"file: truncated archive ({cut} of {size} bytes)")
    assert "records: rows between rowid" in p.stdout and "and the end cannot be read" in p.stdout
    whole = {r for page, ids in pages.items() if page <= cut // PAGE for r in ids}
    assert 0 < len(whole) < len(before)
    assert salvaged(tmp_path / "s.db") == {before[r] for r in whole}


def test_a_file_of_a_newer_strata_is_one_line_everywhere(archive, tmp_path):
    with sqlite3.connect(archive) as c:
        c.execute(f"PRAGMA user_version = {schema.VERSION + 1}")
    p = verify(archive)
    assert p.returncode == 2 and p.stdout.strip() == \
        f"file: archive format {schema.VERSION + 1} is newer than this strata reads ({schema.VERSION}); " \
        "check it with a newer strata", p.stdout
    one_line_error(verify(archive, "--salvage", tmp_path / "s.db"), "newer than this strata")
    assert not (tmp_path / "s.db").exists()
    for command in (["datasets", "list"], ["heatmap", "nfs.latency[client]", "--last", "1h"]):
        one_line_error(strata(*command, "--archive", archive), "newer than this strata")


def test_records_that_break_strata_rules_are_named_and_left_behind(tmp_path):
    """An archive written without the unique index (as a buggy writer might) holding a second
    stored twice, two records that do not decode (one line), one naming a key the dataset lacks, and a
    span over no record."""
    path = tmp_path / "rules.db"
    conn = sqlite3.connect(path, isolation_level=None)
    for stmt in schema._statements(schema.DDL.replace(",\n  UNIQUE (dataset, step, t)", "")):
        conn.execute(stmt)
    conn.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {schema.VERSION}")
    conn.close()
    with Archive.open(path, readonly=False) as a:
        ds = a.create("disk.ops[op]", now=T0).id
        a.conn.execute("INSERT INTO keys VALUES (?, 0, 'read')", (ds,))
    good = [codec.encode("counter", codec.Cells(*(codec.np.array(v, t) for v, t in (
        ([0], "int64"), ([0], "int64"), ([0], "int64"), ([n], "uint64"), ([0.0], "float64")))), 1)[0]
        for n in (1, 2)]
    alien = codec.encode("counter", codec.Cells(*(codec.np.array(v, t) for v, t in (
        ([0], "int64"), ([7], "int64"), ([0], "int64"), ([1], "uint64"), ([0.0], "float64")))), 1)[0]
    with sqlite3.connect(path) as c:
        rows = [(T0, good[0]), (T0, good[1]), (T0 + 1, b"\x05\xff"), (T0 + 2, alien), (T0 + 3, good[0]),
                (T0 + 4, b"\x05\xff")]
        c.executemany("INSERT INTO records (dataset, step, t, data) VALUES (?, 1, ?, ?)",
                      [(ds, t, d) for t, d in rows])
        c.execute("INSERT INTO spans VALUES (?, ?, 5, 'stall')", (ds, T0 + 10))
    p = verify(path)
    assert p.returncode == 1
    when = "2023-11-14T22:13:2{}Z (170000000{})".format
    assert p.stdout.splitlines() == [
        f"records: disk.ops[op] second {when(1, 1)}: does not decode (varint stream ends inside a number) "
        "(and 1 more that do not decode)",
        f"records: disk.ops[op] second {when(2, 2)}: names a breakdown key the dataset does not have",
        f"records: disk.ops[op] second {when(0, 0)} is stored 2 times",
        "usage: disk.ops[op]: record(s) found whole of those counted: 3 of 6 second",
        f"spans: disk.ops[op] 2023-11-14T22:13:30Z ({T0 + 10}): marks no second-level record",
    ], p.stdout
    assert verify(path, "--salvage", tmp_path / "s.db").returncode == 1
    assert salvaged(tmp_path / "s.db") == {(ds, 1, T0, good[0]), (ds, 1, T0 + 3, good[0])}
    assert verify(tmp_path / "s.db").returncode == 0
