"""Servers other than the engine on a side of `strata check ab` (--a-server CMD):
the command template, the server it starts, and the profile's datasets seen
through the wire layer.

The command is run by `sh -c` in its own session after these placeholders are
filled: {nfsport} and {mountport} (free TCP ports on 127.0.0.1 that strata
picked for this side), {dir} (a fresh folder of this side) and {export} (the
path clients mount; default {dir}/export, made world-writable). A word `@FILE`
names a template: FILE is copied into {dir} with the same placeholders filled,
and the word becomes the copy's path (e.g. `ganesha.nfsd -F -f @ganesha.conf`).
The server is ready when {nfsport} (and {mountport}, when the command uses it)
accepts connections; it is stopped with SIGTERM to its session.
"""
import copy
import os
import re
import shlex
import subprocess
import time
from pathlib import Path

from strata.lab.logs import last_line
from strata.lab.ports import free_port, port_open
from strata.lab.process import stop

HOST = "127.0.0.1"
READY_TIMEOUT = 30
STOP_TIMEOUT = 10
TEMPLATE_WORD = re.compile(r"(?<!\S)@(\S+)")
WIRE_OF = {"nfs.ops": "wire.ops", "nfs.latency": "wire.latency", "nfs.size": "wire.size"}


CPU_PROMISE = ("a server's CPU swaps with the processes its command started (their threads, "
               "server_cpus.threads_pinned); work it hands to others (kernel threads such as nfsd's, a daemon "
               "that leaves its session) runs where the kernel puts it, so a CPU's extra load is balanced "
               "between the sides only for what was pinned")


class ServerError(RuntimeError):
    """The server command is wrong, or its server did not start; the message is one line."""


def wire_datasets(names: list) -> list:
    """The profile's datasets in wire terms: nfs.ops/latency/size become wire.*
    (filters and breakdown kept); wire.* stay; others have no wire view."""
    out = []
    for name in names:
        stat, bracket, rest = name.partition("[")
        if stat in WIRE_OF:
            out.append(WIRE_OF[stat] + bracket + rest)
        elif stat.startswith("wire."):
            out.append(name)
        else:
            raise ServerError(f"{name}: no wire view of it for a server other than the engine; "
                              "list nfs.ops/latency/size or wire.* datasets in [measure]")
    return out


class Server:
    """One side's server: the filled command running in its own session, logging to {dir}/server.log."""

    def __init__(self, side: str, template: str, work: Path, export: str | None):
        """Reads the @FILE templates (relative to the current folder); ServerError when one
        is unreadable or {nfsport} is nowhere."""
        self.side, self.template, self.work = side, template, Path(work)
        self.files = {}
        for word in TEMPLATE_WORD.findall(template):
            try:
                self.files[word] = Path(word).read_text()
            except (OSError, UnicodeDecodeError) as e:
                raise ServerError(f"server {side}: cannot read template {word}: "
                                  f"{getattr(e, 'strerror', None) or e}") from None
        text = template + "".join(self.files.values())
        if "{nfsport}" not in text:
            raise ServerError(f"--{side.lower()}-server: {{nfsport}} (the port strata gives the server) "
                              "is neither in the command nor in an @FILE template")
        self.uses_mountport = "{mountport}" in text
        self.export_template = export or "{dir}/export"
        self._place(self.work)

    def _place(self, work: Path):
        """This server's own folder {dir} and ports."""
        self.work, self.export = Path(work), ""
        self.nfsport, self.mountport = free_port(), free_port()
        self.export = self._fill(self.export_template)
        self.log_path = self.work / "server.log"
        self.proc = None

    def fresh(self, work: Path) -> "Server":
        """The same command as a new server: its own folder (work) and ports, not started."""
        new = copy.copy(self)
        new._place(work)
        return new

    def _fill(self, text: str) -> str:
        for key, value in (("{nfsport}", self.nfsport), ("{mountport}", self.mountport), ("{dir}", self.work)):
            text = text.replace(key, str(value))
        return text.replace("{export}", self.export)

    def command(self) -> str:
        """The filled command; each @FILE word becomes the path of its filled copy in {dir}."""
        def template(m):
            dest = self.work / Path(m.group(1)).name
            dest.write_text(self._fill(self.files[m.group(1)]))
            return shlex.quote(str(dest))
        return self._fill(TEMPLATE_WORD.sub(template, self.template))

    def start(self):
        if self.export.startswith(str(self.work)):
            Path(self.export).mkdir(parents=True, exist_ok=True)
            os.chmod(self.export, 0o1777)   # strata-load's clients (uids 10000 and up) create files there
        cmd = self.command()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(["sh", "-c", cmd], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                         cwd=self.work, start_new_session=True)
        ports = [self.nfsport] + ([self.mountport] if self.uses_mountport else [])
        deadline = time.monotonic() + READY_TIMEOUT
        while not all(port_open(p, HOST) for p in ports):
            if self.proc.poll() is not None:
                raise ServerError(f"server {self.side} exited {self.proc.returncode}: {last_line(self.log_path)}")
            if time.monotonic() > deadline:
                self.stop()
                raise ServerError(f"server {self.side} did not listen on 127.0.0.1:{ports[-1]} within "
                                  f"{READY_TIMEOUT}s: {last_line(self.log_path)}")
            time.sleep(0.2)
        return self

    def ports(self) -> tuple:
        """(nfsport, mountport) for strata-load; mountport None: the portmapper says."""
        return self.nfsport, self.mountport if self.uses_mountport else None

    def check(self):
        if self.proc is not None and self.proc.poll() is not None:
            raise ServerError(f"server {self.side} exited {self.proc.returncode}: {last_line(self.log_path)}")

    def stop(self):
        if self.proc is not None:
            stop(self.proc, timeout=STOP_TIMEOUT, group=True)
