"""`strata check ab --mode duet` with one pair of engine processes (--pairs 1; several
fresh pairs are checks/duet_pairs.py, which runs each pair with this module's
loads): A and B serve at the same time, and
strata-load sends every READ to both, back to back in a random order per pair,
with one request in flight per client (strata-load --pair-nfsport), so whatever
slows the shared machine lands on both sides within microseconds and the two
never serve that client at the same instant.

Both sides are started by checks/sides.py (engines or servers, in a random
order, each with its own collector). No side keeps an advantage for the whole
check: two paired loads run at once, one treating A as its first server and
one B, and the servers' CPU and the loads' CPU swap every block in an ABBA
order (checks/placement.py). The working set is written to both, then the
paired runs warm both for the profile's warm-up seconds and go on into the
measured seconds (same connections, no restart between), stopping early once
the p50 is decided (checks/sequential.py); each
side's measured seconds are exported as a self-contained archive (duet-A and
duet-B, kept with -o DIR) and judged from those archives alone, block by
block (strata.checks.compare_duet).
"""
import json
import math
import time
from pathlib import Path

import numpy as np

from strata.checks.baselines import one_sided
from strata.checks.compare import judge
from strata.checks.compare_duet import compare_duet, lag1, log_ratios
from strata.checks import sequential
from strata.checks.compare_rounds import min_pairs
from strata.checks.errors import CheckError
from strata.checks.placement import Rotation
from strata.checks.progress import CheckProgress
from strata.checks.servers import CPU_PROMISE
from strata.checks.sides import check_running, load_args, load_options, start_sides, whole
from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError
from strata.lab.load import Load
from strata.lab.logs import last_line, say
from strata.lab.window import export_window

LAG1_WARN = 0.3   # blocks this correlated make the sign-flip test too sure of itself


def paired_args(first, second, options: dict) -> list:
    """strata-load's command line: `first` as its server, `second` as the pair."""
    nfsport, mountport = second.ports
    return load_args(first, options) + ["--pair-nfsport", str(nfsport), "--pair-mountport", str(mountport),
                                        "--pair-export", second.export]


class LoadNeverRan(CheckError):
    """A load stopped on purpose before its run began (still connecting or looking its files up)."""


def _report_of(load: Load, stopped: bool) -> dict:
    """A load's report; one stopped early on purpose says "interrupted" and is read as it is,
    and one stopped before its run began wrote none (LoadNeverRan)."""
    if not stopped:
        return load.wait(timeout=120)
    load.stop()
    try:
        return json.loads(load.report_path.read_text())
    except (OSError, ValueError):
        raise LoadNeverRan(f"strata-load {load.report_path.stem[5:]} was stopped before its run began: "
                           f"{last_line(load.log_path)}") from None


def paired_run(pairs: list, options: dict, tag: str, sides: dict, rotation: Rotation, block_start: float = 0.0,
               block: int = 1, on_tick=None, should_stop=None) -> tuple:
    """Paired strata-load runs, one per (first, second) in pairs, at once, to their end or
    until should_stop() says so (asked about four times a second); the CPUs swap roles at
    every block boundary (counted from block_start) and on_tick() runs about once a second.
    Returns (reports, stopped)."""
    loads = [Load(first.work, f"{tag}-{first.name}{second.name}").start(paired_args(first, second, options))
             for first, second in pairs]
    rotation.loads = [load.proc.pid for load in loads]
    rotation.current = None
    try:
        last, stopped = 0.0, False
        while any(load.running() for load in loads):
            now = time.time()
            rotation.place(max(0, int((now - block_start) // block)))
            time.sleep(min(0.25, block - (now - block_start) % block + 0.001))
            check_running(sides)
            if time.monotonic() - last >= 1:
                last = time.monotonic()
                if on_tick:
                    on_tick()
            if should_stop and should_stop():
                stopped = True
                break
        return [_report_of(load, stopped) for load in loads], stopped
    finally:
        for load in loads:
            load.stop()


def running_estimate(prof, sides: dict, start: int, now: int, block_seconds: int):
    """(metric, effect, low, high) of p50 over the blocks collected so far, from the live
    archives: the mean log ratio with a normal 95% interval (a progress figure only;
    the verdict's test is compare_duet's)."""
    if now - start < 3 * block_seconds:
        return None
    d = busiest_p50_ratios(prof, sides, start, now, block_seconds)
    d = d[np.isfinite(d)] if d is not None else []
    if len(d) < 3:
        return None
    half = 1.96 * d.std(ddof=1) / math.sqrt(len(d))
    return "p50", math.expm1(d.mean()), math.expm1(d.mean() - half), math.expm1(d.mean() + half)


def _query(path: str, name: str, start: int, end: int):
    with Archive.open(path) as ar:
        return ar.query(name, start, end)


def busiest_p50_ratios(prof, sides: dict, start: int, now: int, block_seconds: int):
    """The p50 log ratios of the busiest latency key's blocks from start to now, read
    from the live archives; None before there are any."""
    name = next((n for n in prof.datasets if ".latency" in n), None)
    if name is None or now <= start:
        return None
    try:
        qa, qb = (_query(sides[s].archive, name, start, now) for s in "AB")
    except ArchiveError:
        return None
    keys = [k for k in qa.keys if k in qb.keys]
    if not keys or not len(qa.buckets):
        return None
    key = max(keys, key=lambda k: int(qa.counts[qa.keys.index(k)].sum()))
    return log_ratios(qa, qb, key, "p50", block_seconds)


def measure(prof, sides: dict, settings: dict, threshold: float, undo) -> tuple:
    """Starts both sides, writes both working sets, runs two paired loads at once (one
    sending each pair to A first, the other to B first, so neither side is always the
    first server of a client), the profile's warm-up seconds, then the measured ones,
    the CPUs swapping roles every block (checks/placement.py); stops early once the
    p50 is decided (checks/sequential.py). Returns (rotation, the order the sides were
    started in, start, end, the loads' reports, blocks planned)."""
    options = load_options(prof)
    options["threads"] = 1                        # one request in flight per client
    options["clients"] = settings["clients"]
    if options.get("rate"):
        options["rate"] = max(1, round(options["rate"] / 2))   # the two loads together give each side the rate
    started = start_sides(prof, sides, undo)
    if any(s.server for s in sides.values()):
        say("check ab", CPU_PROMISE)
    rotation = Rotation()
    rotation.servers = [s.pid for s in sides.values()]
    pairs = [(sides["A"], sides["B"]), (sides["B"], sides["A"])]
    warm, seconds, block = max(prof.warmup, 1), settings["seconds"], settings["block_seconds"]
    if prof.load.get("setup"):
        say("check ab", "writing both working sets")
        paired_run(pairs[:1], {**options, "setup_only": True}, "setup", sides, rotation)
    blocks = seconds // block
    early = settings.get("early_stop", True)
    say("check ab", f"duet: {warm}s warm-up, then up to {blocks} blocks of {block}s, A and B at once, "
         f"{options['profile']} with two loads of {options['clients']} client(s) (one sends each pair to A "
         f"first, one to B first) at {rate_per_side(options)} reads/s per side" +
         (f", servers and loads swapping CPUs {rotation.cpus[0]} and {rotation.cpus[1]} every block (ABBA)"
          if rotation.cpus else "") + (", stopping early once decided" if early else ""))
    began = time.time()
    start_guess = math.ceil(began) + warm
    alpha = 1 - settings["confidence"]
    with CheckProgress("blocks", blocks, block) as progress:
        decided_at = {}

        def tick():
            now = int(time.time()) - 1                # the collectors' last whole second
            progress.update(max(0, (now - start_guess) // block),
                            running_estimate(prof, sides, start_guess, now, block))

        def should_stop():
            done = max(0, (int(time.time()) - 1 - start_guess) // block)
            if not early or done < sequential.MIN_BLOCKS or done >= blocks or done in decided_at:
                return False
            d = busiest_p50_ratios(prof, sides, start_guess, start_guess + done * block, block)
            verdict = None if d is None else sequential.decided(d, threshold, alpha, blocks)
            decided_at[done] = verdict
            return verdict is not None

        sent, stopped = paired_run(pairs, {**options, "duration": warm + seconds + 1}, "duet", sides, rotation,
                                   start_guess, block, tick, should_stop)
        start = math.ceil(min(r["start_unix"] for r in sent)) + warm
        done = next((k for k, v in decided_at.items() if v), blocks) if stopped else blocks
        end = start + done * block
        time.sleep(max(0.0, end + 1.5 - time.time()))   # the collectors write second end-1
        progress.update(done, running_estimate(prof, sides, start, end, block))
    if stopped:
        say("check ab", f"stopped after {done} of {blocks} blocks: the p50's confidence sequence "
                        f"(alpha {alpha:g}) already decides {decided_at[done]!r}")
    for s in sides.values():
        s.coll.stop()
    return rotation, started, start, end, sent, blocks


def rate_per_side(options: dict):
    """What each side gets from the two loads together (reads/s), or "any" without a cap."""
    return 2 * options["rate"] if options.get("rate") else "any"


def export(prof, sides: dict, start: int, end: int, sent: list, outdir: Path) -> dict:
    """duet-A.archive and duet-B.archive (each side's measured seconds), and the two
    strata-loads' reports beside them as duet.load.json ({"loads": [A first, B first]})."""
    out = {}
    for name, s in sides.items():
        out[name] = outdir / f"duet-{name}.archive"
        export_window(s.archive, prof.datasets, start, end, str(out[name]))
    (outdir / "duet.load.json").write_text(json.dumps({"loads": sent}, indent=1))
    return out


def judge_duet(prof, archives: dict, block_seconds: int, threshold: float, confidence: float, correction: str):
    """Reads both sides' archives back and judges B against A block by block; also
    the lag-1 autocorrelation of the p50 log ratios of the busiest latency key."""
    results, series, lag = [], {}, None
    for name in prof.datasets:
        qa, qb = whole(archives["A"], name), whole(archives["B"], name)
        if qa.kind not in ("heatmap", "counter"):
            continue
        keys = sorted(set(qa.keys) | set(qb.keys))
        for key in keys:
            if key not in qa.keys or key not in qb.keys:
                results.append((name, one_sided(key, qa, qb, threshold)))
                continue
            kv, s = compare_duet(key, qa, qb, block_seconds, prof.metrics, confidence)
            results.append((name, kv))
            if s is not None:
                series[(name, key)] = s
        if qa.kind == "heatmap" and lag is None:
            shared = [k for k in qa.keys if k in qb.keys]
            if shared:
                key = max(shared, key=lambda k: int(qa.counts[qa.keys.index(k)].sum()))
                lag = lag1(log_ratios(qa, qb, key, "p50", block_seconds))
    return judge(results, threshold, confidence, correction), series, lag


def run(prof, sides: dict, settings: dict, threshold: float, undo, outdir: Path, keep: bool) -> tuple:
    """Duet mode with one pair of engine processes ([ab] pairs = 1) end to end: (judged
    results, p99 series per block, report fields)."""
    rotation, started, start, end, sent, planned = measure(prof, sides, settings, threshold, undo)
    archives = export(prof, sides, start, end, sent, outdir)
    block = settings["block_seconds"]
    results, series, lag = judge_duet(prof, archives, block, threshold, settings["confidence"],
                                      settings["correction"])
    blocks = max((kv.intervals[0] for _, kv in results if kv.metrics), default=0)
    tests = sum(len(kv.metrics) for _, kv in results)
    if blocks < min_pairs(settings["confidence"], max(tests, 1)):
        say("check ab", f"warning: {blocks} blocks cannot reach confidence {settings['confidence']} over {tests} tests")
    if lag is not None and lag > LAG1_WARN:
        say("check ab", f"warning: the blocks' p50 ratios are correlated (lag-1 autocorrelation {lag:.2f}), so the "
             f"interval is too narrow; use longer blocks (--block-seconds)")
    return results, series, {"design": "ab", "mode": "duet", "first_server": "both", "block_seconds": block,
                             "cpus": {**rotation.describe(), "swaps": rotation.swaps}, "blocks_planned": planned,
                             "started": started,
                             "sequential": {"method": "asymptotic confidence sequence (Waudby-Smith et al. 2024)",
                                            "alpha": round(1 - settings["confidence"], 6),
                                            "stopped_early": blocks < planned},
                             "blocks": blocks, "window": [start, end], "p50_lag1": lag,
                             **({"server_cpus": {"threads_pinned": [{n: rotation.pinned.get(s.pid, 0)
                                                                     for n, s in sides.items() if s.server}],
                                                 "promise": CPU_PROMISE}}
                                if any(s.server for s in sides.values()) else {}),
                             "archives": {k: str(p) if keep else p.name for k, p in archives.items()}}
