"""A duet in several fresh process pairs (`strata check ab`, [ab] pairs > 1, the default).

On a shared machine one pair of engine processes keeps a bias of a few percent
through every block it serves, whichever CPU it runs on; measured with one pair,
that bias is a hidden offset the check's interval knows nothing of. So the
measured seconds are split over `pairs` pairs run one after another: each pair
is both sides started afresh (engines and collectors, in a random order, each
engine on a fresh copy of a pool its side's engine wrote the working set to once
per check, its ARC filled by reading the set back: checks/pools.py; a side
without a pool to copy writes its set every pair), `pair_warmup` seconds of
paired load, then its
share of the blocks (the CPUs swapping every block as in checks/duet.py), and
both sides stopped. The pairs are the clusters of the test
(checks/compare_pairs.py), so the per-pair bias is part of the noise the
interval measures.

Stopping early: the check looks at its p50 twice, after half its pairs (at least
compare_pairs.MIN_PAIRS) and after the last, and spends its error rate over the
looks with the O'Brien-Fleming-type spending function of Lan & DeMets (1983),
alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)) at the share t of the pairs seen:
the look at half the pairs gets alpha(1/2) (0.00027 of a 0.01), the last look
the rest (0.00973), so an early stop needs an overwhelming interval and the last
look is nearly as sure as a check without looks. The looks' error rates add up
to alpha, so by the union bound a verdict at any look is wrong with probability
at most 1 - confidence in all. It stops at the first look whose interval decides
(worse/better beyond the threshold, or inside +-threshold) and whose test over
every metric, at that look's error rate, would not end "inconclusive": a look
never stops on a p50 decision the verdict then drops. Without early stopping
there is one look at the full error rate.
"""
import contextlib
import dataclasses
import json
import math
import threading
import time
from pathlib import Path

from scipy import stats

from strata.checks import duet, pools, servers
from strata.checks.compare import judge
from strata.checks.compare_duet import log_ratios
from strata.checks.errors import CheckError
from strata.checks.noise import apply_floor
from strata.checks.compare_pairs import MIN_PAIRS, compare_pairs, pair_p50_means, trimmed_t_test
from strata.checks.baselines import one_sided
from strata.checks.placement import Rotation
from strata.checks.progress import CheckProgress
from strata.checks.report import overall
from strata.checks.sequential import verdict
from strata.checks.sides import first_collected, first_stored, load_options, start_sides, wait_for_second, whole
from strata.lab.logs import say
from strata.lab.window import export_window

START_MARGIN = 0.5    # seconds the loads are given to connect before the warm-up counts
LOAD_TAIL = 0.2       # seconds the loads run past the last block
MAX_RERUNS = 3        # pairs a check runs again (PairTooLate) before it gives up
MIN_WARMUP = 1        # seconds of load a pair whose loads started late still gets before its blocks
COLLECTOR_TIMEOUT = 20   # seconds past the planned start a pair waits for its collectors' first second


def looks(pairs: int, early: bool) -> list:
    """The pair counts after which the check judges its p50."""
    if not early:
        return [pairs]
    return sorted({max(MIN_PAIRS, math.ceil(pairs / 2)), pairs})


def spent(plan: list, alpha: float) -> list:
    """The error rate of each look of plan (pair counts, the last the planned total):
    the increments of the O'Brien-Fleming-type spending function, summing to alpha."""
    z = stats.norm.ppf(1 - alpha / 2)
    cumulative = [2 - 2 * stats.norm.cdf(z / math.sqrt(n / plan[-1])) for n in plan]
    return [float(c - prev) for c, prev in zip(cumulative, [0.0] + cumulative[:-1])]


def decided(means, threshold: float, confidence: float) -> str | None:
    """"worse"/"better" when the interval of the pairs' p50 means excludes 0 with the
    effect beyond the threshold, "same" when it lies inside ±threshold, else None."""
    centre, lo, hi, _ = trimmed_t_test(means, confidence)
    return verdict(math.expm1(centre), math.expm1(lo), math.expm1(hi), threshold)


def fresh_sides(sides: dict, pair: int) -> dict:
    """Copies of both sides with a work folder of their own for process pair `pair` (a
    server side: the same command as a new server, its own folder and ports)."""
    out = {}
    for name, s in sides.items():
        work = s.work / f"pair{pair}"
        work.mkdir()
        server = s.server.fresh(work) if s.server else None
        out[name] = dataclasses.replace(s, work=work, archive="", host="", ports=(), coll=None, pid=None, pool=(),
                                        server=server)
    return out


def pair_options(prof, settings: dict) -> dict:
    """The options of a pair's paired loads: one request in flight per client, the profile's
    rate split over the two loads."""
    options = load_options(prof)
    options["threads"] = 1
    options["clients"] = settings["clients"]
    if options.get("rate"):
        options["rate"] = max(1, round(options["rate"] / 2))
    return options


def later_start(origin: int, earliest: int, block: int) -> int:
    """The first start at or after `earliest` an even number of blocks from origin (the
    rotation's block 0): its blocks then fall on both CPU placements alike (ABBA)."""
    k = max(0, -(-(earliest - origin) // block))
    return origin + (k + k % 2) * block


class PairTooLate(CheckError):
    """A pair's loads started too late to measure a block; the check runs the pair again."""


def loads_window(sent: list, origin: int, start: int, blocks: int, warm: int, block: int) -> tuple:
    """(start, end, warm-up) of a pair's measured window once its loads' reports (sent) are in,
    the window planned at start for `blocks` blocks: when the loads began late (a loaded machine)
    it keeps at least MIN_WARMUP s of load before its blocks, by moving later an even number of
    blocks from origin and ending when the first load ended; warm-up: the seconds of load before
    a window whose loads began late, else None. start >= end: no whole block is left."""
    end = start + blocks * block
    began = math.ceil(max(r["start_unix"] for r in sent))    # the first whole second both loads ran
    if began + warm <= start:
        return start, end, None
    if began + MIN_WARMUP > start:
        start = later_start(origin, began + MIN_WARMUP, block)
        end = min(end, math.floor(min(r["start_unix"] + r["duration_s"] for r in sent)))
    return start, end, start - began


def one_pair(prof, base: dict, settings: dict, n: int, blocks: int, outdir: Path, progress, done: int,
             previous: threading.Thread | None = None, written: dict | None = None, folder: int = 0) -> tuple:
    """Runs process pair n (1-based) for `blocks` blocks; returns ({"A": archive, "B": archive,
    "started": order, "swaps": CPU swaps, "cpus": rotation, "loads": reports}, the thread
    stopping both sides, to be joined). previous: the thread stopping the pair before,
    joined before this pair's warm-up begins; written: each side's pool with the working
    set (checks/pools.py), which the pair's engines start on copies of; folder: the number
    of its work folders (n unless a pair was run again). PairTooLate when its loads
    started too late to leave a block.

    Only the warm-up and the blocks are paid in load: the collectors attach while the
    working sets are copied and read back (or written) and the warm-up runs; the measured
    window starts after the warm-up (the next whole second at least START_MARGIN away,
    plus the warm-up) or, when a collector is slower (a loaded machine, a server side's
    wire collectors), after the first second both stored, an even number of blocks later
    (later_start); the loads are stopped as soon as
    its last block has ended, its archives are exported as soon as both collectors stored
    that block, and the engines and collectors are stopped in the background while the
    next pair sets up (nothing is measured then)."""
    sides = fresh_sides(base, folder or n)
    block, warm = settings["block_seconds"], settings["pair_warmup"]
    options = pair_options(prof, settings)
    undo = contextlib.ExitStack()
    undo.callback(pools.remove_pools, sides)
    try:
        if written:
            pools.copy_pools(written, sides)
        started = start_sides(prof, sides, undo, wait=False)
        rotation = Rotation()
        rotation.servers = [s.pid for s in sides.values()]
        pairs = [(sides["A"], sides["B"]), (sides["B"], sides["A"])]
        if written:
            pools.fill_arcs(sides, options)
        elif prof.load.get("setup"):
            duet.paired_run(pairs[:1], {**options, "setup_only": True}, "setup", sides, rotation)
        if previous is not None:
            previous.join()
        origin = math.ceil(time.time() + START_MARGIN) + warm     # the rotation's block 0, the earliest start
        window = {"start": origin, "ready": False}

        def tick():
            progress.update(done + max(0, (int(time.time()) - 1 - window["start"]) // block))

        def should_stop():
            """Until both collectors have stored a second, moves the window past it (by an even number
            of blocks, so its blocks keep both CPU placements alike); then, whether its end has passed."""
            if not window["ready"]:
                first = first_stored(prof, sides, origin - warm - 60)
                if first is None:
                    if time.time() > origin + COLLECTOR_TIMEOUT:
                        raise CheckError(f"process pair {n}: a collector stored nothing within "
                                         f"{COLLECTOR_TIMEOUT}s of the warm-up")
                    return False
                window["start"], window["ready"] = later_start(origin, first + 1, block), True
            return time.time() >= window["start"] + blocks * block + LOAD_TAIL

        try:
            sent, _ = duet.paired_run(pairs, {**options, "duration": warm + blocks * block + COLLECTOR_TIMEOUT + 2},
                                      "duet", sides, rotation, origin, block, tick, should_stop)
        except duet.LoadNeverRan as e:
            raise PairTooLate(f"process pair {n} measured no whole block ({e})") from None
        start, end, warmed = loads_window(sent, origin, window["start"], blocks, warm, block)
        if warmed is not None:
            say("check ab", f"pair {n}: its loads started late; {warmed}s of warm-up before its blocks")
        if start >= end:
            raise PairTooLate(f"process pair {n} measured no whole block (its loads started too late)")
        wait_for_second(prof, sides, end - 1)
        first = first_collected(prof, sides, start, end)
        if first > start:
            say("check ab", f"pair {n}: a collector was ready {first - start}s into the measured window; "
                            f"its first {(first - start + block - 1) // block} block(s) are left out")
            start += (first - start + block - 1) // block * block
        if start >= end:
            raise PairTooLate(f"process pair {n} measured no whole block (its loads or collectors started too late)")
        out = {"started": started, "swaps": rotation.swaps, "cpus": rotation.describe(), "loads": sent,
               "server_threads": {name: rotation.pinned.get(s.pid, 0) for name, s in sides.items() if s.server}}
        for name, s in sides.items():
            out[name] = outdir / f"duet-{name}-{n}.archive"
            export_window(s.archive, prof.datasets, start, end, str(out[name]))
    except BaseException:
        undo.close()
        raise
    progress.update(done + blocks)
    closer = threading.Thread(target=undo.close, name=f"stop-pair-{n}")
    closer.start()
    return out, closer


def busiest_key(prof, archives: list):
    """(dataset, key) of the busiest latency key both sides hold in the first pair."""
    name = next((n for n in prof.datasets if ".latency" in n), None)
    if name is None:
        return None
    qa, qb = whole(archives[0]["A"], name), whole(archives[0]["B"], name)
    keys = [k for k in qa.keys if k in qb.keys]
    if not keys or not len(qa.buckets):
        return None
    return name, max(keys, key=lambda k: int(qa.counts[qa.keys.index(k)].sum()))


def final_verdict(prof, archives: list, block: int, threshold: float, confidence: float, correction: str) -> str:
    """The verdict the check would give if it stopped now (the test over every metric, then the
    noise floor): a look stops only on a p50 decision this keeps, never on one that would end
    "inconclusive"."""
    results, _ = judge_pairs(prof, archives, block, threshold, confidence, correction)
    apply_floor(results, threshold)
    return overall(results)


def p50_means(prof, archives: list, block: int):
    """The pairs' mean p50 log ratios of the busiest latency key (None without one)."""
    busiest = busiest_key(prof, archives)
    if busiest is None:
        return None
    name, key = busiest
    return pair_p50_means([log_ratios(whole(p["A"], name), whole(p["B"], name), key, "p50", block)
                           for p in archives])


def judge_pairs(prof, archives: list, block: int, threshold: float, confidence: float, correction: str):
    """Reads every pair's archives back and judges B against A across the pairs."""
    results, series = [], {}
    for name in prof.datasets:
        per_pair = [(whole(p["A"], name), whole(p["B"], name)) for p in archives]
        if per_pair[0][0].kind not in ("heatmap", "counter"):
            continue
        keys_a = set().union(*(qa.keys for qa, _ in per_pair))
        keys_b = set().union(*(qb.keys for _, qb in per_pair))
        for key in sorted(keys_a | keys_b):
            if key not in keys_a or key not in keys_b:
                results.append((name, one_sided(key, per_pair[0][0], per_pair[0][1], threshold)))
                continue
            kv, s = compare_pairs(key, per_pair, block, prof.metrics, confidence)
            results.append((name, kv))
            if s is not None:
                series[(name, key)] = s
    return judge(results, threshold, confidence, correction), series


def run(prof, sides: dict, settings: dict, threshold: float, undo, outdir: Path, keep: bool) -> tuple:
    """Duet mode in process pairs end to end: (judged results, p99 series per block, report fields)."""
    pairs, block = settings["pairs"], settings["block_seconds"]
    blocks = settings["seconds"] // block // pairs
    early = settings.get("early_stop", True)
    plan = looks(pairs, early)
    alphas = spent(plan, 1 - settings["confidence"])
    say("check ab", f"duet in {pairs} fresh process pairs, one after another: each {settings['pair_warmup']}s "
                    f"warm-up, then {blocks} blocks of {block}s, A and B at once, servers and loads swapping CPUs "
                    f"every block (ABBA); judged across the pairs after pair {' and '.join(map(str, plan))} "
                    f"(alpha {' and '.join(f'{a:.2g}' for a in alphas)})")
    if any(s.server for s in sides.values()):
        say("check ab", servers.CPU_PROMISE)
    archives, verdict, began = [], None, time.monotonic()
    alpha = alphas[-1]
    closer = None                 # the thread stopping the pair before
    written = None
    if prof.load.get("setup") and all(s.binary for s in sides.values()):
        say("check ab", "writing both working sets once; every pair starts on copies of them")
        written = pools.write_working_sets(prof, sides, pair_options(prof, settings))
    try:
        with CheckProgress("blocks", pairs * blocks, block) as progress:
            tried = 0
            for n in range(1, pairs + 1):
                while True:
                    tried += 1
                    try:
                        pair, closer = one_pair(prof, sides, settings, n, blocks, outdir, progress, (n - 1) * blocks,
                                                closer, written, tried)
                        break
                    except PairTooLate as e:
                        if tried - n >= MAX_RERUNS:
                            raise CheckError(f"{e}; {MAX_RERUNS} pairs were run again already, so the check "
                                             "stops: the machine is too busy for its loads to start in time "
                                             "(a longer [ab] pair_warmup gives them more)") from None
                        say("check ab", f"{e}; running it again")
                archives.append(pair)
                if n in plan and n < pairs:
                    look = alphas[plan.index(n)]
                    means = p50_means(prof, archives, block)
                    verdict = None if means is None or len(means) < MIN_PAIRS else decided(means, threshold,
                                                                                              1 - look)
                    if verdict and final_verdict(prof, archives, block, threshold, 1 - look,
                                                 settings["correction"]) == "inconclusive":
                        say("check ab", f"after {n} of {pairs} process pairs the p50 decides {verdict!r} but the "
                                        "test over every metric does not yet: measuring on")
                        verdict = None
                    if verdict:
                        alpha = look
                        say("check ab", f"stopped after {n} of {pairs} process pairs: their p50 already decides "
                                        f"{verdict!r} (alpha {alpha:.2g})")
                        break
    finally:
        if closer is not None:
            closer.join()
    (outdir / "duet.load.json").write_text(json.dumps({"pairs": [p["loads"] for p in archives]}, indent=1))
    results, series = judge_pairs(prof, archives, block, threshold, 1 - alpha, settings["correction"])
    means = p50_means(prof, archives, block)
    spread = float(means.std(ddof=1)) if means is not None and len(means) > 1 else None
    return results, series, {
        "design": "ab", "mode": "duet", "first_server": "both", "block_seconds": block,
        "pairs": len(archives), "pairs_planned": pairs, "blocks_per_pair": blocks,
        "blocks": len(archives) * blocks, "blocks_planned": pairs * blocks,
        "pair_p50_effects": [math.expm1(m) for m in means] if means is not None else None,
        "pair_p50_sd": spread, "seconds_measuring": round(time.monotonic() - began, 1),
        "cpus": {**archives[0]["cpus"], "swaps": sum(p["swaps"] for p in archives)},
        "started": [p["started"] for p in archives],
        **({"server_cpus": {"threads_pinned": [p["server_threads"] for p in archives], "promise": servers.CPU_PROMISE}}
           if archives[0]["server_threads"] else {}),
        "sequential": {"method": "looks after pairs " + ", ".join(map(str, plan)) + ", O'Brien-Fleming-type "
                                 "alpha spending (Lan-DeMets), union bound over the looks",
                       "alpha": round(1 - settings["confidence"], 6),
                       "alpha_per_look": [round(a, 6) for a in alphas], "alpha_used": round(alpha, 6),
                       "stopped_early": len(archives) < pairs},
        "archives": {s: [str(p[s]) if keep else p[s].name for p in archives] for s in "AB"}}
