"""The dataset commands through the real CLI (subprocess): lifecycle, JSON output, and one
clear line with a non-zero exit for foreign, truncated, corrupt or newer archives."""
import json
import os
import sqlite3
import stat
import tempfile

import pytest

from datasets_util import data_line, heat_second, one_line_error, strata, template_copy
from strata.datasets.archive import Archive
from strata.collect.collector import Collector

T0 = 1_700_000_000


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """An archive with a heat-map dataset holding 2000 seconds (many pages)."""
    path = tmp_path_factory.mktemp("template") / "a.db"
    with Archive.open(path, readonly=False) as a:
        d = a.create("nfs.latency[client]", now=T0)
        c = Collector(a, command=[], log=print)
        c.kinds = {d.id: "heatmap"}
        c.handle([data_line(d.id, t, "heatmap", heat_second(t, 8)) for t in range(T0, T0 + 2000)])
        a.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


archive = template_copy()


def test_lifecycle_commands(tmp_path):
    env = {"STRATA_ARCHIVE": str(tmp_path / "x.db")}
    assert strata("datasets", "create", "nfs.ops[op=read][client]", env=env).returncode == 0
    p = strata("datasets", "create", "disk.latency[device]", "--keep", "second=2d", env=env)
    assert p.returncode == 0 and "second=2d" in p.stdout
    listed = json.loads(strata("datasets", "list", "--json", env=env).stdout)
    assert [d["name"] for d in listed["datasets"]] == ["nfs.ops[op=read][client]", "disk.latency[device]"]
    assert listed["datasets"][1]["retention"]["second"] == 2 * 86400
    assert strata("datasets", "suspend", "--all", env=env).stdout.count("suspended") == 2
    one_line_error(strata("datasets", "resume", "--all", "disk.latency[device]", env=env), "not both")
    one_line_error(strata("datasets", "resume", "nfs.ops[client][op=read]", env=env), "must come last")
    assert strata("datasets", "resume", "nfs.ops[op=read][client]", env=env).stdout.startswith("resumed")
    table = strata("datasets", "list", env=env).stdout.splitlines()
    assert table[0].split() == ["NAME", "STATE", "SINCE", "ONDISK", "KEEPS", "RATE", "COST"]
    assert table[1].split()[:2] == ["nfs.ops[op=read][client]", "active"]
    assert table[1].split()[4] == "1w/90d/104w"          # bounded by default (SINCE is one ISO 8601 word)
    assert table[2].split()[:2] == ["disk.latency[device]", "suspended"]
    assert table[2].split()[4] == "2d/90d/104w"
    assert table[-2].startswith("archive file: ") and str(tmp_path / "x.db") in table[-2]
    assert strata("datasets", "destroy", "disk.latency[device]", "-y", env=env).returncode == 0
    assert "disk.latency" not in strata("datasets", "list", env=env).stdout
    one_line_error(strata("datasets", "destroy", "disk.latency[device]", "-y", env=env),
                   "no dataset disk.latency[device]")
    # a statistic no dataset here keeps: the command that collects it, not datasets of other statistics
    one_line_error(strata("datasets", "resume", "zil.latency", env=env),
                   "to collect it: strata datasets create 'zil.latency'")
    one_line_error(strata("datasets", "suspend", "nfs.ops[op=read][clinet]", env=env),
                   "did you mean nfs.ops[op=read][client]?")


def test_unknown_statistic_or_breakdown_lists_the_valid_ones(tmp_path):
    """... and makes no archive: a refused create, and a writer other than create and import
    on an archive that is not there, leave no file behind."""
    a = ["--archive", str(tmp_path / "y.db")]
    one_line_error(strata("datasets", "create", "nfs.opz[op]", *a), "did you mean nfs.ops")
    one_line_error(strata("datasets", "create", "disk.ops[client]", *a), "valid breakdowns: op, device")
    one_line_error(strata("datasets", "create", "disk.ops", "--keep", "second=all", "--keep", "minute=1d", *a),
                   "at least as long")
    one_line_error(strata("datasets", "destroy", "disk.ops", "-y", *a), "y.db: no such archive")
    one_line_error(strata("datasets", "suspend", "--all", *a), "y.db: no such archive")
    assert os.listdir(tmp_path) == []


def test_statistics_json_matches_the_collector_catalogue():
    out = json.loads(strata("statistics", "--json").stdout)
    stats = {s["statistic"]: s for s in out["statistics"]}
    assert stats["disk.latency"]["kind"] == "heatmap" and "device" in stats["disk.latency"]["breakdowns"]
    assert stats["nfs.ops"]["kind"] == "counter"
    assert stats["nfs.latency"]["openmetrics"] == "strata_nfs_latency_seconds"
    assert stats["nfs.ops"]["openmetrics"] == "strata_nfs_ops"


def test_archive_file_readable_elsewhere_and_importable(archive, tmp_path):
    out = tmp_path / "baseline.strata"
    assert strata("datasets", "archive", "nfs.latency[client]", "-o", str(out), "--archive", archive).returncode == 0
    listed = json.loads(strata("datasets", "list", "--json", "--archive", str(out)).stdout)
    assert listed["datasets"][0]["records"]["second"] == 2000
    other = str(tmp_path / "other.db")
    p = strata("datasets", "import", str(out), "--archive", other)
    assert p.returncode == 0 and "nfs.latency[client]" in p.stdout
    one_line_error(strata("datasets", "import", str(out), "--archive", other),
                   "other.db already has nfs.latency[client]: destroy it there first (`strata datasets destroy`), "
                   "or import into another archive with --archive")
    p = strata("datasets", "prune", "nfs.latency[client]", "--older-than", "1h30m", "--level", "second",
               "--archive", other)
    assert p.returncode == 0 and "pruned 2000 records older than 90m" in p.stdout


def test_archive_file_named_as_another_format_is_refused(archive, tmp_path):
    """An archive is SQLite: -o run.json (or --salvage saved.csv) is a usage error, nothing written."""
    out = tmp_path / "run.json"
    p = strata("datasets", "archive", "nfs.latency[client]", "-o", str(out), "--archive", archive)
    assert p.returncode == 2 and "an archive is an SQLite file, not .json" in p.stderr and not out.exists(), p.stderr
    out = tmp_path / "saved.csv"
    p = strata("datasets", "verify", archive, "--salvage", str(out))
    assert p.returncode == 2 and "not .csv" in p.stderr and not out.exists(), p.stderr


def test_foreign_sqlite_file(tmp_path):
    path = tmp_path / "foreign.db"
    sqlite3.connect(path).execute("CREATE TABLE t(x)").connection.commit()
    one_line_error(strata("datasets", "list", "--archive", str(path)), "not a strata archive")
    one_line_error(strata("datasets", "create", "disk.ops", "--archive", str(path)), "not a strata archive")


def test_not_sqlite_and_missing(tmp_path):
    path = tmp_path / "text.db"
    path.write_text("hello, I am not a database\n" * 10)
    one_line_error(strata("datasets", "list", "--archive", str(path)), "not an SQLite database")
    named = strata("datasets", "list", "--archive", str(tmp_path / "none.db"))
    one_line_error(named, "none.db: no such archive")
    assert "--archive" not in named.stderr     # the user named the path: no hint to name one
    default = strata("datasets", "list", env={"STRATA_ARCHIVE": str(tmp_path / "none.db")})
    one_line_error(default, "none.db: no archive here (create a dataset with `strata datasets create`, "
                            "or pass --archive)")


def test_truncated_archive(archive):
    size = os.path.getsize(archive)
    os.truncate(archive, size // 2)
    one_line_error(strata("datasets", "list", "--archive", archive), "truncated archive")
    os.truncate(archive, 50)
    one_line_error(strata("datasets", "list", "--archive", archive), "truncated archive")


def test_corrupt_archive(archive):
    with open(archive, "r+b") as f:
        f.seek(100)
        f.write(b"\xff" * 3000)  # the schema page's b-tree, past the file header
    one_line_error(strata("datasets", "list", "--archive", archive), "damaged archive")


def test_corrupt_record_in_query(archive):
    with Archive.open(archive, readonly=False) as a:
        a.conn.execute("UPDATE records SET data = x'05ff' WHERE step = 1 AND t = ?", (T0 + 10,))
    with Archive.open(archive) as a:
        with pytest.raises(Exception) as e:
            a.query("nfs.latency[client]", T0, T0 + 20)
    assert "damaged archive" in str(e.value)


def test_newer_format(archive):
    with sqlite3.connect(archive) as c:
        c.execute("PRAGMA user_version = 99")
    one_line_error(strata("datasets", "list", "--archive", archive), "newer than this strata")


def test_reading_needs_no_root(archive):
    """A user who cannot write the archive's folder reads it (read-only, WAL or not)."""
    folder = tempfile.mkdtemp(prefix="strata-ds-ro-")
    try:
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "a.db")
        with open(archive, "rb") as src, open(path, "wb") as dst:
            dst.write(src.read())
        os.chmod(path, 0o644)
        p = strata("datasets", "list", "--json", "--archive", path, user=65534)
        assert p.returncode == 0, p.stderr
        assert json.loads(p.stdout)["datasets"][0]["records"]["second"] == 2000
        with Archive.open(path, readonly=False) as w:  # a live writer: -wal and -shm exist, root-owned
            w.set_state(None, "suspended")
            assert os.path.exists(path + "-shm")
            p = strata("datasets", "list", "--json", "--archive", path, user=65534)
            assert p.returncode == 0, p.stderr
            assert json.loads(p.stdout)["datasets"][0]["state"] == "suspended"
        one_line_error(strata("datasets", "suspend", "--all", "--archive", path, user=65534), "")
        assert not stat.S_IWOTH & os.stat(folder).st_mode
    finally:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))
        os.rmdir(folder)
