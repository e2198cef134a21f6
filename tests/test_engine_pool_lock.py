"""One engine per pool: `serve` locks every vdev and its log and cache devices (OFD locks)
and writes its host and pid in the vdevs' holder block; a second `serve`, or a `mkpool`
over the pool, is refused in one line naming the holder; after kill -9 of the holder a
new `serve` starts at once (the kernel dropped the lock)."""
import os
import signal
import socket
import subprocess

from engine_util import Engine, engine_binary, mkpool


def ofd_locked(pid) -> set:
    """The files process pid holds an OFD write lock on (its /proc/PID/fdinfo lock: lines)."""
    held = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if "OFDLCK ADVISORY  WRITE" in open(f"/proc/{pid}/fdinfo/{fd}").read():
                held.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except FileNotFoundError:
            pass
    return held


def second_serve(tmp, pool, extra=()):
    return subprocess.run([engine_binary(), "serve", "--pool", pool, "--listen", "127.0.0.1:0", "--no-rpcbind",
                           "--stats-socket", str(tmp / "second.sock"), "--export", "data", *extra],
                          capture_output=True, text=True, timeout=30)


def test_a_second_serve_is_refused_and_a_dead_holder_never_blocks(tmp_path):
    pool = mkpool(tmp_path, nvdevs=2, size="64M")
    cache = str(tmp_path / "cache0")
    first = Engine(tmp_path, pool, extra=["--cache", f"{cache}:64M"]).start()
    try:
        assert ofd_locked(first.proc.pid) >= {pool.split(",")[0], pool.split(",")[1], cache}
        second = second_serve(tmp_path, pool)
        assert second.returncode == 1
        line = second.stderr.strip()
        assert "\n" not in line and "Traceback" not in line
        assert f"vdev0 is in use by strata-engine pid {first.proc.pid}" in line, line
        assert f"host {socket.gethostname()}, pid {first.proc.pid}" in line, line
        # a mkpool over it (even --force) is refused the same way
        made = subprocess.run([engine_binary(), "mkpool", pool, "--size", "64M", "--force"],
                              capture_output=True, text=True, timeout=30)
        assert made.returncode == 1 and f"in use by strata-engine pid {first.proc.pid}" in made.stderr, made.stderr
        # a cache device another engine holds is refused too (a fresh pool of its own)
        (tmp_path / "o").mkdir()
        other = mkpool(tmp_path / "o", nvdevs=1, size="64M")
        shared = second_serve(tmp_path, other, ["--cache", f"{cache}:64M"])
        assert shared.returncode == 1 and f"cache0 is in use by strata-engine pid {first.proc.pid}" in shared.stderr, \
            shared.stderr
        assert first.alive()
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait()
    finally:
        first.stop()
    again = Engine(tmp_path, pool, extra=["--cache", f"{cache}:64M"]).start()   # the lock died with it
    try:
        assert again.alive()
    finally:
        assert again.stop() == 0
