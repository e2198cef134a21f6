"""Dataset lifecycle commands beside a collector, with real SQLite: an id is never reused,
and a write for a dataset destroyed, suspended or pruned meanwhile is dropped, counted and
said, never stored. The collector's own line handler is fed as the daemon would feed it,
with the other command run (on its own connection, as the CLI does) between the daemon's
second and the collector's write of it: the destroy-then-create race, made deterministic."""
import os
import sqlite3
import sys
import threading

from datasets_util import data_line, heat_second
from strata.collect import status
from strata.datasets import schema, transfer, verify
from strata.datasets.archive import Archive
from strata.collect.collector import Collector

T = 1_700_000_000


def collecting(path, log):
    """A collector over the archive at path that has added every active dataset (no daemon)."""
    c = Collector(Archive.open(path, readonly=False), command=[], log=log.append)
    for d in c.archive.datasets():
        if d.state == "active":
            c.kinds[d.id], c.infos[d.id] = d.kind, d
    return c


def other(path):
    """Another command's connection to the archive (strata datasets ...)."""
    return Archive.open(path, readonly=False)


def records_of(path, ds):
    with Archive.open(path) as a:
        return a.conn.execute("SELECT count(*) FROM records WHERE dataset = ?", (ds,)).fetchone()[0]


def test_destroy_then_create_between_a_second_and_its_write(tmp_path):
    path = str(tmp_path / "a.db")
    with other(path) as a:
        a.create("nfs.ops[op]", now=T - 10)
        old = a.create("disk.latency[op]", now=T - 10)     # the newest id: the one SQLite would reuse
    said = []
    c = collecting(path, said)
    c.handle([data_line(old.id, T, "heatmap", heat_second(T))])
    with other(path) as a:
        a.destroy("disk.latency[op]")
        new = a.create("disk.ops[op]", now=T)
    assert new.id != old.id                       # ids are never reused
    c.handle([data_line(old.id, T + 1, "heatmap", heat_second(T + 1))])   # written after the destroy
    assert records_of(path, old.id) == 0          # dropped, not stored as an orphan
    assert records_of(path, new.id) == 0
    assert said == ["destroyed disk.latency[op]: no longer collected"]
    assert c.dropped == {"disk.latency[op]": 1}
    assert verify.check(path).problems == []
    # the collector goes on with the new dataset (it learnt of it in the same transaction)
    assert new.id in c.kinds and old.id not in c.kinds


def test_suspended_meanwhile_stores_nothing(tmp_path):
    path = str(tmp_path / "a.db")
    with other(path) as a:
        ds = a.create("disk.ops[op]", now=T - 10)
    said = []
    c = collecting(path, said)
    line = lambda t, key=str(ds.id), partial=False: data_line(key, t, "counter", {"read": 5}, partial)
    c.handle([line(T)])
    with other(path) as a:   # suspended and resumed before the collector looked: the seconds up
        a.set_state(["disk.ops[op]"], "suspended", now=T + 1)   # to the resume held suspended time
        a.set_state(["disk.ops[op]"], "active", now=T + 3)
    c.handle([line(t) for t in (T + 1, T + 2, T + 3, T + 4)])
    with other(path) as a:
        a.set_state(["disk.ops[op]"], "suspended", now=T + 5)
    c.handle([line(T + 5)])                  # seen suspended: dropped, and removed from the daemon
    assert ds.id not in c.kinds
    with other(path) as a:
        a.set_state(["disk.ops[op]"], "active", now=T + 7)
    c.sync()                                 # the collector's poll: added again under a new daemon id
    c.handle([line(T + 6), line(T + 7, f"{ds.id}.1", True), line(T + 8, f"{ds.id}.1")])
    # T + 6: the daemon's line from before the remove; T + 7: the part after the add (partial), not stored
    with Archive.open(path) as a:
        got = dict(a.conn.execute("SELECT t, data FROM records WHERE dataset = ? AND step = 1", (ds.id,)))
    assert sorted(got) == [T, T + 4, T + 8]
    assert c.dropped == {"disk.ops[op]": 5}
    assert [m.split(":")[0] for m in said] == ["resumed disk.ops[op]", "suspended disk.ops[op]",
                                               "resumed disk.ops[op]"], said
    assert verify.check(path).problems == []


def test_prune_meanwhile_is_not_undone(tmp_path):
    path = str(tmp_path / "a.db")
    with other(path) as a:
        ds = a.create("disk.ops[op]", now=T - 100)
    c = collecting(path, [])
    c.handle([data_line(ds.id, t, "counter", {"read": 1}) for t in range(T - 90, T)])
    with other(path) as a:
        a.prune("disk.ops[op]", 0, level="hour", now=T)   # everything before T, every level
    c.handle([data_line(ds.id, T - 1, "counter", {"read": 1})])   # a late second before the cut
    with Archive.open(path) as a:
        left = a.conn.execute("SELECT step, t FROM records WHERE dataset = ?", (ds.id,)).fetchall()
    assert all(t + step > T for step, t in left), left
    assert verify.check(path).problems == []


def test_import_and_export_beside_a_collector(tmp_path):
    path, out = str(tmp_path / "a.db"), str(tmp_path / "x.strata")
    with other(path) as a:
        ds = a.create("disk.ops[op]", now=T - 10)
    c = collecting(path, [])
    c.handle([data_line(ds.id, T, "counter", {"read": 1})])
    with other(path) as a:
        transfer.export(a, ["disk.ops[op]"], out)
        a.destroy("disk.ops[op]")
        transfer.import_from(a, out)
        back = a.dataset("disk.ops[op]")
    assert back.id != ds.id and back.state == "suspended"
    c.handle([data_line(ds.id, T + 1, "counter", {"read": 1})])
    with Archive.open(path) as a:
        assert a.query("disk.ops[op]", T - 5, T + 5).values.sum() == 1   # the imported second only
    assert verify.check(path).problems == []


def test_the_status_file_counts_what_was_dropped(tmp_path):
    path = str(tmp_path / "a.db")
    with other(path) as a:
        ds = a.create("disk.ops[op]", now=T - 10)
    c = collecting(path, [])
    with other(path) as a:
        a.destroy("disk.ops[op]")
    c.handle([data_line(ds.id, T, "counter", {"read": 1})])
    with open(status.status_path(path)) as f:
        assert '"dropped": {"disk.ops[op]": 1}' in f.read()
    c.status.remove()


def old_archive(path, tmp_path):
    """An archive as strata wrote it before ids were AUTOINCREMENT (the old datasets table),
    holding orphan records of a destroyed dataset (id 3) above every live id."""
    fresh = str(tmp_path / "fresh.db")
    with other(fresh) as a:
        a.create("disk.ops[op]", now=T - 10)
        a.create("nfs.ops[op]", now=T - 10)
    c = collecting(fresh, [])
    c.handle([data_line(1, T, "counter", {"read": 2}), data_line(2, T, "counter", {"read": 7})])
    c.archive.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    for stmt in schema._statements(schema.DDL.replace(" AUTOINCREMENT", "")):
        conn.execute(stmt)
    conn.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {schema.VERSION}")
    conn.execute("ATTACH DATABASE ? AS fresh", (fresh,))
    for table in ("datasets", "keys", "records", "spans"):
        conn.execute(f"INSERT INTO {table} SELECT * FROM fresh.{table}")
    conn.execute("INSERT INTO records VALUES (3, 1, ?, x'00')", (T,))   # an orphan of the old race
    conn.close()


def test_an_old_archive_is_migrated_keeping_every_record(tmp_path):
    path = str(tmp_path / "old.db")
    old_archive(path, tmp_path)
    conn = sqlite3.connect(path)
    before = conn.execute("SELECT dataset, step, t, data FROM records ORDER BY 1, 2, 3").fetchall()
    datasets = conn.execute("SELECT * FROM datasets ORDER BY id").fetchall()
    conn.close()
    with other(path) as a:     # a writer migrates
        assert schema.ids_never_reused(a.conn)
        new = a.create("disk.latency[op]", now=T)
    assert new.id == 4          # above the orphan's id too
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT dataset, step, t, data FROM records WHERE dataset != 4 ORDER BY 1, 2, 3"
                        ).fetchall() == before
    assert conn.execute("SELECT * FROM datasets WHERE id < 4 ORDER BY id").fetchall() == datasets
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with other(path) as a:      # the triggers came back with the table
        before = a.changes()
        a.destroy("disk.latency[op]")
        assert a.changes() == before + 1


def test_destroy_then_create_under_a_real_collector(tmp_path):
    """The race as a user meets it: `datasets destroy` then `datasets create` while `strata
    collect` writes a second of disk I/O on a loop device; five times."""
    from test_datasets_collect import daemon_pid, start_collect, wait_for
    from datasets_util import direct_writes, loop_device, strata
    from strata.lab.process import stop
    path = str(tmp_path / "r.db")
    with loop_device() as loop:
        dev = os.path.basename(loop)
        names = [f"disk.latency[device={dev}][op]", f"disk.ops[device={dev}][op]"]
        assert strata("datasets", "create", names[0], "--archive", path).returncode == 0
        proc = start_collect(path)
        try:
            daemon_pid(proc)
            ids = set()
            for i in range(5):
                old, new = names[i % 2], names[(i + 1) % 2]
                wait_for(lambda: records_of(path, Archive.open(path).dataset(old).id), what=f"{old} written")
                direct_writes(loop, 20)
                ids.add(Archive.open(path).dataset(old).id)
                assert strata("datasets", "destroy", old, "-y", "--archive", path).returncode == 0
                assert strata("datasets", "create", new, "--archive", path).returncode == 0
            ids.add(Archive.open(path).dataset(names[1]).id)
            wait_for(lambda: records_of(path, Archive.open(path).dataset(names[1]).id), what="the last written")
            assert status.read(path)["state"] == "writing"
        finally:
            stop(proc)
        assert proc.returncode == 0
    assert len(ids) == 6                              # never reused
    assert verify.check(path).problems == []          # no orphan record, no record of the wrong kind
    with Archive.open(path) as a:
        live = a.dataset(names[1]).id
        assert {r[0] for r in a.conn.execute("SELECT DISTINCT dataset FROM records")} == {live}


def test_suspend_and_resume_of_many_said_once_as_what_they_are(tmp_path):
    """`datasets suspend --all` on 21 datasets: one line, no word of records dropped, and
    `datasets list`'s collector line stays one short line."""
    from strata.cli.datasets_cmd import _collector_line
    path = str(tmp_path / "a.db")
    names = [f"nfs.ops[client=10.0.0.{i}]" for i in range(1, 22)]
    with other(path) as a:
        made = [a.create(n, now=T - 10) for n in names]
    said = []
    c = collecting(path, said)
    c.handle([data_line(d.id, T, "counter", {"read": 1}) for d in made])
    with other(path) as a:
        a.set_state(names, "suspended", now=T + 1)
    c.handle([data_line(d.id, T + 1, "counter", {"read": 1}) for d in made])   # in flight
    assert said == ["suspended 21 datasets: no longer collected, what is stored is kept "
                    "(`strata datasets resume` collects again)"]
    line = _collector_line({"pid": 1, "state": "writing", "dropped": c.dropped})
    assert len(c.dropped) == 21 and len(line) < 60 and "dropped" not in line, line
    with other(path) as a:
        a.set_state(names, "active", now=T + 3)
    c.sync()
    assert said[1:] == ["resumed 21 datasets: collected again from the next second"]
    c.status.remove()


DAEMON = r"""
import sys
for line in sys.stdin:
    if line.split()[0] == "remove":
        print(json.dumps({"type": "error", "id": line.split()[1], "message": "no dataset with this id"}))
        sys.stdout.write('{"type": "status", "errors": [], ')    # a line cut by the pipe
        sys.stdout.flush()
    if line.strip() == "quit":
        break
print('"waiting": []}', flush=True)
"""


def test_a_line_cut_at_stop_and_an_error_of_a_removed_dataset_are_not_said(tmp_path):
    """A daemon line whose end comes only after `quit` is read whole; the daemon's error
    about a dataset suspended meanwhile (moot) is not said."""
    path = str(tmp_path / "a.db")
    with other(path) as a:
        a.create("disk.ops[op]", now=T - 10)
    said = []
    c = Collector(Archive.open(path, readonly=False), command=[sys.executable, "-c", "import json" + DAEMON],
                  log=said.append, poll=0.2)
    def suspend():
        with other(path) as a:
            a.set_state(["disk.ops[op]"], "suspended")
    threading.Timer(0.6, suspend).start()
    threading.Timer(1.5, c.stop).start()
    assert c.run() == 0
    assert said == ["suspended disk.ops[op]: no longer collected, what is stored is kept "
                    "(`strata datasets resume` collects again)"], said
