"""Profiles for `strata check run` and `strata check ab`: one TOML file says what to start, what load to
run, what to measure and how to judge it.

    description = "randread from the ARC"          # optional, shown in reports
    baseline = "../../tests/baselines/x.archive"   # default --baseline, relative to this file;
                                                   # a list of several runs lets their spread enter the test

    [engine]              # a private strata-engine on a temporary pool (the default)
    arc_max = "256M"      # --arc-max
    pool_size = "256M"    # per vdev file
    vdevs = 1
    recordsize = "8k"
    cache_size = "128M"   # an L2ARC cache device of that size (a scratch file); default none
    inject_delay = { l2arc = "50us" }   # `strata-engine ctl inject-delay` once started:
                          # a regression on purpose (tiers l2arc, zil, pool, nfs)
    args = []             # more `strata-engine serve` options, e.g. ["--workers", "16"]

    [server]              # or: an engine that is already running (then no [engine])
    host = "127.0.0.1"
    nfsport = 2049        # optional with mountport: else the portmapper
    mountport = 20048
    export = "/data"
    engine_pid = 1234     # which engine process the collector probes (default: the newest)

    [load]                # strata-load options (workloads/PROFILES.md); '_' or '-' alike
    profile = "randread"  # required
    io_size = "8k"
    files = 4
    file_size = "4m"      # or working_set
    clients = 2
    threads = 2
    rate = 2000           # RPCs/s cap: steadier than a closed loop on a busy machine
    setup = true          # write the working set first (not measured)

    [measure]
    warmup = 10           # seconds of load before measuring
    duration = 15         # seconds measured
    datasets = ["nfs.latency[op]", "nfs.ops[op]"]

    [check]               # defaults are `strata check`'s
    threshold = "5%"
    confidence = 0.99
    metrics = ["p50", "p99", "p99.9", "mean"]

    [ab]                  # `strata check ab`; defaults shown
    mode = "duet"         # duet: A and B serve at once under paired requests; rounds: they alternate
    seconds = 28          # duet: measured seconds, split over the process pairs
    block_seconds = 1     # duet: seconds per block
    pairs = 14            # duet: fresh engine pairs run one after another, the unit the test counts
    pair_warmup = 2       # duet: seconds of load before each pair's blocks are measured
    clients = 1           # duet: strata-load clients (in place of [load]'s), one READ pair in flight each
    rounds = 24           # rounds: ABBA... rounds, even; 12 pairs reach p < 0.001 (sign flips)
    round_seconds = 5     # measured seconds per round
    round_warmup = 1      # seconds of load before each round is measured
    threshold = "2%"      # smallest change that counts (significance comes from the rounds)
    confidence = 0.99
    correction = "bh"     # bh (Benjamini-Hochberg) or holm, over datasets, keys and metrics

Every key is checked; a wrong one is named in one line.
"""
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from strata.checks.compare import CORRECTIONS, METRICS

LOAD_KEYS = {"profile", "io_size", "files", "file_size", "working_set", "clients", "threads", "rate", "stable",
             "step_interval", "read_pct", "netns", "seed", "setup"}
ENGINE_KEYS = {"arc_max", "pool_size", "vdevs", "recordsize", "args", "cache_size", "inject_delay"}
DELAY_TIERS = {"l2arc", "zil", "pool", "nfs"}
SERVER_KEYS = {"host", "nfsport", "mountport", "export", "engine_pid"}
MEASURE_KEYS = {"warmup", "duration", "datasets"}
CHECK_KEYS = {"threshold", "confidence", "metrics"}
AB_KEYS = {"mode", "seconds", "block_seconds", "pairs", "pair_warmup", "clients", "rounds", "round_seconds",
           "round_warmup", "threshold", "confidence", "correction"}
AB_MODES = ("duet", "rounds")
TOP_KEYS = {"description", "baseline", "engine", "server", "load", "measure", "check", "ab"}


class ProfileError(ValueError):
    """The profile is unreadable or wrong; the message is one line."""


@dataclass
class Profile:
    path: Path
    description: str = ""
    baselines: list = field(default_factory=list)     # Paths
    engine: dict = field(default_factory=dict)
    server: dict | None = None
    load: dict = field(default_factory=dict)
    warmup: int = 10
    duration: int = 15
    datasets: list = field(default_factory=list)
    threshold: str = "5%"
    confidence: float = 0.99
    metrics: list = field(default_factory=lambda: list(METRICS))
    ab: dict = field(default_factory=lambda: {"mode": "duet", "seconds": 28, "block_seconds": 1, "pairs": 14,
                                              "pair_warmup": 2, "clients": 1,
                                              "rounds": 24, "round_seconds": 5, "round_warmup": 1,
                                              "threshold": "2%", "confidence": 0.99, "correction": "bh"})


def _table(data: dict, name: str, allowed: set) -> dict:
    value = data.get(name, {})
    if not isinstance(value, dict):
        raise ProfileError(f"[{name}] must be a table")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise ProfileError(f"[{name}] has no key {unknown[0]!r}; keys: {', '.join(sorted(allowed))}")
    return dict(value)


def _int(section: dict, key: str, where: str, default: int, low: int, high: int) -> int:
    value = section.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ProfileError(f"{where}.{key} must be a whole number from {low} to {high}, not {value!r}")
    return value


def load(path: str) -> Profile:
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text())
    except OSError as e:
        raise ProfileError(f"cannot read {path}: {e.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ProfileError(f"{path} is not valid TOML: {e}") from None
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise ProfileError(f"{path}: unknown key {unknown[0]!r}; keys: {', '.join(sorted(TOP_KEYS))}")
    prof = Profile(path=p, description=str(data.get("description", "")))
    if "baseline" in data:
        listed = data["baseline"] if isinstance(data["baseline"], list) else [data["baseline"]]
        if not listed or not all(isinstance(b, str) for b in listed):
            raise ProfileError("baseline must be a file name or a list of file names")
        prof.baselines = [(p.parent / b).resolve() for b in listed]
    if isinstance(data.get("load"), dict):
        data["load"] = {k.replace("-", "_"): v for k, v in data["load"].items()}
    loadopts = _table(data, "load", LOAD_KEYS)
    if "profile" not in loadopts:
        raise ProfileError(f"{path}: [load] needs profile = \"randread\" (or another strata-load profile)")
    prof.load = loadopts
    prof.engine = _table(data, "engine", ENGINE_KEYS)
    if not isinstance(prof.engine.get("args", []), list):
        raise ProfileError("engine.args must be a list of strings")
    delays = prof.engine.get("inject_delay", {})
    if not isinstance(delays, dict) or any(t not in DELAY_TIERS or not isinstance(d, str) for t, d in delays.items()):
        raise ProfileError(f"engine.inject_delay must map tiers ({', '.join(sorted(DELAY_TIERS))}) "
                           "to durations such as \"50us\"")
    if "server" in data:
        if "engine" in data:
            raise ProfileError(f"{path}: give [engine] (start one) or [server] (use one), not both")
        prof.server = _table(data, "server", SERVER_KEYS)
        for key in ("host", "export"):
            if not isinstance(prof.server.get(key), str):
                raise ProfileError(f"server.{key} is required (a string)")
    measure = _table(data, "measure", MEASURE_KEYS)
    prof.warmup = _int(measure, "warmup", "measure", 10, 0, 3600)
    prof.duration = _int(measure, "duration", "measure", 15, 3, 86400)
    prof.datasets = measure.get("datasets", ["nfs.latency[op]", "nfs.ops[op]"])
    if not isinstance(prof.datasets, list) or not prof.datasets or not all(isinstance(d, str) for d in prof.datasets):
        raise ProfileError("measure.datasets must be a non-empty list of dataset names")
    check = _table(data, "check", CHECK_KEYS)
    prof.threshold = str(check.get("threshold", prof.threshold))
    confidence = check.get("confidence", prof.confidence)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.5 <= confidence <= 0.9999:
        raise ProfileError(f"check.confidence must be between 0.5 and 0.9999, not {confidence!r}")
    prof.confidence = float(confidence)
    prof.metrics = check.get("metrics", prof.metrics)
    if not isinstance(prof.metrics, list) or not prof.metrics or any(m not in METRICS for m in prof.metrics):
        raise ProfileError(f"check.metrics must be a list drawn from {', '.join(METRICS)}")
    _ab(prof, _table(data, "ab", AB_KEYS))
    return prof


def _ab(prof: Profile, ab: dict):
    out = prof.ab
    out["mode"] = ab.get("mode", out["mode"])
    if out["mode"] not in AB_MODES:
        raise ProfileError(f"ab.mode must be one of {', '.join(AB_MODES)}, not {out['mode']!r}")
    out["seconds"] = _int(ab, "seconds", "ab", out["seconds"], 6, 86400)
    out["block_seconds"] = _int(ab, "block_seconds", "ab", out["block_seconds"], 1, 3600)
    out["pairs"] = _int(ab, "pairs", "ab", out["pairs"], 1, 100)
    out["pair_warmup"] = _int(ab, "pair_warmup", "ab", out["pair_warmup"], 0, 3600)
    out["clients"] = _int(ab, "clients", "ab", out["clients"], 1, 254)
    out["rounds"] = _int(ab, "rounds", "ab", out["rounds"], 6, 1000)
    if out["rounds"] % 2:
        raise ProfileError(f"ab.rounds must be even (pairs of A and B rounds), not {out['rounds']}")
    out["round_seconds"] = _int(ab, "round_seconds", "ab", out["round_seconds"], 2, 3600)
    out["round_warmup"] = _int(ab, "round_warmup", "ab", out["round_warmup"], 0, 3600)
    out["threshold"] = str(ab.get("threshold", out["threshold"]))
    confidence = ab.get("confidence", out["confidence"])
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0.5 <= confidence <= 0.9999:
        raise ProfileError(f"ab.confidence must be between 0.5 and 0.9999, not {confidence!r}")
    out["confidence"] = float(confidence)
    out["correction"] = ab.get("correction", out["correction"])
    if out["correction"] not in CORRECTIONS:
        raise ProfileError(f"ab.correction must be one of {', '.join(CORRECTIONS)}")
