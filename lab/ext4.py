"""A fresh ext4 file system on a block device, mounted on a folder, and unmounted
again: the disk a third-party server's export lives on in a lab run."""
import subprocess

from strata.lab.loopdev import LoopError


def _run(*cmd: str):
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise LoopError(f"{cmd[0]} is not installed (e2fsprogs, util-linux)") from None
    if proc.returncode != 0:
        raise LoopError(f"{' '.join(cmd)}: {proc.stderr.strip() or proc.returncode}")


def make_and_mount(dev: str, folder: str):
    # inode tables and journal written now, not by a background thread under the reads measured later
    _run("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev)
    _run("mount", dev, folder)


def unmount(folder: str):
    """umount; lazily when something still holds it (it goes at the last close)."""
    try:
        _run("umount", folder)
    except LoopError:
        _run("umount", "-l", folder)
