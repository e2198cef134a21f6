"""`strata datasets archive`, `import` and `verify --salvage` through the real CLI on real
SQLite archives: the worksheets `strata web` saves go with the datasets they show (a name
already taken keeps its worksheet, the incoming one is renamed, in one line), what comes
out verifies clean, and bad input (a missing, foreign, cut or damaged file, an archive into
itself) is one line and a non-zero exit that changes nothing stored."""
import json
import os
import shutil
import sqlite3

import pytest

from datasets_util import data_line, heat_second, one_line_error, strata, template_copy
from strata.datasets.archive import Archive
from strata.collect.collector import Collector
from strata.web import worksheets

T0 = 1_700_000_000
N = 300
SHEETS = {   # name -> views; the archive holds nfs.latency[client] and nfs.ops[op]
    "latency": [{"name": "nfs.latency[client]"}, {"name": "nfs.latency[client=10.0.0.1]"}],
    "summed": [{"name": "nfs.latency"}],                       # derived from nfs.latency[client]
    "compare": [{"name": "nfs.latency[client]", "compare": ["10.0.0.1", "10.0.0.2"], "drill": 1}],
    "both": [{"name": "nfs.latency[client]"}, {"name": "nfs.ops[op]"}],
    "gone": [{"name": "disk.ops[op]"}],                        # a dataset the archive does not hold
    "empty": [],
}


def state(views, last=600):
    return {"views": views, "last": last, "live": True, "axis": ""}


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    path = tmp_path_factory.mktemp("template") / "a.db"
    with Archive.open(path, readonly=False) as a:
        lat, ops = a.create("nfs.latency[client]", now=T0), a.create("nfs.ops[op]", now=T0)
        c = Collector(a, command=[], log=lambda m: None)
        c.kinds = {lat.id: "heatmap", ops.id: "counter"}
        c.handle([line for t in range(T0, T0 + N) for line in
                  (data_line(lat.id, t, "heatmap", heat_second(t, 4)),
                   data_line(ops.id, t, "counter", {"read": t % 7, "write": 2}))])
        a.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    for name, views in SHEETS.items():
        worksheets.save(str(path), name, state(views))
    return path


archive = template_copy()


def sheet_rows(path) -> dict:
    with sqlite3.connect(path) as c:
        return {n: (s, t) for n, s, t in c.execute("SELECT name, state, saved FROM worksheets")}


def snapshot(path) -> tuple:
    """Everything stored that a refused command must leave as it was."""
    with sqlite3.connect(path) as c:
        tables = [n for (n,) in c.execute("SELECT name FROM sqlite_schema WHERE type = 'table' "
                                          "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        return tuple(sorted(map(repr, c.execute(f"SELECT * FROM {t}").fetchall())) for t in tables)


def test_worksheets_travel_with_the_datasets_they_show(archive, tmp_path):
    out = tmp_path / "lat.strata"
    p = strata("datasets", "archive", "nfs.latency[client]", "-o", str(out), "--archive", archive)
    assert p.returncode == 0 and p.stdout == "", p.stderr     # stdout stays the data's, as the views'
    assert p.stderr.splitlines() == [
        "strata datasets archive: with worksheet(s) 'compare', 'latency', 'summed'",
        "strata datasets archive: left out worksheet(s) 'both', 'empty', 'gone': they show datasets not archived",
        f"wrote nfs.latency[client] to {out}"]
    source = sheet_rows(archive)
    assert sheet_rows(out) == {n: source[n] for n in ("compare", "latency", "summed")}
    assert strata("datasets", "verify", str(out)).returncode == 0

    # elsewhere: one worksheet of the same name and another state, one the same
    other = str(tmp_path / "other.db")
    worksheets.save(other, "latency", state([{"name": "disk.ops[op]"}]))
    mine = sheet_rows(other)["latency"]
    with sqlite3.connect(other) as c:
        c.execute("INSERT INTO worksheets VALUES ('summed', ?, ?)", source["summed"])
    p = strata("datasets", "import", str(out), "--archive", other)
    assert p.returncode == 0 and p.stdout.strip() == "imported nfs.latency[client] (suspended)", p.stderr
    assert p.stderr.splitlines() == [
        "strata datasets import: with worksheet(s) 'compare', 'latency', 'summed'",
        "strata datasets import: worksheet 'latency' is here already (another one, kept): "
        "the imported one is 'latency (2)'"]
    assert sheet_rows(other) == {"latency": mine, "latency (2)": source["latency"],
                                 "summed": source["summed"], "compare": source["compare"]}
    assert worksheets.load(other, "latency (2)") == state(SHEETS["latency"])
    p = strata("datasets", "verify", other)
    assert p.returncode == 0 and p.stdout.startswith(f"{other}: ok (1 dataset(s)"), p.stdout


def test_an_archive_of_every_dataset_carries_every_worksheet_that_shows_one(archive, tmp_path):
    with sqlite3.connect(archive) as c:   # a row `verify` names (not a worksheet's name) is not carried
        c.execute("INSERT INTO worksheets VALUES ('a/b', ?, 1)", (json.dumps(state(SHEETS["latency"])),))
    out = tmp_path / "all.strata"
    p = strata("datasets", "archive", "nfs.latency[client]", "nfs.ops[op]", "-o", str(out), "--archive", archive)
    assert p.returncode == 0 and "left out worksheet(s) 'a/b', 'empty', 'gone'" in p.stderr, p.stderr
    assert sorted(sheet_rows(out)) == ["both", "compare", "latency", "summed"]
    assert strata("datasets", "verify", str(out)).returncode == 0
    p = strata("datasets", "import", str(out), "--archive", str(tmp_path / "new.db"))
    assert p.returncode == 0 and "'both'" in p.stderr
    assert sheet_rows(tmp_path / "new.db") == sheet_rows(out)


def test_salvage_keeps_every_worksheet_that_passes(archive, tmp_path):
    with sqlite3.connect(archive) as c:
        c.execute("INSERT INTO worksheets VALUES ('torn', '{\"views\": [', 1)")
    out = tmp_path / "saved.db"
    p = strata("datasets", "verify", archive, "--salvage", str(out))
    assert p.returncode == 1 and "worksheets: 'torn': a state that is not JSON" in p.stdout, p.stdout
    rows = sheet_rows(archive)
    del rows["torn"]
    assert sheet_rows(out) == rows          # 'gone' and 'empty' too: the same archive, repaired
    p = strata("datasets", "verify", str(out))
    assert p.returncode == 0, p.stdout


def test_bad_input_to_archive_and_import_is_one_line_and_keeps_everything(archive, tmp_path):
    before = snapshot(archive)
    one_line_error(strata("datasets", "import", str(tmp_path / "none.strata"), "--archive", archive),
                   "none.strata: no such file")
    one_line_error(strata("datasets", "import", archive, "--archive", archive), "is the archive it would be "
                   "imported into")
    text = tmp_path / "notes.txt"
    text.write_text("not an archive\n" * 100)
    one_line_error(strata("datasets", "import", str(text), "--archive", archive), "not an SQLite database")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)     # read, it would wait for a writer
    one_line_error(strata("datasets", "import", str(fifo), "--archive", archive, timeout=20),
                   "pipe: not an archive file (a named pipe)")
    p = strata("datasets", "verify", str(fifo), timeout=20)
    assert p.returncode == 1 and p.stdout == "file: not an archive file (a named pipe)\n", p.stdout + p.stderr
    one_line_error(strata("datasets", "archive", "nfs.ops[op]", "-o", archive, "--force", "--archive", archive),
                   "is the archive being read")
    one_line_error(strata("datasets", "archive", "nfs.ops[op]", "-o", str(tmp_path / "no" / "x.strata"),
                          "--archive", archive), "no such folder")
    one_line_error(strata("datasets", "archive", "nfs.opz[op]", "-o", str(tmp_path / "x.strata"),
                          "--archive", archive), "no dataset nfs.opz[op]")
    assert snapshot(archive) == before

    out = tmp_path / "ops.strata"
    assert strata("datasets", "archive", "nfs.ops[op]", "-o", str(out), "--archive", archive).returncode == 0
    other = str(tmp_path / "other.db")
    assert strata("datasets", "create", "disk.ops[op]", "--archive", other).returncode == 0
    kept = snapshot(other)
    cut = tmp_path / "cut.strata"
    cut.write_bytes(out.read_bytes()[:os.path.getsize(out) // 2])
    one_line_error(strata("datasets", "import", str(cut), "--archive", other), "truncated archive")
    with sqlite3.connect(out) as c:   # a record that does not decode: SQLite reads it, verify does not
        c.execute("UPDATE records SET data = x'05ff' WHERE step = 1 AND t = ?", (T0 + 10,))
    one_line_error(strata("datasets", "import", str(out), "--archive", other), "not imported, it is damaged")
    assert snapshot(other) == kept
    assert json.loads(strata("datasets", "list", "--json", "--archive", other).stdout)["datasets"][0]["name"] == \
        "disk.ops[op]"


def test_a_refused_import_or_archive_makes_no_file(archive, tmp_path):
    """Importing a file that is missing, no archive, or damaged into an archive that does not
    exist yet (in a folder that does not either) is refused before that archive is made;
    an archive of a missing archive writes no output."""
    new = tmp_path / "folder" / "new.db"
    text = tmp_path / "notes.txt"
    text.write_text("not an archive\n" * 100)
    one_line_error(strata("datasets", "import", str(text), "--archive", str(new)), "not an SQLite database")
    one_line_error(strata("datasets", "import", str(tmp_path / "none.strata"), "--archive", str(new)),
                   "none.strata: no such file")
    damaged = tmp_path / "damaged.strata"
    damaged.write_bytes(open(archive, "rb").read())
    with sqlite3.connect(damaged) as c:   # a record that does not decode: SQLite reads it, verify does not
        c.execute("UPDATE records SET data = x'05ff' WHERE step = 1 AND t = ?", (T0 + 10,))
    one_line_error(strata("datasets", "import", str(damaged), "--archive", str(new)), "not imported, it is damaged")
    one_line_error(strata("datasets", "archive", "nfs.ops[op]", "-o", str(tmp_path / "out.strata"),
                          "--archive", str(new)), "new.db: no such archive")
    assert not new.parent.exists() and not (tmp_path / "out.strata").exists()


def test_a_dataset_created_or_destroyed_meanwhile_is_one_line_and_nothing_half_done(archive, tmp_path,
                                                                                   monkeypatch):
    """Beside other commands: a name created here while import checks its file, a dataset
    destroyed while archive starts writing; each is refused in one ArchiveError."""
    from strata.datasets import transfer, verify
    from strata.datasets.errors import ArchiveError

    out = tmp_path / "ops.strata"
    assert strata("datasets", "archive", "nfs.ops[op]", "-o", str(out), "--archive", archive).returncode == 0
    other = str(tmp_path / "other.db")
    checked = verify.check

    def check_while_created(path):
        with Archive.open(other, readonly=False) as meanwhile:
            meanwhile.create("nfs.ops[op]")
        return checked(path)

    monkeypatch.setattr(verify, "check", check_while_created)
    with Archive.open(other, readonly=False) as a, pytest.raises(ArchiveError, match=r"already has nfs.ops\[op\]"):
        transfer.import_from(a, str(out), say=print)
    with sqlite3.connect(other) as c:
        assert c.execute("SELECT count(*) FROM records").fetchone() == (0,)

    with Archive.open(archive, readonly=False) as a:
        listing, calls = a.datasets, []

        def listing_while_destroyed():   # the third listing: after both names were looked up
            calls.append(1)
            if len(calls) == 3:
                with Archive.open(archive, readonly=False) as meanwhile:
                    meanwhile.destroy("nfs.ops[op]")
            return listing()

        monkeypatch.setattr(a, "datasets", listing_while_destroyed)
        with pytest.raises(ArchiveError, match="1 of the datasets named were destroyed meanwhile"):
            transfer.export(a, ["nfs.ops[op]", "nfs.latency[client]"], str(out), overwrite=True, say=print)
    with sqlite3.connect(out) as c:   # the earlier file is left as it was: nothing replaced it
        assert c.execute("SELECT name FROM datasets").fetchall() == [("nfs.ops[op]",)]
    p = strata("datasets", "archive", "nfs.latency[client]", "nfs.latency[client]", "-o", str(tmp_path / "x"),
               "--archive", archive)
    assert p.stderr.splitlines()[-1] == f"wrote nfs.latency[client] to {tmp_path / 'x'}", p.stderr


def test_archive_never_replaces_the_archive_a_collector_writes(archive, tmp_path):
    """`--force` replaces a file, never a running collector's archive (its data would be gone
    under it): one line, and that archive keeps everything."""
    import subprocess
    import time

    from conftest import built
    from datasets_util import STRATA
    from strata.collect import status

    built("bin/strata-collect")
    live = str(tmp_path / "live.db")
    assert strata("datasets", "create", "disk.ops[op]", "--suspended", "--archive", live).returncode == 0
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    proc = subprocess.Popen([STRATA, "collect", "--archive", live], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 20
        while not status.read(live) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert status.read(live), "the collector wrote no status"
        before = os.stat(live).st_ino
        one_line_error(strata("datasets", "archive", "nfs.ops[op]", "-o", live, "--force", "--archive", archive),
                       f"is the archive a running collector (pid {proc.pid}) writes; not replaced")
        with sqlite3.connect(live) as c:    # the same file, its dataset there
            assert os.stat(live).st_ino == before
            assert c.execute("SELECT name FROM datasets").fetchall() == [("disk.ops[op]",)]
    finally:
        proc.terminate()
        proc.communicate(timeout=20)
    assert proc.returncode == 0


def test_archive_and_import_read_an_archive_on_a_read_only_mount(archive, tmp_path):
    """An archive whose folder cannot be written (a read-only mount; the system archive for
    a user) is read as `list` reads it: its WAL's shared memory cannot be made there."""
    import subprocess

    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(ro)], check=True)
    try:
        shutil.copy(archive, ro / "a.db")
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        out = tmp_path / "out.strata"
        p = strata("datasets", "archive", "nfs.ops[op]", "-o", str(out), "--archive", str(ro / "a.db"))
        assert p.returncode == 0, p.stderr
        p = strata("datasets", "import", str(ro / "a.db"), "--archive", str(tmp_path / "b.db"))
        assert p.returncode == 0 and p.stdout.startswith("imported nfs.latency[client], nfs.ops[op]"), p.stderr
    finally:
        subprocess.run(["umount", str(ro)], check=False)
    for path in (out, tmp_path / "b.db"):
        p = strata("datasets", "verify", str(path))
        assert p.returncode == 0, p.stdout
