"""nfs-ganesha (Debian's, FSAL VFS) as a lab server: one directory exported over
NFSv3/TCP (and NFSv4.x when asked) on 127.0.0.1 fresh ports, with an rpcbind of its own when none runs
(ganesha exits when it cannot register). For `strata demo --server ganesha` and
the tests that read a server strata does not control."""
import shutil
import subprocess
import tempfile
from pathlib import Path

from strata.lab.logs import last_line
from strata.lab.ports import free_port, port_open, wait_port
from strata.lab.process import stop

INSTALL = "Debian nfs-ganesha, nfs-ganesha-vfs, rpcbind"


class GaneshaError(RuntimeError):
    """ganesha (or its rpcbind) could not start; the message is one line."""


class Ganesha:
    """ganesha.nfsd exporting self.export (a fresh directory: mount a file system on it
    before start() to serve that one) over the NFS versions in protocols; NFSv4 clients
    find it at the pseudo path /strata."""

    def __init__(self, protocols: tuple[int, ...] = (3,)) -> None:
        self.protocols = ", ".join(map(str, protocols))
        self.dir = Path(tempfile.mkdtemp(prefix="strata-ganesha-"))
        self.export = self.dir / "export"
        self.export.mkdir()
        self.export.chmod(0o777)  # clients use distinct AUTH_SYS uids
        self.nfsport, self.mountport = free_port(), free_port()
        self.proc: subprocess.Popen | None = None
        self.rpcbind: subprocess.Popen | None = None
        self.log = self.dir / "ganesha.log"

    @staticmethod
    def missing() -> str | None:
        """Why ganesha cannot run here, or None."""
        for tool in ("ganesha.nfsd", "rpcbind"):
            if not shutil.which(tool):
                return f"{tool} is not installed ({INSTALL})"
        return None

    def config(self) -> str:
        return f"""
NFS_CORE_PARAM {{
    NFS_Port = {self.nfsport};
    MNT_Port = {self.mountport};
    Bind_Addr = 127.0.0.1;
    Protocols = {self.protocols};
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
}}
NFSV4 {{ Graceless = true; RecoveryRoot = {self.dir}/recovery; }}
EXPORT {{
    Export_Id = 1;
    Path = {self.export};
    Pseudo = /strata;
    Protocols = {self.protocols};
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    FSAL {{ Name = VFS; }}
}}
"""

    @property
    def pid(self) -> int:
        return self.proc.pid

    def start(self, new_session: bool = False) -> None:
        """new_session: ganesha (and rpcbind) in sessions of their own, so a Ctrl-C at the
        terminal reaches only the caller, which stops them in order."""
        if not port_open(111):
            self.rpcbind = subprocess.Popen(["rpcbind", "-f"], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, start_new_session=new_session)
            if not wait_port(111, self.rpcbind, 10) and not port_open(111):
                self.close()
                raise GaneshaError("rpcbind did not start")
        conf = self.dir / "ganesha.conf"
        conf.write_text(self.config())
        self.proc = subprocess.Popen(
            ["ganesha.nfsd", "-F", "-L", str(self.log), "-f", str(conf), "-p", str(self.dir / "ganesha.pid")],
            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=new_session)
        if not (wait_port(self.nfsport, self.proc) and wait_port(self.mountport, self.proc)):
            why = last_line(self.log, "no log")
            self.close()
            raise GaneshaError(f"nfs-ganesha did not start: {why}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Stops ganesha and its rpcbind; the directory stays (see close)."""
        if self.proc:
            stop(self.proc)
        if self.rpcbind:
            stop(self.rpcbind)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def args(self) -> list[str]:
        return ["--server", "127.0.0.1", "--nfsport", str(self.nfsport),
                "--mountport", str(self.mountport), "--export", str(self.export)]

    def url(self, name: str, version: int = 3) -> str:
        if version == 4:
            return f"nfs://127.0.0.1/strata/{name}?nfsport={self.nfsport}&version=4"
        return (f"nfs://127.0.0.1{self.export}/{name}?nfsport={self.nfsport}"
                f"&mountport={self.mountport}&version=3")
