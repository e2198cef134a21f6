"""`strata collect --fs-pid/--fs-comm/--fs-cgroup` end to end: the real daemon and real
BPF fill a real archive; choices that match nothing are one line each on stderr while
every dataset keeps collecting; file names stay in the archive after the file is gone."""
import os
import subprocess
import time

from collect_util import FsWorker
from conftest import built
from datasets_util import STRATA, strata
from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError


def wait_collected(archive, name, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with Archive.open(archive) as a:
                a.extent(name)
                return
        except ArchiveError:
            time.sleep(0.2)
    raise AssertionError(f"no record of {name} within {timeout}s")


def test_bad_choices_are_one_line_each_and_names_outlive_the_files(tmp_path):
    built("bin/strata-collect")
    archive = str(tmp_path / "a.db")
    path = (tmp_path / "table1").resolve()
    path.write_bytes(os.urandom(1 << 20))
    for name in ("fs.ops[op]", "fs.latency[file]", "disk.ops[op]"):
        assert strata("datasets", "create", name, "--archive", archive).returncode == 0
    gone = subprocess.Popen(["true"])
    gone.wait()
    worker = FsWorker()
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    proc = subprocess.Popen([STRATA, "collect", "--archive", archive, "--fs-pid", str(worker.pid),
                             "--fs-pid", str(gone.pid), "--fs-comm", "no-such-comm",
                             "--fs-cgroup", "no-such-strata-group"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_collected(archive, "fs.ops[op]")  # its probes are attached once it has records
        worker.do(f"open t {path}")
        worker.do("pread t 500 4096 1048576")
        worker.do("close t")
        time.sleep(3)
    finally:
        worker.stop()
        proc.terminate()
        _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    lines = err.splitlines()
    for msg in (f"process {gone.pid} (--fs-pid) does not exist: nothing collected for it",
                "no process named no-such-comm yet (--fs-comm): watching for one",
                "no-such-strata-group (--fs-cgroup): No such file or directory"):
        assert sum(msg in line for line in lines) == 1, err
    assert not any("Traceback" in line for line in lines), err

    path.unlink()
    now = int(time.time()) + 1
    with Archive.open(archive) as a:
        ops = a.query("fs.ops[op]", now - 60, now)
        assert {k: int(ops.values[i].sum()) for i, k in enumerate(ops.keys)} == \
            {"openat": 1, "pread64": 500, "close": 1}
        files = a.query("fs.latency[file]", now - 60, now)
        assert files.keys == [str(path)] and files.counts.sum() == 502
        disk = a.query("disk.ops[op]", now - 60, now)
        assert disk.present.sum() >= 4  # the other dataset has its seconds too
