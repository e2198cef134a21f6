"""`strata collect` into a private archive, as a child process.

The datasets are created in the archive first (strata.datasets API); the
collector then fills every active dataset once a second until stopped. It is
pointed at one engine process, so other engines on the machine (same binary,
same probes) do not leak into the data; a third-party server is followed with
`strata collect` options of its own (--fs-pid, --wire-port, ...).
"""
import signal
import subprocess
import sys
import time
from pathlib import Path

from strata.datasets.archive import Archive
from strata.lab.logs import last_line
from strata.lab.process import stop

STOP_TIMEOUT = 20
STRATA = [sys.executable, "-c", "from strata.cli.main import main; main()"]   # this Python's `strata`


class CollectError(RuntimeError):
    """The collector could not start or failed; the message is one line."""


def create_datasets(archive_path: str, names: list):
    with Archive.open(archive_path, readonly=False) as archive:
        have = {d.name for d in archive.datasets()}
        for name in names:
            if name not in have:
                archive.create(name)


class Collection:
    def __init__(self, workdir: Path, archive_path: str, engine_pid: int | None, options=()):
        """engine_pid None: the collector's default (the newest strata-engine process);
        options: more `strata collect` options."""
        self.archive_path = str(archive_path)
        self.engine_pid = engine_pid
        self.options = [str(o) for o in options]
        self.log_path = Path(workdir) / "collect.log"
        self.proc = None

    def start(self):
        cmd = [*STRATA, "collect", "--archive", self.archive_path]
        if self.engine_pid:
            cmd += ["--engine-pid", str(self.engine_pid)]
        cmd += self.options
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         start_new_session=True)
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def check(self):
        if self.proc is not None and self.proc.poll() is not None:
            raise CollectError(f"strata collect exited {self.proc.returncode}: {self.log_tail()}")

    def wait_for_data(self, dataset: str, timeout: float = 60):
        """Blocks until the collector has written a second of `dataset` (a second or two on a
        host; 10-20 s in an emulated guest on a busy machine, where the BPF programs' loads
        are verified at a fraction of the host's speed: the bound leaves room for that)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check()
            now = int(time.time())
            with Archive.open(self.archive_path) as archive:
                if archive.query(dataset, now - 60, now + 2).present.any():
                    return
            time.sleep(0.25)
        raise CollectError(f"strata collect wrote no {dataset} within {timeout:.0f}s: {self.log_tail()}")

    def log_tail(self) -> str:
        return last_line(self.log_path)

    def stop(self):
        """SIGINT: the collector writes the second in flight and exits."""
        if self.proc is not None:
            stop(self.proc, signal.SIGINT, STOP_TIMEOUT)
