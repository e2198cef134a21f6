"""`strata check ab --mode rounds`: alternating short rounds (A B B A A B ...), one
archive per round, judged on the pairs of adjacent rounds. For builds that cannot run
side by side. The working set is written to each side and warmed once, then the rounds
alternate so that the drift of a shared machine falls on both sides of every pair.
Each round's measured seconds are exported as a self-contained archive (kept with
-o DIR), and the statistics (checks/compare_rounds.py) are computed from those
archives alone."""
import json
import math
import time
from pathlib import Path

from strata.checks.baselines import one_sided
from strata.checks.compare import interval_metric, judge, stack
from strata.checks.compare_rounds import compare_rounds_counts, compare_rounds_histograms, min_pairs
from strata.checks.progress import CheckProgress
from strata.checks.sides import load_args, load_options, run_load, start_sides, whole
from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError
from strata.lab.load import Load
from strata.lab.logs import say
from strata.lab.window import export_window


def round_order(rounds: int) -> str:
    """'ABBAABBA...': pair k is AB for even k, BA for odd k, so a steady drift cancels."""
    return "".join("AB" if k % 2 == 0 else "BA" for k in range(rounds // 2))


def run(prof, sides, settings, threshold, undo, outdir, keep) -> tuple:
    """Rounds mode end to end: (judged results, p99 series per pair, report fields)."""
    order = round_order(settings["rounds"])
    windows = measure(prof, sides, order, settings, undo)
    archives = export_rounds(prof, sides, windows, outdir)
    results, series = judge_rounds(prof, archives, order, threshold, settings["confidence"], settings["correction"])
    tests = sum(len(kv.metrics) for _, kv in results)
    needed = min_pairs(settings["confidence"], max(tests, 1))
    if len(order) // 2 < needed:
        say("check ab", f"warning: {len(order) // 2} pairs cannot reach confidence {settings['confidence']} over "
                        f"{tests} tests when one metric moves alone; {2 * needed}+ rounds can")
    return results, series, {"design": "ab", "mode": "rounds", "order": order,
                             "rounds": [str(a) if keep else a.name for a in archives]}


def measure(prof, sides: dict, order: str, settings: dict, undo) -> list:
    """Starts both sides, writes and warms the working sets, runs the rounds; returns
    (side, start, end, strata-load's report) of each round."""
    options = load_options(prof)
    start_sides(prof, sides, undo)
    for s in sides.values():
        if prof.load.get("setup"):
            say("check ab", f"writing the working set of {s.name}")
            setup = Load(s.work, "setup").start(load_args(s, {**options, "setup_only": True}))
            undo.callback(setup.stop)
            setup.wait(timeout=600)
        if prof.warmup:
            say("check ab", f"warming {s.name} for {prof.warmup}s")
            run_load(s, options, prof.warmup, "warmup", sides)
    warm, seconds = settings["round_warmup"], settings["round_seconds"]
    say("check ab", f"{len(order)} rounds ({order[:8]}...) of {warm}s warm-up + {seconds}s measured, "
                    f"{options['profile']}")
    windows = []
    with CheckProgress("rounds", len(order), warm + seconds + 2) as progress:
        for r, name in enumerate(order):
            began, sent = run_load(sides[name], options, warm + seconds + 1, f"round{r + 1}", sides)
            start = math.ceil(began) + warm
            windows.append((name, start, start + seconds, sent))
            progress.update(r + 1, running_estimate(prof, sides, windows) if r % 2 else None)
    time.sleep(max(0.0, windows[-1][2] + 1.5 - time.time()))   # the collectors write second end-1
    for s in sides.values():
        s.coll.stop()
    return windows


def running_estimate(prof, sides: dict, windows: list):
    """(metric, effect, low, high) of p50 over the pairs of rounds done so far, read from the
    live archives: the mean log ratio with a normal 95% interval (a progress figure only; the
    verdict's test is compare_rounds'). The last round's final second may still be missing."""
    name = next((n for n in prof.datasets if ".latency" in n), None)
    if name is None or len(windows) < 6:
        return None
    d = []
    try:
        for k in range(0, len(windows) - 1, 2):
            values = {}
            for side, start, end, _ in windows[k:k + 2]:
                with Archive.open(sides[side].archive) as ar:
                    qr = ar.query(name, start, end)
                if not len(qr.buckets):
                    return None
                busiest = int(qr.counts.sum(axis=(1, 2)).argmax())
                pooled = qr.counts[busiest].sum(axis=0)[None]
                values[side] = float(interval_metric(pooled, qr.buckets, "p50")[0])
            d.append(math.log(values["B"] / values["A"]))
            if not math.isfinite(d[-1]):
                return None
    except (ArchiveError, ValueError, ZeroDivisionError):
        return None
    mean = sum(d) / len(d)
    half = 1.96 * math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d))
    return "p50", math.expm1(mean), math.expm1(mean - half), math.expm1(mean + half)


def export_rounds(prof, sides: dict, windows: list, outdir: Path) -> list:
    """round-NN-S.archive per round, with strata-load's report of that round (the whole
    load, warm-up second included) beside it as round-NN-S.load.json."""
    out = []
    for r, (name, start, end, sent) in enumerate(windows):
        dest = outdir / f"round-{r + 1:02d}-{name}.archive"
        export_window(sides[name].archive, prof.datasets, start, end, str(dest))
        dest.with_suffix(".load.json").write_text(json.dumps(sent, indent=1))
        out.append(dest)
    return out


def judge_rounds(prof, archives: list, order: str, threshold: float, confidence: float, correction: str):
    """Reads the round archives back and judges B against A pair by pair."""
    a_idx = [i for i, s in enumerate(order) if s == "A"]
    b_idx = [i for i, s in enumerate(order) if s == "B"]   # pair k: a_idx[k] with b_idx[k], adjacent
    results, series = [], {}
    for name in prof.datasets:
        runs = [whole(path, name) for path in archives]
        a_runs, b_runs = [runs[i] for i in a_idx], [runs[i] for i in b_idx]
        keys = sorted(set().union(*(qr.keys for qr in runs)))
        for key in keys:
            a_have = [qr for qr in a_runs if key in qr.keys]
            b_have = [qr for qr in b_runs if key in qr.keys]
            if not a_have or not b_have:
                results.append((name, one_sided(key, (a_have or a_runs)[0], (b_have or b_runs)[0], threshold)))
                continue
            buckets, rows = stack(a_runs + b_runs, key)
            a, b = rows[:len(a_runs)], rows[len(a_runs):]
            if runs[0].kind == "heatmap":
                results.append((name, compare_rounds_histograms(key, a, b, buckets, prof.metrics, confidence)))
                series[(name, key)] = (interval_metric(a, buckets, "p99"), interval_metric(b, buckets, "p99"))
            elif runs[0].kind == "counter":
                results.append((name, compare_rounds_counts(key, a, b, confidence)))
    return judge(results, threshold, confidence, correction), series
