"""Boots a Debian kernel (kernels.py) in a qemu TCG guest over this machine's own root
file system (read-only 9p under a tmpfs overlay, so build/ and .venv run unchanged), runs
one shell command inside with a writable run folder shared back at the same path, and
returns its output and exit status, within a time limit. The guest mounts a /tmp of its own;
the repository and the run folder stay visible at their paths when they lie under the host's
/tmp (a clone in /tmp). Nothing on the host changes but files under build/vm/ and the run folder."""
import gzip
import lzma
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import kernels

HERE = Path(__file__).resolve().parent
TMP = Path("/tmp")
BOOT_MODULES = ["virtio_pci", "9pnet_virtio", "9p", "overlay"]


class GuestError(Exception):
    """The guest could not be started or did not finish; the message is one line."""


@dataclass
class Run:
    kernel: str
    release: str
    rc: int
    output: str
    console: str
    seconds: float
    boot_seconds: float | None
    folder: Path


def _boot_module_files(kernel: str) -> list[Path]:
    root = kernels.fetch(kernel) / "root"
    r = subprocess.run(["modprobe", "-d", str(root), "-S", kernels.release(kernel), "--show-depends", "-a",
                        *BOOT_MODULES], capture_output=True, text=True, check=True)
    files = []
    for line in r.stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == "insmod" and Path(parts[1]) not in files:
            files.append(Path(parts[1]))
    return files


def initramfs(kernel: str) -> Path:
    """The kernel's busybox initramfs (cached; rebuilt when init.sh changes)."""
    out = kernels.fetch(kernel) / "initramfs.cpio.gz"
    init = HERE / "init.sh"
    if out.exists() and out.stat().st_mtime >= init.stat().st_mtime:
        return out
    with kernels.fetch_lock(), tempfile.TemporaryDirectory(prefix="strata-initramfs-") as tmp:
        t = Path(tmp)
        for d in ("bin", "proc", "sys", "dev", "ko"):
            (t / d).mkdir()
        shutil.copy("/bin/busybox", t / "bin" / "busybox")
        shutil.copy(init, t / "init")
        (t / "init").chmod(0o755)
        names = []
        for ko in _boot_module_files(kernel):
            name = ko.name.removesuffix(".xz")
            data = lzma.decompress(ko.read_bytes()) if ko.suffix == ".xz" else ko.read_bytes()
            (t / "ko" / name).write_bytes(data)
            names.append(name)
        (t / "modules").write_text("\n".join(names) + "\n")
        files = subprocess.run("find . | LC_ALL=C sort", shell=True, cwd=t, capture_output=True,
                               check=True).stdout
        archive = subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=t, input=files,
                                 capture_output=True, check=True).stdout
        tmp_out = out.with_suffix(".tmp")
        tmp_out.write_bytes(gzip.compress(archive, 6))
        tmp_out.rename(out)
    return out


def qemu_command(kernel: str, folder: Path, memory_mb: int) -> list[str]:
    return ["qemu-system-x86_64", "-machine", "q35,accel=tcg", "-cpu", "max", "-smp", "1",
            "-m", str(memory_mb), "-nodefaults", "-display", "none", "-no-reboot",
            "-kernel", str(kernels.vmlinuz(kernel)), "-initrd", str(initramfs(kernel)),
            "-append", f"console=ttyS0 panic=-1 quiet vmshare={folder}",
            "-serial", f"file:{folder / '.vm' / 'console'}",
            "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
            "-virtfs", f"local,path={folder},mount_tag=vmshare,security_model=none,multidevs=remap"]


def run(kernel: str, command: str, folder: Path, timeout: float = 600, memory_mb: int = 3072) -> Run:
    """Boots SERIES, runs COMMAND (a shell command, in FOLDER) and powers off."""
    folder = folder.resolve()
    if folder == TMP:
        raise GuestError(f"{folder}: the run folder cannot be /tmp itself (the guest mounts its own /tmp)")
    vm = folder / ".vm"
    shutil.rmtree(vm, ignore_errors=True)
    vm.mkdir(parents=True)
    # host paths under /tmp that stage2.sh binds into the guest's own /tmp
    (vm / "host_tmp").write_text("".join(f"{p}\n" for p in (kernels.REPO, folder) if TMP in p.parents))
    shutil.copy(HERE / "stage2.sh", vm / "stage2.sh")
    (vm / "command.sh").write_text(command + "\n")
    (vm / "modules_path").write_text(str(kernels.modules_dir(kernel)) + "\n")
    cmd = qemu_command(kernel, folder, memory_mb)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise GuestError(f"the {kernel} guest did not finish within {timeout:.0f} s "
                         f"(console: {vm / 'console'})") from None
    seconds = time.monotonic() - start
    console = (vm / "console").read_text(errors="replace") if (vm / "console").exists() else ""
    if not (vm / "rc").exists():
        why = (proc.stderr.strip().splitlines() or console.strip().splitlines() or ["no output"])[-1]
        raise GuestError(f"the {kernel} guest stopped before its command ended: {why}")
    boot = None
    for line in console.splitlines():
        if line.startswith("vm: up "):
            boot = float(line.split()[2])
    return Run(kernel, kernels.release(kernel), int((vm / "rc").read_text()),
               (vm / "output").read_text(errors="replace"), console, seconds, boot, folder)
