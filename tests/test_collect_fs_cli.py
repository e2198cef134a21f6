"""`strata collect --fs-pid/--fs-comm/--fs-cgroup` end to end: the real daemon and real
BPF fill a real archive; choices that match nothing are one line each on stderr while
every dataset keeps collecting; file names stay in the archive after the file is gone."""
import os
import subprocess
import time

from collect_util import FsWorker
from conftest import built
from datasets_util import STRATA, strata
from strata.collect import status
from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError
from test_datasets_collect import daemon_pid


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


BPF_PROG_TYPE = {"tracepoint": 5, "tracing": 26}   # include/uapi/linux/bpf.h: syscalls:* events, fentry/fexit


def daemon_prog_types(collect) -> tuple:
    """(strata-collect's command line, the types of the BPF programs it holds open), read
    from /proc: the child of `strata collect` and the fdinfo of its descriptors."""
    child = daemon_pid(collect)
    argv = open(f"/proc/{child}/cmdline").read().split("\0")[:-1]
    types = set()
    for fd in os.listdir(f"/proc/{child}/fdinfo"):
        try:
            info = open(f"/proc/{child}/fdinfo/{fd}").read()
        except FileNotFoundError:
            continue
        types |= {int(line.split()[1]) for line in info.splitlines() if line.startswith("prog_type:")}
    return argv, types


def collected_or_refused(archive, why, timeout=30):
    """True once the archive holds a record of fs.ops[op]; False once the collector's status
    names `why` for it instead."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with Archive.open(archive) as a:
                a.extent("fs.ops[op]")
                return True
        except ArchiveError:
            if any(why in e for e in (status.read(archive) or {}).get("errors", [])):
                return False
            time.sleep(0.2)
    raise AssertionError(f"neither a record of fs.ops[op] nor {why!r} within {timeout}s")


def test_fs_hook_from_the_file_or_the_flag_reaches_the_daemon(tmp_path):
    """`fs.hook` in the configuration file and `--fs-hook` (which wins) are passed on to
    strata-collect, whose fs programs are then fentry's, or the syscalls tracepoints'.
    fentry is what the file asks for: a kernel without it refuses it in the daemon's words
    (no fallback, as `auto` would); the syscalls tracepoints the flag asks for are there."""
    built("bin/strata-collect")
    archive, config = tmp_path / "a.db", tmp_path / "c.toml"
    assert strata("datasets", "create", "fs.ops[op]", "--archive", str(archive)).returncode == 0
    worker = FsWorker()
    config.write_text(f'archive = "{archive}"\n[fs]\npids = [{worker.pid}]\nhook = "fentry"\n')
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    lacks = "--fs-hook fentry: kernel lacks fentry programs"
    try:
        for flags, hook in (((), "fentry"), (("--fs-hook", "syscalls"), "syscalls")):
            proc = subprocess.Popen([STRATA, "collect", "--config", str(config), *flags],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
            try:
                collected = collected_or_refused(str(archive), lacks)
                argv, types = daemon_prog_types(proc)
            finally:
                proc.terminate()
                _, err = proc.communicate(timeout=20)
            assert proc.returncode == 0, err
            assert argv[argv.index("--fs-hook") + 1] == hook and argv.count("--fs-hook") == 1, argv
            assert collected or (hook == "fentry" and lacks in err), err
            prog = {"fentry": "tracing", "syscalls": "tracepoint"}[hook]
            other = "tracing" if prog == "tracepoint" else "tracepoint"
            assert (BPF_PROG_TYPE[prog] in types) == collected and BPF_PROG_TYPE[other] not in types, (hook, types)
            with Archive.open(str(archive), readonly=False) as a:
                a.destroy("fs.ops[op]")
                a.create("fs.ops[op]")
    finally:
        worker.stop()
    config.write_text(f'archive = "{archive}"\n[fs]\npids = [{worker.pid}]\nhook = "kprobe"\n')
    r = strata("collect", "--config", str(config))
    assert r.returncode != 0 and r.stderr.strip().splitlines() == [
        f"strata: {config}, line 4: fs.hook: 'kprobe' is not one of 'auto', 'fentry', 'syscalls'."], r.stderr
