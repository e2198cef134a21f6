"""A private strata-engine: make its pool, serve one export on 127.0.0.1 ephemeral
ports, read its stats, drive its debug controls, stop it.

What the engine binary offers is read from its own --help (device models, an
L2ARC cache device, a log device, `ctl`), so callers can say plainly what a
run has and has not got.
"""
import json
import select
import subprocess
from dataclasses import dataclass
from pathlib import Path

from strata.lab.binaries import find_binary
from strata.lab.logs import last_line
from strata.lab.process import stop

START_TIMEOUT = 30


class EngineError(RuntimeError):
    """The engine could not be set up or did not answer; the message is one line."""


@dataclass(frozen=True)
class Features:
    vdev_model: bool   # serve --vdev-model hdd|ssd
    cache: bool        # serve --cache DEV (L2ARC)
    log: bool          # serve --log DEV (SLOG)
    ctl: bool          # strata-engine ctl ... (l2arc on|off, inject-delay)


def _help(*args, binary: str | None = None) -> str:
    proc = subprocess.run([binary or find_binary("strata-engine"), *args, "--help"], capture_output=True,
                          text=True, timeout=10)
    return proc.stdout + proc.stderr


def takes_export_mode(binary: str | None = None) -> bool:
    """Whether this strata-engine takes mode=OCTAL in --export (engines before it made
    export roots anyone could write)."""
    return "mode=OCTAL" in _help("serve", binary=binary)


def features() -> Features:
    serve, top = _help("serve"), _help()
    return Features(vdev_model="--vdev-model" in serve, cache="--cache" in serve, log="--log" in serve,
                    ctl=any(line.split()[1:2] == ["ctl"] for line in top.splitlines() if line.split()))


def mkpool(paths: list, size, recordsize: str, binary: str | None = None):
    """A fresh pool on `paths` (files are created); size per vdev, bytes or '256M'.
    binary: the strata-engine to use (default: this checkout's or PATH's)."""
    cmd = [binary or find_binary("strata-engine"), "mkpool", ",".join(paths), "--size", str(size),
           "--recordsize", recordsize, "--force"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise EngineError(f"strata-engine mkpool failed: {proc.stderr.strip() or proc.returncode}")


class Engine:
    """`strata-engine serve` as a child in its own session (Ctrl-C reaches us, not it).
    The stats socket stays at its default, /run/strata/engine-PID.sock, where
    strata-collect looks for the gauges."""

    def __init__(self, workdir: Path, binary: str | None = None):
        """binary: the strata-engine to run (default: this checkout's or PATH's)."""
        self.workdir = Path(workdir)
        self.binary = binary
        self.proc = None
        self.nfsport = self.mountport = None
        self.log_path = self.workdir / "engine.log"

    def _binary(self) -> str:
        return self.binary or find_binary("strata-engine")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def start(self, pool: list, export: str, arc_max: str, extra=()):
        port_file = self.workdir / "engine.port"
        cmd = [self._binary(), "serve", "--pool", ",".join(pool), "--export", export,
               "--listen", "127.0.0.1:0", "--mount-port", "0", "--port-file", str(port_file),
               "--no-rpcbind", "--arc-max", arc_max, *extra]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, start_new_session=True)
        line = self._first_line()
        fields = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
        try:
            self.nfsport = int(fields["nfs"].rsplit(":", 1)[1])
            self.mountport = int(fields["mount"].rsplit(":", 1)[1])
        except (KeyError, ValueError):
            self.stop()
            raise EngineError(f"strata-engine printed {line.strip()!r}, not its ports") from None
        return self

    def _first_line(self) -> str:
        ready, _, _ = select.select([self.proc.stdout], [], [], START_TIMEOUT)
        line = self.proc.stdout.readline().decode() if ready else ""
        if not line.startswith("listening"):
            self.stop()
            raise EngineError(f"strata-engine did not start: {self.log_tail()}")
        return line

    def log_tail(self) -> str:
        return last_line(self.log_path, "no log")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stats(self) -> dict:
        proc = subprocess.run([self._binary(), "stats", "--pid", str(self.pid)],
                              capture_output=True, text=True, timeout=10)
        if proc.returncode != 0:
            raise EngineError(f"strata-engine stats: {proc.stderr.strip() or proc.returncode}")
        try:
            return json.loads(proc.stdout)
        except ValueError:
            raise EngineError("strata-engine stats printed something that is not JSON") from None

    def ctl(self, *args) -> str:
        """`strata-engine ctl --pid PID ARGS...` (l2arc on|off, inject-delay l2arc 50us)."""
        proc = subprocess.run([self._binary(), "ctl", "--pid", str(self.pid), *args],
                              capture_output=True, text=True, timeout=10)
        if proc.returncode != 0:
            raise EngineError(f"strata-engine ctl {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
        return proc.stdout.strip()

    def stop(self, timeout: float = 30):
        """SIGTERM, then SIGKILL after `timeout` seconds."""
        if self.proc is None:
            return
        stop(self.proc, timeout=timeout)
        self.proc.stdout.close()
