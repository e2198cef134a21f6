"""Helpers for the collector tests: drive build/bin/strata-collect over its stdin/stdout
protocol (collectors/FORMAT.md), the USDT probe fixture, a private engine under load, a
process doing file I/O on command (fs_worker.py), and private loop devices."""
import contextlib
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import built, patience


class Collector:
    """strata-collect as a child process; records are parsed by a reader thread."""

    def __init__(self, *args):
        self.proc = subprocess.Popen(
            [str(built("bin/strata-collect")), *map(str, args)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1)
        self.records = []
        self.replies = queue.Queue()
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            rec = json.loads(line)
            assert rec["v"] == 1, rec
            if rec["type"] in ("ack", "error"):
                self.replies.put(rec)
            else:
                with self.lock:
                    self.records.append(rec)

    def send(self, line, timeout=20):
        """One control command; returns its ack or error record."""
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.replies.get(timeout=patience(timeout))

    def add(self, ident, statistic, breakdown="-", *filters):
        reply = self.send(" ".join(["add", ident, statistic, breakdown, *filters]))
        assert reply == {"v": 1, "type": "ack", "id": ident, "ok": True}, reply
        return reply

    def remove(self, ident):
        reply = self.send(f"remove {ident}")
        assert reply["type"] == "ack", reply

    def statuses(self):
        with self.lock:
            return [r for r in self.records if r["type"] == "status"]

    def data(self, ident):
        with self.lock:
            return [r for r in self.records if r["type"] == "data" and r["id"] == ident]

    def wait_status(self, predicate=lambda s: True, timeout=10):
        """The first status record after now that satisfies predicate."""
        seen = len(self.statuses())
        deadline = time.monotonic() + patience(timeout)
        while time.monotonic() < deadline:
            for s in self.statuses()[seen:]:
                if predicate(s):
                    return s
            time.sleep(0.05)
            assert self.proc.poll() is None, self.proc.stderr.read()
        raise AssertionError(f"no matching status within {timeout}s; last: {self.statuses()[-1:]}")

    def flush_now(self):
        """Waits until the records covering the current wall-clock second are out, and with
        them the engine's operations so far (a probe batch fires by the end of the second its
        first operation ended in, or in the next second's batch within its last 15 ms:
        engine/strata_probes.h)."""
        now = int(time.time() + 0.05)
        return self.wait_status(lambda s: s["t"] >= now)

    def stop(self):
        """EOF on stdin: the collector flushes and exits 0."""
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=20)
        self.reader.join(timeout=5)
        return self.proc.returncode


class FsWorker:
    """tests/fs_worker.py as a child: file I/O on command."""

    def __init__(self):
        worker = Path(__file__).resolve().parent / "fs_worker.py"
        self.proc = subprocess.Popen([sys.executable, str(worker)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        first = self.proc.stdout.readline().split()
        assert first[0] == "ready", first
        self.pid = int(first[1])
        self.name = f"{Path(f'/proc/{self.pid}/comm').read_text().strip()}:{self.pid}"

    def do(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "ok", line

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=10)


def counter_totals(records):
    """Sum of counter records per key."""
    totals = {}
    for r in records:
        for key, n in r["data"].items():
            totals[key] = totals.get(key, 0) + n
    return totals


def heatmap_totals(records):
    """{key: {bucket: count}} summed over heat-map records."""
    totals = {}
    for r in records:
        for key, buckets in r["data"].items():
            into = totals.setdefault(key, {})
            for b, n in buckets.items():
                into[int(b)] = into.get(int(b), 0) + n
    return totals


class Fixture:
    """build/tests/strata-probe-fixture run from a private copy: uprobes are per inode, so
    other engineers' engines and fixtures on this machine never reach our probes."""

    def __init__(self, binary, *args):
        self.binary = binary
        self.proc = subprocess.Popen([str(binary), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        first = self.proc.stdout.readline().split()
        assert first[0] == "ready", first
        self.pid = int(first[1])

    def ask(self, line):
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline().split()
        assert reply and reply[0] != "error", reply
        return int(reply[1])

    def nfs(self, count, proc, client="127.0.0.1", latency_us=0, tiers=1, hits=0, misses=0, size=0, file=0,
            mount=False, keys_only=0):
        """Fires count operations; the first keys_only of them put as an engine puts them while
        strata:nfs_ops has no reader (their counting keys alone)."""
        if keys_only:
            self.ask(f"keys {keys_only}")
        return self.ask(f"nfs {count} {proc} {client} {latency_us} {tiers} {hits} {misses} {size} {file}"
                        + (" mount" if mount else ""))

    def semaphore(self, probe):
        return self.ask(f"sem {probe}")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


def private_copy(src, folder):
    dst = Path(folder) / Path(src).name
    shutil.copy2(src, dst)
    return dst


@contextlib.contextmanager
def loop_device(folder, size_mb=64, filled=False):
    """A fresh loop device (direct I/O on a temp file); yields its name ("loop3"). A sparse
    file answers reads from holes in microseconds; a filled one sends them to the real disk."""
    image = Path(folder) / "disk.img"
    with open(image, "wb") as f:
        if filled:
            for _ in range(size_mb):
                f.write(os.urandom(1 << 20))
            f.flush()
            os.fsync(f.fileno())
        else:
            f.truncate(size_mb << 20)
    dev = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(image)],
                         check=True, capture_output=True, text=True).stdout.strip()
    try:
        if shutil.which("udevadm"):  # no udev in a minimal VM: the device node exists already
            subprocess.run(["udevadm", "settle", "--timeout=5"], check=False)
        yield os.path.basename(dev)
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)
        image.unlink(missing_ok=True)


def block_stat(dev):
    """/sys/block/DEV/stat: completed reads, writes, discards, flushes."""
    f = [int(x) for x in Path(f"/sys/block/{dev}/stat").read_text().split()]
    return {"read": f[0], "write": f[4], "discard": f[11] if len(f) > 11 else 0,
            "flush": f[15] if len(f) > 15 else 0}


def disk_settled(c, dev, before, dataset):
    """The kernel's counts of dev since `before` (block_stat) and the collector's counts of
    its disk.ops dataset broken down by op, once every request is counted: a completion the
    kernel did not run the disk program for shows as op "missed" only when its request is
    issued again, so while the collector is short, direct writes sweep twice through the
    device's request tags (at most 5 sweeps; the sweeps are in both counts)."""
    sweep = 2 * int(Path(f"/sys/block/{dev}/queue/nr_requests").read_text())
    for _ in range(6):
        after = block_stat(dev)
        c.flush_now()
        kernel = {k: after[k] - before[k] for k in after if after[k] != before[k]}
        counted = counter_totals(c.data(dataset))
        if sum(counted.values()) >= sum(kernel.values()):
            break
        subprocess.run(["dd", "if=/dev/zero", f"of=/dev/{dev}", "oflag=direct", "bs=4k", f"count={sweep}",
                        "status=none"], check=True)
    return kernel, counted


def short_by_op(kernel, counted):
    """Per op, the requests the kernel completed that disk.ops did not count as that op."""
    return {op: kernel.get(op, 0) - counted.get(op, 0) for op in (kernel.keys() | counted.keys()) - {"missed"}}


def process_links(pid):
    """link_type of every BPF link a process holds open (from /proc/PID/fdinfo)."""
    links = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) != "anon_inode:bpf_link":
                continue
            info = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
        except OSError:
            continue
        links += [line.split()[1] for line in info.splitlines() if line.startswith("link_type:")]
    return links


class Engine:
    """A private copy of strata-engine serving a pool on an ephemeral port: a fresh file
    folder/NAME.pool, or the vdevs given (which it makes a pool of first)."""

    def __init__(self, binary, folder, name, extra=(), vdevs=None):
        self.pool = ",".join(map(str, vdevs)) if vdevs else folder / f"{name}.pool"
        self.port_file = folder / f"{name}.port"
        if vdevs or not self.pool.exists():
            subprocess.run([str(binary), "mkpool", str(self.pool), "--size", "256m"], check=True,
                           capture_output=True)
        self.port_file.unlink(missing_ok=True)
        self.proc = subprocess.Popen([str(binary), "serve", "--pool", str(self.pool), "--export", "/export:mode=1777",
                                      "--listen", "127.0.0.1:0", "--port-file", str(self.port_file), *extra],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        while not (self.port_file.exists() and self.port_file.read_text().strip()):
            assert self.proc.poll() is None, self.proc.stderr.read()
            assert time.monotonic() < deadline, "engine did not start"
            time.sleep(0.05)
        m = re.search(r"nfs=[\d.]+:(\d+) mount=[\d.]+:(\d+)", self.port_file.read_text())
        self.nfs_port, self.mount_port = m.group(1), m.group(2)
        self.pid = self.proc.pid

    def load(self, duration=1, setup=True, clients=2, *more):
        args = [str(built("bin/strata-load")), "--server", "127.0.0.1", "--nfsport", self.nfs_port,
                "--mountport", self.mount_port, "--export", "/export", "--profile", "randread",
                "--io-size", "8k", "--working-set", "8m", "--clients", str(clients), "--threads", "2",
                "--duration", str(duration), "--json", "-", *more] + (["--setup"] if setup else [])
        return json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)

    def stats(self):
        out = subprocess.run([str(built("bin/strata-engine")), "stats", "--pid", str(self.pid)],
                             check=True, capture_output=True, text=True, timeout=10).stdout
        return json.loads(out)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)
