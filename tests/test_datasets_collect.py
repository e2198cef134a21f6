"""`strata collect` with the real strata-collect daemon and real BPF on a loop device:
dataset lifecycle, kill -9 safety and the collector lock (faults: test_datasets_faults.py)."""
import json
import os
import signal
import sqlite3
import subprocess
import time

import numpy as np
import pytest

from conftest import built, patience
from datasets_util import STRATA, direct_writes, loop_device, rollups_against_seconds, second_records, strata
from strata.lab.process import stop
from strata.collect import status
from strata.datasets.archive import Archive


def start_collect(archive):
    built("bin/strata-collect")
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    return subprocess.Popen([STRATA, "collect", "--archive", archive], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def daemon_pid(proc, timeout=10):
    """The strata-collect child of a `strata collect` process: the daemon, not the short
    `strata-collect --check-privileges` run before it."""
    deadline = time.time() + patience(timeout)
    while time.time() < deadline:
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            kids = f.read().split()
        for kid in kids:
            try:   # the program itself (not a child still between fork and exec), run as the daemon;
                # an exiting process's command line reads empty, so the check run is not taken for it
                exe = os.readlink(f"/proc/{kid}/exe")
                with open(f"/proc/{kid}/cmdline", "rb") as f:
                    cmdline = f.read()
                if exe.endswith("/strata-collect") and cmdline and b"--check-privileges" not in cmdline:
                    return int(kid)
            except FileNotFoundError:
                pass
        time.sleep(0.1)
    raise AssertionError("strata collect did not start strata-collect")


def bpf_links(pid):
    """BPF links the process holds (each attached probe is one); a descriptor closed while
    they are listed is not one."""
    fds, n = f"/proc/{pid}/fd", 0
    for fd in os.listdir(fds):
        try:
            n += os.readlink(os.path.join(fds, fd)) == "anon_inode:bpf_link"
        except FileNotFoundError:
            pass
    return n


def seconds(archive, name, since):
    """{t: record} of a dataset's second-level records from `since` on."""
    with Archive.open(archive) as a:
        ds = a.dataset(name).id
        return dict(a.conn.execute("SELECT t, data FROM records WHERE dataset = ? AND step = 1 AND t >= ?",
                                   (ds, since)).fetchall())


def wait_for(predicate, timeout=10, what="condition"):
    deadline = time.time() + patience(timeout)
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")




def archived_ops(archive, ops, since):
    """{op: count} of a disk.ops[...][op] dataset in the archive from `since` on."""
    with Archive.open(archive) as a:
        r = a.query(ops, since - 1, int(time.time()) + 1)
        return {key: int(r.values[i].sum()) for i, key in enumerate(r.keys)}


def settled_writes(archive, ops, loop, since, n):
    """n direct writes to loop; then (writes made, archived {op: count}) once the archived
    writes and missed completions add up to every write made. A missed completion shows
    only when its request is issued again: while short, writes sweep twice through the
    device's request tags (at most 5 sweeps, counted in the writes made)."""
    sweep = 2 * int(open(f"/sys/block/{os.path.basename(loop)}/queue/nr_requests").read())
    direct_writes(loop, n)
    made = n
    for tries in range(6):
        try:
            wait_for(lambda: sum(archived_ops(archive, ops, since).get(k, 0) for k in ("write", "missed")) == made,
                     timeout=10 if tries == 5 else 4, what=f"{made} writes in the archive")
            return made, archived_ops(archive, ops, since)
        except AssertionError:
            if tries == 5:
                raise
            direct_writes(loop, sweep)
            made += sweep


@pytest.fixture()
def loop():
    with loop_device() as dev:
        yield dev


@pytest.mark.view("archive")
def test_lifecycle_with_real_collector(tmp_path, loop):
    archive = str(tmp_path / "a.db")
    dev = os.path.basename(loop)
    lat, ops = f"disk.latency[device={dev}][op]", f"disk.ops[device={dev}][op]"
    for name in (lat, ops):
        assert strata("datasets", "create", name, "--archive", archive).returncode == 0
    proc = start_collect(archive)
    try:
        pid = daemon_pid(proc)
        t_start = int(time.time())
        wait_for(lambda: seconds(archive, ops, t_start), what="first records")
        made, counted = settled_writes(archive, ops, loop, t_start, 300)
        assert counted["write"] + counted.get("missed", 0) == made
        with Archive.open(archive) as a:
            h = a.query(lat, t_start - 1, int(time.time()) + 1)
            assert h.counts[h.keys.index("write")].sum() == counted["write"]
        links_both = bpf_links(pid)
        assert links_both > 0

        # suspend one: its records stop within 2 s; the other goes on
        assert strata("datasets", "suspend", ops, "--archive", archive).returncode == 0
        time.sleep(2.5)
        cut = int(time.time())
        time.sleep(2)
        assert not seconds(archive, ops, cut) and seconds(archive, lat, cut)
        # suspend both: every probe detaches
        assert strata("datasets", "suspend", "--all", "--archive", archive).returncode == 0
        wait_for(lambda: bpf_links(pid) == 0, what="probes to detach")
        # resume: data again
        asked = int(time.time()) + 1
        assert strata("datasets", "resume", "--all", "--archive", archive).returncode == 0
        wait_for(lambda: bpf_links(pid) == links_both, what="probes to attach again")
        # both datasets enabled again (the probes are attached with the first): each has a record
        wait_for(lambda: seconds(archive, ops, asked) and seconds(archive, lat, asked), what="records after resume")
        t_resume = int(time.time())
        direct_writes(loop, 50)
        wait_for(lambda: Archive.open(archive).query(ops, t_resume - 1, int(time.time()) + 1).values.sum() >= 50,
                 what="data after resume")
        listed = json.loads(strata("datasets", "list", "--json", "--archive", archive).stdout)
        assert all(d["state"] == "active" and d["ondisk_bytes"] > 0 for d in listed["datasets"])
        # a dataset the daemon refuses (fs.* without --fs-*): said, and kept in the status file
        assert strata("datasets", "create", "fs.ops[op]", "--archive", archive).returncode == 0
        refused = lambda: [e for e in (status.read(archive) or {}).get("errors", []) if e.startswith("fs.ops[op]: ")]
        wait_for(refused, what="the refusal in the status file")
        s = status.read(archive)
        assert s["state"] == "writing" and s["datasets"] == 2, s
    finally:
        stop(proc)
    assert proc.returncode == 0, proc.stderr.read()

    # prune, archive, read the file elsewhere, destroy
    p = strata("datasets", "prune", lat, "--older-than", "1h", "--archive", archive)
    assert p.returncode == 0 and "pruned 0 records" in p.stdout
    out = str(tmp_path / "copy" / "bug.strata")
    os.makedirs(os.path.dirname(out))
    assert strata("datasets", "archive", ops, lat, "-o", out, "--archive", archive).returncode == 0
    os.unlink(archive)
    with Archive.open(out) as a:
        r = a.query(ops, t_start - 1, int(time.time()) + 1)
        assert r.values[r.keys.index("write")].sum() >= 350
        events = int(a.query(lat, t_start - 1, int(time.time()) + 1).counts.sum())
    # the copy renders: its heat map holds every latency event, and draws in a terminal
    grid = strata("heatmap", lat, "--archive", out, "--json")
    assert grid.returncode == 0 and json.loads(grid.stdout)["events"] == events > 0, grid.stderr
    drawn = strata("heatmap", lat, "--archive", out)
    assert drawn.returncode == 0 and dev in drawn.stdout, drawn.stderr
    assert strata("datasets", "destroy", ops, "-y", "--archive", out).returncode == 0
    assert [d["name"] for d in json.loads(strata("datasets", "list", "--json", "--archive", out).stdout)
            ["datasets"]] == [lat]


def test_kill_9_loses_nothing_written(tmp_path, loop):
    """kill -9 of `strata collect` under steady writes, mid-minute: nothing committed is lost,
    and once a restarted collector stops, every minute, ten-minute and hour record equals the
    sum of its seconds (the periods the kill left open rebuilt from them)."""
    archive = str(tmp_path / "k.db")
    ops, lat = (f"disk.{s}[device={os.path.basename(loop)}][op]" for s in ("ops", "latency"))
    for name in (ops, lat):
        assert strata("datasets", "create", name, "--archive", archive).returncode == 0
    proc = start_collect(archive)
    try:
        pid = daemon_pid(proc)
        t_start = int(time.time())
        def written():  # keep writing until at least three seconds are archived
            direct_writes(loop, 40)
            time.sleep(0.5)
            found = seconds(archive, ops, 0)
            return found if len(found) >= 3 else None
        before = wait_for(written, timeout=20, what="three archived seconds")
        assert status.read(archive)["pid"] == proc.pid
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=5)
        assert status.read(archive) is None and not os.path.exists(status.status_path(archive))  # left by kill -9
        wait_for(lambda: not os.path.exists(f"/proc/{pid}") or
                 open(f"/proc/{pid}/stat").read().split()[2] == "Z", what="strata-collect to end")
    finally:
        stop(proc)
    conn = sqlite3.connect(archive)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert conn.execute("SELECT count(*) FROM pending").fetchone()[0] > 0    # open periods left by the kill
    conn.close()
    after = seconds(archive, ops, 0)
    assert all(after[t] == data for t, data in before.items())
    with Archive.open(archive) as a:
        end = max(after) + 1
        sec = a.query(ops, t_start - 60, end)
        mins = a.query(ops, t_start - 60, end, resolution=60)
        assert sec.present.sum() == len(after)
        assert np.array_equal(sec.values.sum(axis=1), mins.values.sum(axis=1))
        assert sec.values[sec.keys.index("write")].sum() >= 80  # the seconds before the last in flight
    # a new collector starts on the same archive at once: the lock died with the process
    proc = start_collect(archive)
    try:
        daemon_pid(proc)
        wait_for(lambda: direct_writes(loop, 20) or seconds(archive, ops, max(after) + 2),
                 what="collection after restart")
    finally:
        stop(proc)
    assert proc.returncode == 0
    with Archive.open(archive) as a:
        assert rollups_against_seconds(a.conn, second_records(a.conn)) >= 6
        assert a.query(lat, t_start - 60, int(time.time()) + 1).counts.sum() > 0


def test_one_collector_per_archive(tmp_path):
    archive = str(tmp_path / "l.db")
    assert strata("datasets", "create", "disk.ops", "--archive", archive).returncode == 0
    first = start_collect(archive)
    try:
        daemon_pid(first)
        second = subprocess.run([STRATA, "collect", "--archive", archive], capture_output=True, text=True,
                                timeout=30)
        assert second.returncode == 1
        assert f"another collector (pid {first.pid})" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        stop(first)
