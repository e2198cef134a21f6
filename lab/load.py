"""strata-load against a server, in the background, with its JSON report
(workloads/PROFILES.md) read back when it ends."""
import json
import signal
import subprocess
from pathlib import Path

from strata.lab.binaries import find_binary
from strata.lab.logs import last_line
from strata.lab.process import stop


class LoadError(RuntimeError):
    """strata-load failed; the message is one line."""


def arguments(server: str, nfsport: int, mountport: int, export: str, options: dict) -> list:
    """strata-load's command line: options maps flag names (without --, '_' or '-') to
    values; True is a bare flag, False/None leave it out. A port left None: the portmapper's."""
    args = [find_binary("strata-load"), "--server", server, "--export", export]
    if nfsport:
        args += ["--nfsport", str(nfsport)]
    if mountport:
        args += ["--mountport", str(mountport)]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value not in (False, None):
            args += [flag, str(value)]
    return args


class Load:
    """One strata-load process in its own session; start() returns at once."""

    def __init__(self, workdir: Path, tag: str):
        self.report_path = Path(workdir) / f"load-{tag}.json"
        self.log_path = Path(workdir) / f"load-{tag}.log"
        self.proc = None

    def start(self, args: list):
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(args + ["--json", str(self.report_path)], stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=log, start_new_session=True)
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait(self, timeout: float | None = None) -> dict:
        """The report; LoadError when strata-load failed or wrote none."""
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise LoadError(f"strata-load did not finish within {timeout:.0f}s") from None
        try:
            report = json.loads(self.report_path.read_text())
        except (OSError, ValueError):
            report = None
        if rc != 0 or report is None:
            why = (report or {}).get("error") or self._log_tail()
            raise LoadError(f"strata-load exited {rc}: {why}")
        return report

    def _log_tail(self) -> str:
        return last_line(self.log_path)

    def stop(self):
        """Ends a run early (SIGINT, then SIGKILL); its namespaces go with it."""
        if self.running():
            stop(self.proc, signal.SIGINT)
