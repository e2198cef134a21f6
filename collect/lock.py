"""The collector's lock: `ARCHIVE.lock` next to the archive, held with flock, holding the PID.

Two collectors never write one archive; the kernel drops the lock when the
holder dies (even by kill -9), so a stale file never blocks a restart.
"""
import fcntl
import os

from strata.datasets.errors import ArchiveError


class CollectorLock:
    def __init__(self, archive_path: str):
        self.path = archive_path + ".lock"
        self.fd = None

    def acquire(self):
        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as e:
            raise ArchiveError(f"{self.path}: cannot create the collector lock ({e.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise ArchiveError(f"another collector (pid {holder}) is writing this archive "
                               f"(lock {self.path})") from None
        try:   # the PID is for people; the flock is the lock (a full disk may refuse the bytes)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError:
            pass
        self.fd = fd
        return self

    def renew(self):
        """Take the lock again if its file was removed (the archive's folder with it), or
        after release()."""
        try:
            same = self.fd is not None and os.path.samestat(os.fstat(self.fd), os.stat(self.path))
        except OSError:
            same = False
        if not same:
            old, self.fd = self.fd, None
            self.acquire()
            if old is not None:
                os.close(old)

    def release(self):
        if self.fd is not None:
            try:
                os.ftruncate(self.fd, 0)
            except OSError:
                pass
            os.close(self.fd)
            self.fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
