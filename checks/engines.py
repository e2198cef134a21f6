"""The engines a check runs: which strata-engine each side of `strata check ab` runs (a
binary, a build folder, or a git revision built into a temporary folder), and a private
engine on a fresh pool as a profile's [engine] describes it."""
import os
import subprocess
from pathlib import Path

from strata.lab import engine as lab_engine
from strata.lab.logs import say

EXPORT = "/check"   # the export a private engine serves

BUILD_TIMEOUT = 900


class EngineSourceError(RuntimeError):
    """The engine cannot be found or built; the message is one line."""


def from_path(path: str) -> str:
    """A strata-engine binary, or a folder holding one (itself, bin/ or build/bin/)."""
    p = Path(path)
    candidates = [p] if p.is_file() else [p / "strata-engine", p / "bin" / "strata-engine",
                                          p / "build" / "bin" / "strata-engine"]
    for c in candidates:
        if c.is_file() and os.access(c, os.X_OK):
            return str(c.resolve())
    raise EngineSourceError(f"{path}: no strata-engine there (give the binary or a build folder)")


def build_revision(repo: str, rev: str, dest: Path) -> str:
    """Exports `rev` of the git checkout `repo` into dest and builds its engine there."""
    def run(cmd, **kw):
        try:
            return subprocess.run(cmd, capture_output=True, timeout=BUILD_TIMEOUT, **kw)
        except subprocess.TimeoutExpired:
            raise EngineSourceError(f"{' '.join(cmd[:3])} took over {BUILD_TIMEOUT}s") from None

    commit = run(["git", "-C", repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], text=True)
    if commit.returncode != 0:
        raise EngineSourceError(f"{rev!r} is not a revision of {repo}")
    dest.mkdir(parents=True, exist_ok=True)
    archive = run(["git", "-C", repo, "archive", "--format=tar", commit.stdout.strip()])
    if archive.returncode != 0:
        raise EngineSourceError(f"git archive {rev}: {archive.stderr.decode().strip()}")
    unpack = run(["tar", "-x", "-C", str(dest)], input=archive.stdout)
    if unpack.returncode != 0:
        raise EngineSourceError(f"unpacking {rev}: {unpack.stderr.decode().strip()}")
    make = run(["make", "-C", str(dest), "-j2", "build/bin/strata-engine"], text=True)
    if make.returncode != 0:
        last = (make.stderr.strip() or make.stdout.strip()).splitlines()[-1:] or ["failed"]
        raise EngineSourceError(f"building the engine of {rev}: {last[0]}")
    return from_path(str(dest / "build" / "bin" / "strata-engine"))


def repo_root(start: str = ".") -> str:
    proc = subprocess.run(["git", "-C", start, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise EngineSourceError(f"{os.path.abspath(start)} is not in a git checkout (needed for --a-rev/--b-rev)")
    return proc.stdout.strip()


def vdev_paths(prof, work: Path) -> list:
    """The vdev files of a pool the profile's [engine] makes in work."""
    return [str(work / f"vdev{i}") for i in range(int(prof.engine.get("vdevs", 1)))]


def private_engine(prof, work: Path, undo, binary: str | None = None, delays: dict | None = None,
                   pool: tuple = ()):
    """The profile's [engine] on a fresh pool in work (pool: on these vdev files instead,
    a pool already made; binary: which strata-engine), with the profile's inject_delay
    and then `delays` (tier -> duration) applied; returns (host, nfsport, mountport,
    export, pid)."""
    e = prof.engine
    vdevs = list(pool) or vdev_paths(prof, work)
    if not pool:
        lab_engine.mkpool(vdevs, str(e.get("pool_size", "256M")), str(e.get("recordsize", "128k")), binary)
    extra = [str(a) for a in e.get("args", [])]
    if "cache_size" in e:
        extra += ["--cache", f"{work}/cache0:{e['cache_size']}"]
    eng = lab_engine.Engine(work, binary)
    # mode=1777: strata-load's clients (uids 10000 and up) create their files in the export root
    # (an engine of a revision before mode= made such roots already: --a-rev of an old one)
    mode = ",mode=1777" if lab_engine.takes_export_mode(binary) else ""
    eng.start(vdevs, f"{EXPORT}:allow=127.0.0.0/8,allow=10.213.0.0/16,no_root_squash{mode}",
              str(e.get("arc_max", "256M")), extra)
    undo.callback(eng.stop)
    for tier, delay in {**e.get("inject_delay", {}), **(delays or {})}.items():
        say("check", f"injecting {delay} into every {tier} {'reply' if tier == 'nfs' else 'I/O'}")
        eng.ctl("inject-delay", tier, delay)
    return "127.0.0.1", eng.nfsport, eng.mountport, EXPORT, eng.pid
