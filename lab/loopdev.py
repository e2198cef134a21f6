"""Loop devices over temporary files, so a pool's I/O shows up at the block layer
as its own device (disk.latency[device] = loopN)."""
import os
import subprocess


class LoopError(RuntimeError):
    """losetup failed; the message is one line."""


def _losetup(*args) -> str:
    try:
        proc = subprocess.run(["losetup", *args], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise LoopError("losetup is not installed (util-linux)") from None
    if proc.returncode != 0:
        raise LoopError(f"losetup {' '.join(args)}: {proc.stderr.strip() or 'failed'}")
    return proc.stdout.strip()


def attach(path: str, size: int) -> str:
    """Create (sparse) file `path` of `size` bytes and attach it; returns /dev/loopN."""
    with open(path, "wb") as f:
        f.truncate(size)
    return _losetup("--find", "--show", "--direct-io=on", path)


def detach(dev: str, backing: str):
    """Detach dev if it is still backed by `backing` (once freed, the number may be
    someone else's). When something holds it open the kernel detaches it at the
    last close (autoclear), so calling this early is how a killed run leaks nothing."""
    if os.path.exists(dev) and _backing(dev) == os.path.realpath(backing):
        _losetup("--detach", dev)


def _backing(dev: str) -> str:
    name = os.path.basename(dev)
    try:
        with open(f"/sys/block/{name}/loop/backing_file") as f:
            return f.read().strip()
    except OSError:
        return ""


def name(dev: str) -> str:
    """The block layer's name for dev: /dev/loop3 -> loop3."""
    return os.path.basename(dev)
