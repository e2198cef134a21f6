"""`strata check ab --mode duet` (the default): A and B serve at the same time, and
one strata-load sends every READ to both, back to back in a random order per
pair, with one request in flight per client (strata-load --pair-nfsport), so
whatever slows the shared machine lands on both sides within microseconds and
the two never serve that client at the same instant.

Both sides are started by checks/sides.py (engines or servers, in a random
order, each with its own collector); which side strata-load treats as its
first server is drawn at random per check too. The working set is written to
both, then one paired run warms both for the profile's warm-up seconds and
goes on into the measured seconds (same connections, no restart between); each
side's measured seconds are exported as a self-contained archive (duet-A and
duet-B, kept with -o DIR) and judged from those archives alone, block by
block (strata.checks.compare_duet).
"""
import json
import math
import os
import random
import time
from pathlib import Path

import numpy as np

from strata.checks.baselines import one_sided
from strata.checks.compare import judge
from strata.checks.compare_duet import compare_duet, lag1, log_ratios
from strata.checks.compare_rounds import min_pairs
from strata.checks.progress import CheckProgress
from strata.checks.sides import check_running, load_args, load_options, start_sides, whole
from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError
from strata.lab.load import Load
from strata.lab.logs import say
from strata.lab.window import export_window

LAG1_WARN = 0.3   # blocks this correlated make the sign-flip test too sure of itself


def pin(pid: int, cpu: int):
    """Every thread of process pid (and of its children, for a server run through sh) on one CPU."""
    pids = [pid]
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            pids += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass                                  # a kernel without the children file: the process alone
    for p in pids:
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                os.sched_setaffinity(int(task.name), {cpu})
            except (ProcessLookupError, PermissionError):
                pass


def placement() -> tuple:
    """(servers' CPU, strata-load's CPU) drawn at random from the CPUs this process may use,
    or (None, None) on one CPU: both servers share one CPU (with one request in flight per
    client they never need it at once), so neither gets a better place than the other."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None, None
    server, load = random.sample(cpus, 2)
    return server, load


def paired_args(first, second, options: dict, cpu: int | None = None) -> list:
    """strata-load's command line: `first` as its server, `second` as the pair; on `cpu`."""
    nfsport, mountport = second.ports
    taskset = ["taskset", "-c", str(cpu)] if cpu is not None else []
    return taskset + load_args(first, options) + ["--pair-nfsport", str(nfsport),
                                                       "--pair-mountport", str(mountport),
                                                       "--pair-export", second.export]


def _run(first, second, options: dict, tag: str, sides: dict, cpu, on_tick=None) -> dict:
    """One paired strata-load run (on `cpu`) to its end; on_tick() about once a second meanwhile."""
    load = Load(first.work, tag).start(paired_args(first, second, options, cpu))
    try:
        last = 0.0
        while load.running():
            time.sleep(0.25)
            check_running(sides)
            if on_tick and time.monotonic() - last >= 1:
                last = time.monotonic()
                on_tick()
        return load.wait(timeout=120)
    finally:
        load.stop()


def running_estimate(prof, sides: dict, start: int, now: int, block_seconds: int):
    """(metric, effect, low, high) of p50 over the blocks collected so far, from the live
    archives: the mean log ratio with a normal 95% interval (a progress figure only;
    the verdict's test is compare_duet's)."""
    name = next((n for n in prof.datasets if ".latency" in n), None)
    if name is None or now - start < 3 * block_seconds:
        return None
    try:
        qa, qb = (_query(sides[s].archive, name, start, now) for s in "AB")
    except ArchiveError:
        return None
    keys = [k for k in qa.keys if k in qb.keys]
    if not keys or not len(qa.buckets):
        return None
    key = max(keys, key=lambda k: int(qa.counts[qa.keys.index(k)].sum()))
    d = log_ratios(qa, qb, key, "p50", block_seconds)
    d = d[np.isfinite(d)]
    if len(d) < 3:
        return None
    half = 1.96 * d.std(ddof=1) / math.sqrt(len(d))
    return "p50", math.expm1(d.mean()), math.expm1(d.mean() - half), math.expm1(d.mean() + half)


def _query(path: str, name: str, start: int, end: int):
    with Archive.open(path) as ar:
        return ar.query(name, start, end)


def measure(prof, sides: dict, settings: dict, undo) -> tuple:
    """Starts both sides, writes both working sets, runs the paired load: the profile's
    warm-up seconds, then the measured ones; returns (strata-load's first server,
    (servers' CPU, its CPU), start, end, strata-load's report)."""
    options = load_options(prof)
    options["threads"] = 1                        # one request in flight per client
    options["clients"] = settings["clients"]
    start_sides(prof, sides, undo)
    first, second = random.sample([sides["A"], sides["B"]], 2)
    server_cpu, load_cpu = placement()
    if server_cpu is not None:
        for s in sides.values():
            pin(s.pid, server_cpu)
    warm, seconds, block = max(prof.warmup, 1), settings["seconds"], settings["block_seconds"]
    if prof.load.get("setup"):
        say("check ab", "writing both working sets")
        _run(first, second, {**options, "setup_only": True}, "setup", sides, load_cpu)
    blocks = seconds // block
    say("check ab", f"duet: {warm}s warm-up, then {blocks} blocks of {block}s, A and B at once, {options['profile']} with "
         f"{options['clients']} client(s) at {options.get('rate') or 'any'} reads/s per side, strata-load's first "
         f"server {first.name}" + (f", servers on CPU {server_cpu}, strata-load on CPU {load_cpu}"
                                   if server_cpu is not None else ""))
    began = time.time()
    start_guess = math.ceil(began) + warm
    with CheckProgress("blocks", blocks, block) as progress:
        def tick():
            now = int(time.time()) - 1                # the collectors' last whole second
            progress.update(max(0, (now - start_guess) // block),
                            running_estimate(prof, sides, start_guess, now, block))
        sent = _run(first, second, {**options, "duration": warm + seconds + 1}, "duet", sides, load_cpu, tick)
        start = math.ceil(sent["start_unix"]) + warm
        end = start + blocks * block
        time.sleep(max(0.0, end + 1.5 - time.time()))   # the collectors write second end-1
        progress.update(blocks, running_estimate(prof, sides, start, end, block))
    for s in sides.values():
        s.coll.stop()
    return first, (server_cpu, load_cpu), start, end, sent


def export(prof, sides: dict, start: int, end: int, sent: dict, outdir: Path) -> dict:
    """duet-A.archive and duet-B.archive (each side's measured seconds), and
    strata-load's report beside them as duet.load.json."""
    out = {}
    for name, s in sides.items():
        out[name] = outdir / f"duet-{name}.archive"
        export_window(s.archive, prof.datasets, start, end, str(out[name]))
    (outdir / "duet.load.json").write_text(json.dumps(sent, indent=1))
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
    """Duet mode end to end: (judged results, p99 series per block, report fields)."""
    first, (server_cpu, load_cpu), start, end, sent = measure(prof, sides, settings, undo)
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
    return results, series, {"design": "ab", "mode": "duet", "first_server": first.name, "block_seconds": block,
                             "cpus": {"servers": server_cpu, "load": load_cpu},
                             "blocks": blocks, "window": [start, end], "p50_lag1": lag,
                             "archives": {k: str(p) if keep else p.name for k, p in archives.items()}}
