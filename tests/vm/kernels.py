"""Debian kernel packages for the kernel matrix. A kernel is named by a key: SERIES (the
newest point release of that series, e.g. "6.1": bookworm's own kernel) or SERIES-security
(the newest build a user who keeps the release up to date runs: its point release or its
security suite's, whichever is newer). Keys resolve to a package (linux-image-RELEASE) through
an apt configuration of the harness's own (its suites from the mirrors the machine's apt sources
name, sources.py; the machine's own package state untouched); resolutions are remembered for
RESOLVE_TTL seconds in build/vm/kernels/resolved.json, and each package is unpacked once, with
its modules indexed, under build/vm/kernels/RELEASE/."""
import contextlib
import fcntl
import json
import re
import shutil
import subprocess
import threading
import time
from pathlib import Path

from . import sources

REPO = Path(__file__).resolve().parents[2]
VMDIR = REPO / "build" / "vm"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
APT_ETC = Path("/etc/apt")   # the machine's apt sources, which name the mirrors
# key -> (series, the suites whose linux-image-amd64 may carry it: the newest of them wins)
KERNELS = {
    "5.10": ("5.10", ["bullseye"]),
    "5.10-security": ("5.10", ["bullseye", "bullseye-security"]),
    "6.1": ("6.1", ["bookworm"]),
    "6.1-security": ("6.1", ["bookworm", "bookworm-security"]),
    "6.12": ("6.12", ["bookworm-backports"]),
}
SUITES = sorted({s for _, suites in KERNELS.values() for s in suites})
RESOLVE_TTL = 12 * 3600


class KernelError(Exception):
    """A kernel that cannot be resolved, fetched or unpacked; the message is one line."""


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
    for suite in SUITES:
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


def _offers() -> list[tuple[str, str, str]]:
    """(suite, version of linux-image-amd64, the linux-image-RELEASE package it depends on),
    for every suite configured, after an apt-get update."""
    _write_sources()
    _apt("apt-get", "update")
    out = []
    for line in _apt("apt-cache", "madison", "linux-image-amd64").splitlines():
        parts = [p.strip() for p in line.split("|")]
        if len(parts) < 3:
            continue
        version, suite = parts[1], parts[2].split()[1].split("/")[0]
        show = _apt("apt-cache", "show", f"linux-image-amd64={version}")
        m = re.search(r"^Depends: (linux-image-\S+-amd64)\b", show, re.M)
        if m:
            out.append((suite, version, m.group(1)))
    return out


def _choose(key: str, offers: list[tuple[str, str, str]]) -> str:
    series, suites = KERNELS[key]
    best = None
    for suite, version, package in offers:
        rel = package.removeprefix("linux-image-")
        if suite in suites and (rel.startswith(series + ".") or rel.startswith(series + "-")):
            if best is None or _version_key(version) > _version_key(best[0]):
                best = (version, package)
    if best is None:
        raise KernelError(f"no Debian kernel package for {key} in {', '.join(suites)} "
                          f"(the apt sources under {APT_ETC} name their mirrors)")
    return best[1]


def _resolved_file() -> Path:
    return VMDIR / "kernels" / "resolved.json"


def package(key: str) -> str:
    """The linux-image-RELEASE package KEY names today (resolved at most every RESOLVE_TTL s)."""
    if key not in KERNELS:
        raise KernelError(f"unknown kernel {key!r} (known: {', '.join(KERNELS)})")
    path = _resolved_file()
    with fetch_lock():
        try:
            cached = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError):
            cached = {}
        if time.time() - cached.get("at", 0) > RESOLVE_TTL or key not in cached.get("packages", {}):
            offers = _offers()
            cached = {"at": time.time(), "packages": {k: _choose(k, offers) for k in KERNELS
                                                      if any(s in KERNELS[k][1] for s, _, _ in offers)}}
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(cached, indent=1) + "\n")
    if key not in cached["packages"]:
        raise KernelError(f"no Debian kernel package for {key} in {', '.join(KERNELS[key][1])}")
    return cached["packages"][key]


def release(key: str) -> str:
    """The kernel release (uname -r) KEY names, e.g. 6.1.0-56-amd64."""
    return package(key).removeprefix("linux-image-")


_held = threading.local()


@contextlib.contextmanager
def fetch_lock():
    """One resolution, fetch and initramfs build at a time (guests start in parallel, from
    threads and processes); a thread already holding it takes it again at no cost."""
    if getattr(_held, "depth", 0):
        _held.depth += 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    VMDIR.mkdir(parents=True, exist_ok=True)
    with open(VMDIR / "fetch.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        _held.depth = 1
        try:
            yield
        finally:
            _held.depth = 0


def fetch(key: str) -> Path:
    """The unpacked kernel KEY names (boot/vmlinuz-*, lib/modules/RELEASE with modules.dep),
    downloaded on first use."""
    rel = release(key)
    root = VMDIR / "kernels" / rel
    if (root / "release").exists():
        return root
    with fetch_lock():
        if not (root / "release").exists():
            _download(package(key), root)
    return root


def _download(pkg: str, root: Path) -> None:
    tmp = root.with_name(root.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    _apt("apt-get", "download", pkg, cwd=tmp)
    deb = next(tmp.glob("*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp / "root")], check=True)
    deb.unlink()
    rel = next((tmp / "root" / "lib" / "modules").iterdir()).name
    subprocess.run(["depmod", "-b", str(tmp / "root"), rel], check=True)
    (tmp / "release").write_text(rel + "\n")
    (tmp / "package").write_text(pkg + "\n")
    shutil.rmtree(root, ignore_errors=True)
    tmp.rename(root)


def vmlinuz(key: str) -> Path:
    return fetch(key) / "root" / "boot" / f"vmlinuz-{release(key)}"


def modules_dir(key: str) -> Path:
    return fetch(key) / "root" / "lib" / "modules" / release(key)


def distinct(keys: list[str]) -> list[tuple[str, str]]:
    """(key, release) for each kernel release KEYS name, in order: two keys naming one
    release (a point release with no security build after it) run once. "host" stays."""
    out, seen = [], set()
    for key in keys:
        rel = "host" if key == "host" else release(key)
        if rel not in seen:
            seen.add(rel)
            out.append((key, rel))
    return out
