"""Faults `strata collect` survives with no event lost, with the real strata-collect daemon
and real BPF on a loop device: a full file system (a small real tmpfs filled up, then
freed), the archive's folder removed, the collector stopped (SIGSTOP) during writes. The
disk.ops totals over the whole run equal the kernel's (/sys/block), and the outage is one
record marked as spanning it."""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time
from contextlib import closing

import pytest

from datasets_util import STRATA, direct_writes, loop_device, strata
from strata.lab.process import stop
from strata.collect import status
from strata.datasets.archive import Archive
from test_datasets_collect import archived_ops, bpf_links, daemon_pid, seconds, start_collect, wait_for


@pytest.fixture()
def loop():
    with loop_device() as dev:
        yield dev


def writes(dev):
    return int(open(f"/sys/block/{os.path.basename(dev)}/stat").read().split()[4])


def settled(archive, ops, dev, before):
    """(writes the kernel completed since `before`, archived {op: count}) once the archive's
    writes and missed completions add up to the kernel's (a missed completion shows when
    its request is issued again: while short, writes sweep through the request tags)."""
    sweep = 2 * int(open(f"/sys/block/{os.path.basename(dev)}/queue/nr_requests").read())
    for tries in range(6):
        kernel = writes(dev) - before
        try:
            wait_for(lambda: sum(archived_ops(archive, ops, 0).get(k, 0) for k in ("write", "missed")) == kernel,
                     timeout=10 if tries == 5 else 4, what=f"{kernel} writes in the archive")
            return kernel, archived_ops(archive, ops, 0)
        except AssertionError:
            if tries == 5:
                raise AssertionError(f"kernel {writes(dev) - before} writes, archive {archived_ops(archive, ops, 0)}")
            direct_writes(dev, sweep)


def spans(archive):
    with closing(sqlite3.connect(archive)) as conn:
        return conn.execute("SELECT dataset, t, seconds, cause FROM spans").fetchall()


def attached(pid):
    """Whether the daemon holds a BPF link (its descriptors change as it starts: retried)."""
    try:
        return bpf_links(pid) > 0
    except OSError:
        return False


def collector_state(archive):
    s = status.read(archive)
    return s and s["state"]


@pytest.fixture()
def small_fs():
    folder = tempfile.mkdtemp(prefix="strata-ds-faults-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", folder], check=True)
    try:
        yield folder
    finally:
        for _ in range(50):   # a process just stopped may hold it a moment longer
            if subprocess.run(["umount", folder], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)
        os.rmdir(folder)


def test_full_disk_holds_the_events_and_stores_the_gap(loop, small_fs):
    archive = os.path.join(small_fs, "a.db")
    ops = f"disk.ops[device={os.path.basename(loop)}][op]"
    assert strata("datasets", "create", ops, "--archive", archive).returncode == 0
    assert strata("datasets", "create", "disk.latency[op]", "--archive", archive).returncode == 0
    before = writes(loop)
    proc = start_collect(archive)
    try:
        wait_for(lambda: seconds(archive, ops, 0), what="first records")
        direct_writes(loop, 20)
        subprocess.run(["dd", "if=/dev/zero", f"of={small_fs}/filler", "bs=64k"], capture_output=True)
        wait_for(lambda: collector_state(archive) == "holding", what="the collector to hold")
        listed = strata("datasets", "list", "--archive", archive)
        assert "disk is full" in listed.stdout and "holding" in listed.stdout, listed.stdout
        doctor = json.loads(strata("doctor", "--json").stdout)["checks"]
        rows = [c for c in doctor if c["name"] == f"collector (pid {proc.pid})"]
        assert len(rows) == 1 and rows[0]["state"] == "holding", rows
        assert f"{archive} cannot be written" in rows[0]["detail"] and "disk is full" in rows[0]["detail"]
        assert "Holding the events of 2 dataset(s)" in rows[0]["detail"], rows[0]
        for _ in range(4):  # seconds of writes the archive cannot take
            direct_writes(loop, 25)
            time.sleep(1)
        assert proc.poll() is None
        os.unlink(f"{small_fs}/filler")
        wait_for(lambda: collector_state(archive) == "writing", what="the collector to write again")
        direct_writes(loop, 30)
        kernel, counted = settled(archive, ops, loop, before)
    finally:
        stop(proc)
    err = proc.stderr.read()
    assert proc.returncode == 0, err
    assert "disk is full" in err and "stored as one record" in err and "Traceback" not in err, err
    assert kernel >= 150 and counted["write"] + counted.get("missed", 0) == kernel
    with Archive.open(archive) as a:
        ds = a.dataset(ops).id
    gaps = [s for s in spans(archive) if s[0] == ds]
    assert len(gaps) == 1 and gaps[0][3] == "archive" and gaps[0][2] >= 4, gaps
    with closing(sqlite3.connect(archive)) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_collector_started_on_a_full_disk_collects_and_holds(loop, small_fs):
    """A restart while the disk is full (the unit restarts on failure): the archive is read
    for its datasets, collection starts, and the records wait for space."""
    archive = os.path.join(small_fs, "a.db")
    ops = f"disk.ops[device={os.path.basename(loop)}][op]"
    assert strata("datasets", "create", ops, "--archive", archive).returncode == 0
    subprocess.run(["dd", "if=/dev/zero", f"of={small_fs}/filler", "bs=4k"], capture_output=True)
    before = writes(loop)
    proc = start_collect(archive)
    try:
        daemon = daemon_pid(proc)
        wait_for(lambda: collector_state(archive) == "holding", what="the collector to hold")
        wait_for(lambda: attached(daemon), what="the disk probes to attach")
        # the daemon's first status record follows the dataset's add, whose probes attached in the
        # interval in progress or an earlier one; that interval is partial (counted from its middle,
        # stored by no one: collectors/FORMAT.md), the next whole: the writes wait for its start
        wait_for(lambda: (status.read(archive) or {}).get("daemon"), what="the daemon's first status")
        time.sleep(1.1)   # one interval (1 s) and a margin: past its next boundary
        direct_writes(loop, 50)
        time.sleep(2)
        assert proc.poll() is None and not seconds(archive, ops, 0)
        os.unlink(f"{small_fs}/filler")
        wait_for(lambda: collector_state(archive) == "writing", what="the collector to write")
        kernel, counted = settled(archive, ops, loop, before)
    finally:
        stop(proc)
    err = proc.stderr.read()
    assert proc.returncode == 0 and "held in memory" in err and "Traceback" not in err, err
    assert kernel >= 50 and counted["write"] + counted.get("missed", 0) == kernel
    assert [s[3] for s in spans(archive)] == ["archive"]


def test_a_removed_folder_is_made_again(loop, tmp_path):
    folder = tmp_path / "state"
    archive = str(folder / "a.db")
    ops = f"disk.ops[device={os.path.basename(loop)}][op]"
    assert strata("datasets", "create", ops, "--archive", archive, "--keep", "second=2d").returncode == 0
    proc = start_collect(archive)
    try:
        wait_for(lambda: seconds(archive, ops, 0), what="first records")
        shutil.rmtree(folder)
        wait_for(lambda: os.path.exists(archive) and seconds(archive, ops, 0), what="the archive made again")
        assert os.path.exists(archive + ".lock")
        # the lock is the running collector's again: a second one is refused
        second = subprocess.run([STRATA, "collect", "--archive", archive], capture_output=True, text=True,
                                timeout=30)
        assert second.returncode == 1 and f"another collector (pid {proc.pid})" in second.stderr, second.stderr
        before = writes(loop)   # the new file's first second is after this: every write lands in it
        direct_writes(loop, 60)
        kernel, counted = settled(archive, ops, loop, before)
    finally:
        stop(proc)
    err = proc.stderr.read()
    assert proc.returncode == 0 and "made again" in err and "Traceback" not in err, err
    assert kernel >= 60 and counted["write"] + counted.get("missed", 0) == kernel
    with Archive.open(archive) as a:
        assert a.dataset(ops).retention.second == 2 * 86400


def test_a_stopped_collector_loses_no_event(loop, tmp_path):
    archive = str(tmp_path / "s.db")
    ops = f"disk.ops[device={os.path.basename(loop)}][op]"
    assert strata("datasets", "create", ops, "--archive", archive).returncode == 0
    before = writes(loop)
    proc = start_collect(archive)
    try:
        daemon = daemon_pid(proc)
        wait_for(lambda: seconds(archive, ops, 0), what="first records")
        direct_writes(loop, 40)
        time.sleep(1.5)
        for pid in (daemon, proc.pid):     # both, as a frozen cgroup or Ctrl-Z would
            os.kill(pid, signal.SIGSTOP)
        try:
            for _ in range(5):             # the kernel counts on: the programs stay attached
                direct_writes(loop, 30)
                time.sleep(1)
        finally:
            for pid in (proc.pid, daemon):
                os.kill(pid, signal.SIGCONT)
        direct_writes(loop, 40)
        kernel, counted = settled(archive, ops, loop, before)
    finally:
        stop(proc)
    assert proc.returncode == 0, proc.stderr.read()
    assert kernel >= 230 and counted["write"] + counted.get("missed", 0) == kernel
    gaps = spans(archive)
    assert len(gaps) == 1 and gaps[0][3] == "stall" and gaps[0][2] >= 5, gaps


@pytest.fixture()
def failing_ext4(tmp_path):
    """(folder, loop device, backing folder): ext4 on a loop device over a sparse image on a
    small tmpfs. Filling the tmpfs makes the device fail its writes (I/O errors; ext4 aborts
    its journal and turns read-only), as a dying disk would."""
    back, folder = tmp_path / "back", tmp_path / "mnt"
    back.mkdir(), folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", back], check=True)
    dev = None
    try:
        subprocess.run(["truncate", "-s", "64M", back / "ext4.img"], check=True)
        subprocess.run(["mkfs.ext4", "-q", back / "ext4.img"], check=True)
        dev = subprocess.run(["losetup", "--find", "--show", back / "ext4.img"], check=True, capture_output=True,
                             text=True).stdout.strip()
        subprocess.run(["mount", dev, folder], check=True)
        yield str(folder), dev, str(back)
    finally:
        for _ in range(50):
            if subprocess.run(["umount", folder], capture_output=True).returncode != 0:
                break   # not (or no longer) mounted
        if dev:
            subprocess.run(["losetup", "-d", dev], check=False)
        for _ in range(50):
            if subprocess.run(["umount", back], capture_output=True).returncode == 0:
                break
            time.sleep(0.1)


def test_io_errors_then_a_repaired_file_system_lose_no_event(loop, failing_ext4):
    """The archive's device fails its writes: ext4 aborts and goes read-only, the collector
    holds. The admin repairs it (umount -l, e2fsck, mount): the collector, which let go of
    the dead mount, opens the archive again and stores the outage as one record. Seconds
    committed before the fault survived it (every commit is synced)."""
    folder, dev, back = failing_ext4
    archive = os.path.join(folder, "a.db")
    ops = f"disk.ops[device={os.path.basename(loop)}][op]"
    assert strata("datasets", "create", ops, "--archive", archive).returncode == 0
    before = writes(loop)
    proc = start_collect(archive)
    try:
        wait_for(lambda: seconds(archive, ops, 0), what="first records")
        direct_writes(loop, 20)
        time.sleep(1.5)
        subprocess.run(["dd", "if=/dev/zero", f"of={back}/filler", "bs=64k"], capture_output=True)
        wait_for(lambda: collector_state(archive) == "holding", what="the collector to hold")
        for _ in range(3):
            direct_writes(loop, 25)
            time.sleep(1)
        os.unlink(f"{back}/filler")
        subprocess.run(["umount", "-l", folder], check=True)
        wait_for(lambda: "gone" in ((status.read(archive) or {}).get("problem") or ""), what="the mount let go")
        assert subprocess.run(["e2fsck", "-fy", dev], capture_output=True).returncode in (0, 1)
        subprocess.run(["mount", dev, folder], check=True)
        wait_for(lambda: collector_state(archive) == "writing", what="the collector to write again")
        direct_writes(loop, 30)
        kernel, counted = settled(archive, ops, loop, before)
    finally:
        stop(proc)
    err = proc.stderr.read()
    assert proc.returncode == 0, err
    assert "disk I/O error" in err and "file system is gone" in err and "stored as one record" in err, err
    assert kernel >= 125 and counted["write"] + counted.get("missed", 0) == kernel
    assert [s[3] for s in spans(archive)] == ["archive"]
