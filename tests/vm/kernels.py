"""Debian kernel packages for the kernel matrix, by series (5.10, 6.1, 6.12): the newest
build of each, fetched through an apt configuration of the harness's own (its suites from the
mirrors the machine's apt sources name, sources.py; the machine's own package state untouched),
unpacked with its modules indexed, and cached under build/vm/kernels/."""
import contextlib
import fcntl
import re
import shutil
import subprocess
from pathlib import Path

from . import sources

REPO = Path(__file__).resolve().parents[2]
VMDIR = REPO / "build" / "vm"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
APT_ETC = Path("/etc/apt")   # the machine's apt sources, which name the mirrors
# series -> the suites whose linux-image-amd64 carries it
SUITES = {
    "5.10": ["bullseye", "bullseye-security"],
    "6.1": ["bookworm", "bookworm-security"],
    "6.12": ["bookworm-backports"],
}


class KernelError(Exception):
    """A kernel that cannot be fetched or unpacked; the message is one line."""


def _apt_dir() -> Path:
    return VMDIR / "apt"


def _apt_options() -> list[str]:
    a = _apt_dir()
    return ["-o", f"Dir::Etc::sourcelist={a / 'sources.list'}", "-o", "Dir::Etc::sourceparts=-",
            "-o", f"Dir::State::Lists={a / 'lists'}", "-o", f"Dir::Cache={a / 'cache'}",
            "-o", "Dir::State::status=/dev/null", "-o", "APT::Sandbox::User=root", "-q"]


def _write_sources() -> None:
    a = _apt_dir()
    for sub in ("lists/partial", "cache/archives/partial"):
        (a / sub).mkdir(parents=True, exist_ok=True)
    try:
        found = sources.mirrors(APT_ETC)
    except sources.SourcesError as e:
        raise KernelError(str(e)) from None
    lines = []
    for suites in SUITES.values():
        for suite in suites:
            mirror = found["security"] if suite.endswith("-security") else found["debian"]
            if mirror:   # without a security archive in the sources, its suites are left out
                lines.append(f"deb [signed-by={KEYRING}] {mirror} {suite} main")
    (a / "sources.list").write_text("\n".join(lines) + "\n")


def _apt(*args: str, cwd: Path | None = None) -> str:
    cmd = [args[0], *_apt_options(), *args[1:]]
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise KernelError(f"{' '.join(args[:2])}: {last}")
    return r.stdout


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", version))


def newest_package(series: str) -> str:
    """The newest linux-image-SERIES.* package the configured suites offer."""
    _write_sources()
    _apt("apt-get", "update")
    best = None
    for stanza in _apt("apt-cache", "show", "linux-image-amd64").split("\n\n"):
        m = re.search(r"^Depends: (linux-image-(\S+)-amd64) \(= (\S+)\)", stanza, re.M)
        if m and (m.group(2) == series or m.group(2).startswith(series + ".")):
            if best is None or _version_key(m.group(3)) > _version_key(best[1]):
                best = (m.group(1), m.group(3))
    if best is None:
        raise KernelError(f"no Debian kernel package of series {series} in {', '.join(SUITES[series])}")
    return best[0]


def kernel_dir(series: str) -> Path:
    return VMDIR / "kernels" / series


@contextlib.contextmanager
def fetch_lock():
    """One fetch (and initramfs build) at a time: guests start in parallel."""
    VMDIR.mkdir(parents=True, exist_ok=True)
    with open(VMDIR / "fetch.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def fetch(series: str) -> Path:
    """The unpacked kernel of a series (boot/vmlinuz-*, lib/modules/RELEASE with modules.dep),
    downloaded on first use."""
    if series not in SUITES:
        raise KernelError(f"unknown kernel series {series!r} (known: {', '.join(SUITES)})")
    root = kernel_dir(series)
    if (root / "release").exists():
        return root
    with fetch_lock():
        if not (root / "release").exists():
            _download(series, root)
    return root


def _download(series: str, root: Path) -> None:
    package = newest_package(series)
    tmp = root.with_name(series + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    _apt("apt-get", "download", package, cwd=tmp)
    deb = next(tmp.glob("*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp / "root")], check=True)
    deb.unlink()
    release = next((tmp / "root" / "lib" / "modules").iterdir()).name
    subprocess.run(["depmod", "-b", str(tmp / "root"), release], check=True)
    (tmp / "release").write_text(release + "\n")
    (tmp / "package").write_text(package + "\n")
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)


def release(series: str) -> str:
    return (fetch(series) / "release").read_text().strip()


def vmlinuz(series: str) -> Path:
    return fetch(series) / "root" / "boot" / f"vmlinuz-{release(series)}"


def modules_dir(series: str) -> Path:
    return fetch(series) / "root" / "lib" / "modules" / release(series)
