"""The kernel's own NFS server (nfsd) as a lab server: one directory exported over
NFSv3 and NFSv4 on port 2049 to any client, with rpc.mountd on a fresh port and an
rpcbind when none runs. nfsd is one per machine (per network namespace), so the lab
starts it only where it is not serving already, and stop() undoes exactly what
start() did: the export, nfsd's threads, mountd, rpcbind, the nfsd file system's
mount. The module stays loaded. For `strata demo --server nfsd`."""
import shutil
import subprocess
from pathlib import Path

from strata.lab.ports import free_port, port_open, wait_port
from strata.lab.process import stop

INSTALL = "Debian nfs-kernel-server, rpcbind"
NFSD_FS = Path("/proc/fs/nfsd")
NFS_PORT = 2049
THREADS = 8


class NfsdError(RuntimeError):
    """nfsd (or mountd, rpcbind) could not start; the message is one line."""


def _run(*cmd: str) -> None:
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=120)
    except FileNotFoundError:
        raise NfsdError(f"{cmd[0]} is not installed ({INSTALL})") from None
    if proc.returncode != 0:
        raise NfsdError(f"{' '.join(cmd)}: {proc.stderr.strip().splitlines()[-1:] or proc.returncode}")


def _threads() -> int:
    try:
        return int((NFSD_FS / "threads").read_text())
    except (OSError, ValueError):
        return 0


class KernelNfsd:
    """The kernel's nfsd exporting `export` (a folder: mount a file system on it first)."""

    def __init__(self, export: str) -> None:
        self.export = export
        self.nfsport, self.mountport = NFS_PORT, free_port()
        self.client = f"*:{export}"
        self.mountd: subprocess.Popen | None = None
        self.rpcbind: subprocess.Popen | None = None
        self.mounted_fs = self.exported = self.started = False

    @staticmethod
    def missing() -> str | None:
        """Why the kernel's nfsd cannot run here, or None."""
        for tool in ("rpc.nfsd", "rpc.mountd", "exportfs", "rpcbind", "modprobe"):
            if not shutil.which(tool):
                return f"{tool} is not installed ({INSTALL})"
        if not Path("/sys/module/nfsd").exists() and \
                subprocess.run(["modprobe", "-n", "nfsd"], capture_output=True).returncode != 0:
            return "this kernel has no nfsd module"
        if _threads() > 0:
            return "the kernel's nfsd already serves here (the demo starts and stops its own)"
        return None

    def start(self) -> None:
        """Everything stop() undoes is recorded as it is made, so a failure part way is undone too."""
        _run("modprobe", "nfsd")
        if not (NFSD_FS / "threads").exists():
            _run("mount", "-t", "nfsd", "nfsd", str(NFSD_FS))
            self.mounted_fs = True
        if not port_open(111):
            self.rpcbind = subprocess.Popen(["rpcbind", "-f"], stdout=subprocess.DEVNULL,
                                            stderr=subprocess.DEVNULL, start_new_session=True)
            if not wait_port(111, self.rpcbind, 10) and not port_open(111):
                raise NfsdError("rpcbind did not start")
        _run("exportfs", "-o", "rw,no_root_squash,insecure,no_subtree_check", self.client)
        self.exported = True
        self.mountd = subprocess.Popen(["rpc.mountd", "-F", "-p", str(self.mountport)], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL, start_new_session=True)
        if not wait_port(self.mountport, self.mountd):
            raise NfsdError(f"rpc.mountd did not listen on port {self.mountport}")
        _run("rpc.nfsd", str(THREADS))
        self.started = True
        if not port_open(self.nfsport):
            raise NfsdError(f"nfsd did not listen on port {self.nfsport}")

    def alive(self) -> bool:
        return _threads() > 0 and self.mountd is not None and self.mountd.poll() is None

    def stop(self) -> None:
        """Undoes what start() did, in reverse order; each step even if one before failed."""
        if self.started:
            subprocess.run(["rpc.nfsd", "0"], capture_output=True, timeout=60)
            self.started = False
        if self.mountd:
            stop(self.mountd)
            self.mountd = None
        if self.exported:
            subprocess.run(["exportfs", "-u", self.client], capture_output=True, timeout=60)
            self.exported = False
        if self.rpcbind:
            stop(self.rpcbind)
            self.rpcbind = None
        if self.mounted_fs:
            subprocess.run(["umount", str(NFSD_FS)], capture_output=True, timeout=60)
            self.mounted_fs = False
