"""File-system layer, real BPF on the hook the kernel takes (fentry, else the per-syscall
tracepoints; each hook that can be forced, too): exact syscall counts
for the chosen process only (by pid, by name appearing later, by cgroup), file keys that
are paths (and never another file's after a rename), page-cache hits and disk reads as
two bands on a real ext4 loop device, paths of files on an overlayfs whose layers lie on two
file systems (a container's root), and choices that match nothing."""
import os
import subprocess
from pathlib import Path

import pytest

from collect_util import Collector, FsWorker, counter_totals, heatmap_totals, loop_device, process_links
from strata.datasets import llhist


@pytest.fixture
def workers():
    started = []

    def start():
        started.append(FsWorker())
        return started[-1]

    yield start
    for w in started:
        w.stop()


@pytest.fixture
def collectors():
    started = []

    def start(*args):
        started.append(Collector(*args))
        return started[-1]

    yield start
    for c in started:
        c.stop()


def data_file(folder, name="data", size=1 << 20):
    path = Path(folder) / name
    path.write_bytes(os.urandom(size))
    return path.resolve()


# the status record's probes, by the hook it names
HOOK_PROBES = {"fentry": ["fentry:__x64_sys_*", "fexit:__x64_sys_*"],
               "syscalls": ["syscalls:sys_enter_*", "syscalls:sys_exit_*"]}


@pytest.mark.view("fs")
@pytest.mark.parametrize("hook", ["auto", "syscalls"])
def test_preads_of_the_chosen_pid_are_counted_exactly_and_no_one_elses(tmp_path, workers, collectors, hook):
    chosen, other = workers(), workers()
    path = data_file(tmp_path)
    c = collectors("--fs-pid", chosen.pid, "--fs-hook", hook)
    c.add("ops", "fs.ops", "op")
    c.add("procs", "fs.ops", "process")
    c.add("size", "fs.size", "op", "op=pread64")
    c.add("files", "fs.latency", "file")
    status = c.wait_status(lambda s: "fs" in s["attached"])
    assert status["fs"]["hook"] in HOOK_PROBES and hook in ("auto", status["fs"]["hook"]), status
    assert status["probes"] == HOOK_PROBES[status["fs"]["hook"]], status
    for w in (chosen, other):
        w.do(f"open f {path}")
    chosen.do("pread f 1234 4096 1048576")
    other.do("pread f 777 4096 1048576")
    chosen.do("close f")
    c.flush_now()
    assert counter_totals(c.data("ops")) == {"openat": 1, "pread64": 1234, "close": 1}
    assert counter_totals(c.data("procs")) == {chosen.name: 1236}
    assert heatmap_totals(c.data("size")) == {"pread64": {llhist.bucket(4096): 1234}}
    files = heatmap_totals(c.data("files"))
    assert list(files) == [str(path)] and sum(files[str(path)].values()) == 1236
    assert c.statuses()[-1]["errors"] == []


def test_a_renamed_or_deleted_open_file_never_shows_under_another_files_name(tmp_path, workers, collectors):
    w = workers()
    a, b = data_file(tmp_path, "a"), tmp_path.resolve() / "b"
    c = collectors("--fs-pid", w.pid)
    c.add("files", "fs.ops", "file", "op=pread64")
    c.wait_status(lambda s: "fs" in s["attached"])
    w.do(f"open old {a}")
    w.do("pread old 10 4096 1048576")
    c.flush_now()
    assert counter_totals(c.data("files")) == {str(a): 10}
    old_ino = a.stat().st_ino

    # a's inode is renamed to b and a new file takes the name a: the old inode is b now
    os.rename(a, b)
    a_new = data_file(tmp_path, "a")
    assert a_new.stat().st_ino != old_ino
    seen = len(c.data("files"))
    w.do(f"open new {a_new}")
    w.do("pread old 20 4096 1048576")
    w.do("pread new 30 4096 1048576")
    c.flush_now()
    assert counter_totals(c.data("files")[seen:]) == {str(b): 20, str(a): 30}

    # deleted while open: no path names that inode any more
    b.unlink()
    seen = len(c.data("files"))
    w.do("pread old 5 4096 1048576")
    c.flush_now()
    dev = os.stat(tmp_path).st_dev
    assert counter_totals(c.data("files")[seen:]) == {
        f"inode:{os.major(dev)},{os.minor(dev)}:{old_ino}": 5}


def test_a_name_that_appears_later_is_followed_from_then_on(tmp_path, workers, collectors):
    name = f"fsw{os.getpid() % 100000}"
    path = data_file(tmp_path)
    c = collectors("--fs-comm", name)
    c.add("ops", "fs.ops", "process", "op=pread64")
    c.wait_status(lambda s: f"fs: no process named {name} yet (--fs-comm): watching for one" in s["errors"])
    w = workers()
    w.do(f"open f {path}")
    w.do("pread f 50 4096 1048576")  # not yet its name: not followed
    w.do(f"comm {name}")
    c.wait_status(lambda s: s["errors"] == [])
    w.do("pread f 321 4096 1048576")
    c.flush_now()
    assert counter_totals(c.data("ops")) == {f"{name}:{w.pid}": 321}


def cgroup2_root():
    for line in Path("/proc/self/mounts").read_text().splitlines():
        dev, mnt, fstype, *_ = line.split()
        if fstype == "cgroup2":
            return Path(mnt)
    pytest.skip("no cgroup v2 hierarchy mounted: --fs-cgroup needs one")


def test_processes_of_a_cgroup_and_below_are_followed(tmp_path, workers, collectors):
    group = cgroup2_root() / f"strata-fs-test-{os.getpid()}"
    child = group / "inner"
    path = data_file(tmp_path)
    try:
        child.mkdir(parents=True)
        inside, outside = workers(), workers()
        (child / "cgroup.procs").write_text(str(inside.pid))
        c = collectors("--fs-cgroup", str(group))
        c.add("ops", "fs.ops", "process", "op=pread64")
        c.wait_status(lambda s: "fs" in s["attached"])
        for w, n in ((inside, 400), (outside, 300)):
            w.do(f"open f {path}")
            w.do(f"pread f {n} 4096 1048576")
        c.flush_now()
        assert counter_totals(c.data("ops")) == {inside.name: 400}
        assert c.statuses()[-1]["errors"] == []
    finally:
        for w in (inside, outside) if "outside" in locals() else ():
            w.stop()
        for g in (child, group):
            if g.exists():
                g.rmdir()


def test_choices_that_match_nothing_are_one_error_each_and_the_rest_is_collected(tmp_path, workers, collectors):
    gone = subprocess.Popen(["true"])
    gone.wait()
    w = workers()
    path = data_file(tmp_path)
    c = collectors("--fs-pid", gone.pid, "--fs-pid", w.pid, "--fs-comm", "no-such-comm",
                   "--fs-cgroup", "/sys/fs/cgroup/no-such-strata-group")
    c.add("ops", "fs.ops", "process")
    c.add("disk", "disk.ops", "-")
    status = c.wait_status(lambda s: "fs" in s["attached"] and s["errors"])
    assert sorted(status["errors"]) == sorted([
        f"fs: process {gone.pid} (--fs-pid) does not exist: nothing collected for it",
        "fs: no process named no-such-comm yet (--fs-comm): watching for one",
        "fs: no cgroup /sys/fs/cgroup/no-such-strata-group (--fs-cgroup): No such file or directory",
    ])
    assert "disk" in status["attached"]
    w.do(f"open f {path}")
    w.do("pread f 99 4096 1048576")
    c.flush_now()
    assert counter_totals(c.data("ops")) == {w.name: 100}  # openat and 99 preads
    assert len(c.data("disk")) >= 2  # the other dataset has its record every interval
    # no fs dataset left: the probes detach and the choices are not looked at any more
    c.remove("ops")
    assert "fs" not in c.wait_status(lambda s: s["errors"] == [])["attached"]
    c.add("ops2", "fs.ops", "op")
    c.wait_status(lambda s: len(s["errors"]) == 3 and "fs" in s["attached"])


def test_fs_datasets_without_any_choice_are_refused_and_bad_choices_are_one_line(collectors):
    c = collectors()
    reply = c.send("add ops fs.ops op")
    assert reply["type"] == "error"
    assert "no processes chosen: start the collector with --fs-pid PID" in reply["message"]
    for args, msg in ((["--fs-pid", "abc"], "--fs-pid needs a process id, not abc"),
                      (["--fs-comm", "x" * 16], "--fs-comm needs a process name of 1-15 characters"),
                      (["--fs-hook", "raw_syscalls"], "--fs-hook needs auto, fentry or syscalls, not raw_syscalls")):
        proc = subprocess.run([str(c.proc.args[0]), *args], capture_output=True, text=True, timeout=20)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and msg in proc.stderr, proc.stderr


@pytest.fixture
def ext4(tmp_path):
    """An ext4 file system on a fresh loop device (direct I/O to a file on the real disk)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with loop_device(tmp_path, size_mb=128) as dev:
        subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{dev}"], check=True)
        subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True)
        try:
            yield mnt
        finally:
            subprocess.run(["umount", str(mnt)], check=False)


def test_page_cache_hits_and_disk_reads_are_two_bands(ext4, workers, collectors):
    path = ext4 / "table1"
    with open(path, "wb") as f:
        for _ in range(64):
            f.write(os.urandom(1 << 20))
    os.sync()
    w = workers()
    c = collectors("--fs-pid", w.pid)
    c.add("lat", "fs.latency", "op", "op=pread64")
    c.wait_status(lambda s: "fs" in s["attached"])
    w.do(f"open t {path}")
    w.do("random t")
    w.do("pread t 3000 4096 67108864")  # written just now: all in the page cache
    c.flush_now()
    warm = heatmap_totals(c.data("lat"))["pread64"]
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    seen = len(c.data("lat"))
    w.do("pread t 3000 4096 67108864")  # mostly from the disk now
    c.flush_now()
    cold = heatmap_totals(c.data("lat")[seen:])["pread64"]

    def above(hist, ns):
        return sum(n for b, n in hist.items() if llhist.lower(b) >= ns)

    assert sum(warm.values()) == sum(cold.values()) == 3000
    # a page-cache hit takes a few microseconds, a read from the loop device tens or more
    assert above(warm, 20_000) < 300, warm
    assert above(cold, 20_000) > 1500, cold


def mounted_device(mnt):
    """The block device mounted on mnt ("/dev/loop3")."""
    return subprocess.run(["findmnt", "-n", "-o", "SOURCE", str(mnt)], check=True, capture_output=True,
                          text=True).stdout.strip()


def device_reads(dev):
    """Completed reads of block device dev (/proc/diskstats)."""
    for line in Path("/proc/diskstats").read_text().splitlines():
        f = line.split()
        if f[2] == Path(dev).name:
            return int(f[3])
    raise AssertionError(f"{dev} not in /proc/diskstats")


@pytest.mark.view("fs")
def test_each_read_is_tiered_disk_when_cold_and_cache_when_warm(ext4, workers, collectors):
    """fs.ops[tier]: with readahead off, after drop_caches each 4k pread of a file must read
    its block from the device (disk), and right after, the same preads find it in the page
    cache (cache); /proc/diskstats counts the device reads of each pass. The tier programs
    are attached only while a dataset needs the tier."""
    path, blocks = ext4 / "table1", 1024
    path.write_bytes(os.urandom(blocks * 4096))
    os.sync()
    dev = mounted_device(ext4)
    subprocess.run(["blockdev", "--setra", "0", dev], check=True)
    w = workers()
    c = collectors("--fs-pid", w.pid)
    c.add("plain", "fs.ops", "op")
    c.wait_status(lambda s: "fs" in s["attached"])
    links = len(process_links(c.proc.pid))
    c.add("ops", "fs.ops", "tier", "op=pread64")  # attaches the tier programs, block I/O and iowait
    assert len(process_links(c.proc.pid)) == links + 2
    w.do(f"open t {path}")
    w.do("random t")
    passes = {}
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    for name in ("cold", "warm"):
        seen, reads = len(c.data("ops")), device_reads(dev)
        w.do(f"sweep t 4096 {blocks * 4096}")
        c.flush_now()
        passes[name] = counter_totals(c.data("ops")[seen:]), device_reads(dev) - reads
    c.remove("ops")
    c.wait_status()
    assert len(process_links(c.proc.pid)) == links  # no tier dataset, no tier programs
    print("fs.ops[tier] and device reads per pass:", passes)
    (cold, cold_reads), (warm, warm_reads) = passes["cold"], passes["warm"]
    assert sum(cold.values()) == sum(warm.values()) == blocks
    assert cold.get("disk", 0) >= 0.99 * blocks and cold_reads >= 0.99 * blocks
    assert warm.get("cache", 0) >= 0.99 * blocks and warm_reads <= 0.01 * blocks


@pytest.fixture
def overlay(tmp_path):
    """An overlayfs whose lower layer is a tmpfs and whose upper one lies on tmp_path's file
    system: stat shows its files on their layers' devices, the kernel's inode is the overlay's."""
    lower, upper, work, mnt = (tmp_path / n for n in ("lower", "upper", "work", "mnt"))
    for d in (lower, upper, work, mnt):
        d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "none", str(lower)], check=True)
    try:
        (lower / "old").write_bytes(os.urandom(1 << 20))
        subprocess.run(["mount", "-t", "overlay", "overlay", "-o", f"lowerdir={lower},upperdir={upper},workdir={work}",
                        str(mnt)], check=True)
        try:
            yield mnt
        finally:
            subprocess.run(["umount", str(mnt)], check=False)
    finally:
        subprocess.run(["umount", str(lower)], check=False)


def test_files_on_an_overlay_over_two_file_systems_are_named_by_path(overlay, workers, collectors):
    old, new = overlay / "old", data_file(overlay, "new")  # a lower layer's file, an upper one's
    assert os.stat(old).st_dev != os.stat(overlay).st_dev  # what made them inode:... before
    w = workers()
    c = collectors("--fs-pid", w.pid)
    c.add("files", "fs.ops", "file")
    c.wait_status(lambda s: "fs" in s["attached"])
    for name, path in (("o", old), ("n", new)):
        w.do(f"open {name} {path}")
        w.do(f"pread {name} 10 4096 1048576")
    c.flush_now()
    assert counter_totals(c.data("files")) == {str(old): 11, str(new): 11}  # the open and 10 preads
    w.do("close o")
    w.do("close n")
