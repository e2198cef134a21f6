"""How far can `strata check` be trusted on this machine? False alarms and detections
of both designs, each measured in the same run:

- `strata check ab` in duet mode (--aa and --planted checks) and in rounds mode
  (--rounds-aa and --rounds-planted), interleaved in a random order: A/A checks
  have the same engine binary on both sides (every "worse" is a false alarm),
  planted ones B's NFS replies delayed by --effect (default 5 %) of the median read
  latency, the median p50 of the first three duet A/A checks (every "worse" is a
  detection; --effect 0.03,0.05 plants each); with --hog both, every check also
  runs beside a busy loop pinned to one CPU, interleaved with the idle ones; the
  verdicts (same, better, worse, inconclusive), the noise floor each check
  reported against the A/A effects it saw, early stops; minutes per check, the p50 effect and the width of its interval,
  and for duet checks the lag-1 autocorrelation of the blocks' p50 ratios (how far
  the blocks, the test's unit, are from independent).
- the stored-baseline mode (`strata check run`): --baselines runs stored first, then
  as many A/A and planted candidate runs, each judged against all stored runs (their
  spread in the test) and against the first alone (warning, profile threshold);
  and the run-to-run spread of p50/p99 between the stored runs, which the
  one-baseline threshold must exceed.

Needs root. Prints one line per check and a summary; --json FILE keeps them.
Usage: sudo .venv/bin/python bench/check_ab_power.py [--aa 20] [--planted 10] [--rounds-aa 5]
       [--rounds-planted 5] [--baselines 3] [--profile bench/profiles/smoke.toml] [--rounds N]
       [--seconds S] [--keep DIR] [--skip-stored] [--skip-ab] [--effect 0.03,0.05] [--hog both]
       [--threshold 2%] [--p50-ns NS] [--before CHECKOUT] [--before-args '--pairs 1 --seconds 60']
       sudo .venv/bin/python bench/check_ab_power.py --resume RESULTS.json --p50-ns NS [the same flags]
       .venv/bin/python bench/check_ab_power.py --summary-of RESULTS.json [MORE.json ...] [--keep DIR]
--resume adds to an earlier run's results: the same plan in the same --seed order, the checks it
already holds skipped, every new check appended to the file as it ends (a killed run loses at most
the check it was running); --summary-of summarises the checks of all the files given together.
--before CHECKOUT (e.g. a worktree of main whose build/ holds the binaries) runs every check ab
twice, back to back in a random order: with this tree's Python code and with CHECKOUT's;
--before-args ARGS does the same with these extra arguments as the before design. Each row
keeps the load average (1 min) at the check's start and end.
Smoke mode (BENCH_SMOKE=1, bench/run.sh): one duet A/A check on the profile cut to its shortest
measurement.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
STRATA = [sys.executable, "-c", "from strata.cli.main import main; main()"]
ENGINE = str(REPO / "build" / "bin" / "strata-engine")
CALIBRATION = 3   # duet A/A checks whose median p50 sets the planted delay
SMOKE = os.environ.get("BENCH_SMOKE") == "1"


def shortest(profile: str, work: Path) -> str:
    """A copy of the profile measuring as briefly as its checks allow (smoke mode)."""
    text = Path(profile).read_text()
    for key, value in (("warmup", 0), ("duration", 3), ("seconds", 6)):
        text = re.sub(rf"^{key} = \d+", f"{key} = {value}", text, flags=re.M)
    text = re.sub(r"^pairs = \d+\n", "", text, flags=re.M)
    text = text.replace("\n[ab]\n", "\n[ab]\npairs = 1\n")            # one pair: the shortest check
    out = work / "shortest.toml"
    out.write_text(text)
    return str(out)


def strata_of(checkout: str, work: Path) -> list:
    """The command running `strata` from another checkout's Python code (its folder
    imported as the strata package, through a link in work; its build/ must hold the
    binaries)."""
    folder = work / "before-path"
    folder.mkdir(exist_ok=True)
    link = folder / "strata"
    link.unlink(missing_ok=True)
    link.symlink_to(Path(checkout).resolve())
    return [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(folder)!r}); "
                                  "from strata.cli.main import main; main()"]


def strata(*args, timeout=1800, command=None) -> tuple[int, dict | None, float, str]:
    """(exit code, JSON report or None, minutes, last stderr line) of one `strata ...` call."""
    began = time.monotonic()
    proc = subprocess.run([*(command or STRATA), *args], capture_output=True, text=True, timeout=timeout)
    minutes = (time.monotonic() - began) / 60
    try:
        report = json.loads(proc.stdout)
    except ValueError:
        report = None
    err = proc.stderr.strip().splitlines()
    return proc.returncode, report, minutes, err[-1] if err else ""


def p50_of(report: dict, side: str) -> float:
    """The geometric mean p50 of nfs.latency[op] reads on one side of a report (ns)."""
    for r in report["results"]:
        if r["dataset"] == "nfs.latency[op]" and r["key"] == "read":
            return next(m[side] for m in r["metrics"] if m["metric"] == "p50")
    raise SystemExit("the profile must measure nfs.latency[op] with the p50 metric")


def moved(report: dict) -> str:
    return "; ".join(f"{r['dataset']}/{r['key']}: {r['reason']}" for r in report["results"]
                     if r["verdict"] == "worse")[:200]


def p50_read(report: dict) -> dict:
    return next(m for r in report["results"] if r["dataset"] == "nfs.latency[op]" and r["key"] == "read"
                for m in r["metrics"] if m["metric"] == "p50")


def start_hog():
    """A busy loop pinned to one CPU drawn at random (a neighbour that loads one CPU only)."""
    cpu = random.choice(sorted(os.sched_getaffinity(0)))
    return subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"])


def ab_check(args, mode: str, case: str, delay: int, work: Path, n: int, hog: bool = False,
             effect: float = 0.0, tree: str = "after") -> tuple:
    """One `strata check ab --mode MODE` (A/A, or B with `delay` ns planted in every NFS
    reply), beside a one-CPU hog when hog; its archives are kept in work. Returns (row
    for the summary, report)."""
    extra = ["--rounds", str(args.rounds)] if args.rounds and mode == "rounds" else []
    extra += ["--seconds", str(args.seconds)] if args.seconds and mode == "duet" else []
    extra += ["--threshold", args.threshold] if args.threshold else []
    planted = ["--b-inject-delay", f"nfs:{delay}ns"] if case == "planted" else []
    out = work / f"check{n:02d}-{mode}-{'aa' if case == 'A/A' else 'planted'}"
    command = args.before_command if tree == "before" else None
    extra += args.before_args.split() if tree == "before" and args.before_args and mode == "duet" else []
    hogging = start_hog() if hog else None
    load_before = os.getloadavg()[0]
    try:
        rc, rep, minutes, err = strata("check", "ab", "--profile", args.profile, "--mode", mode, "--a", ENGINE,
                                       "--b", ENGINE, "--json", "-o", str(out), *planted, *extra, command=command)
    finally:
        if hogging:
            hogging.kill()
            hogging.wait()
    if rep is None:                               # left out, and run again by a --resume
        print(f"check {n:02d} ({tree}): {mode} {case}{' beside a hog' if hog else ''} failed (exit {rc}): {err}",
              flush=True)
        if out.exists():                          # its archives stay out of the next check's folder
            out.rename(out.with_name(f"{out.name}-failed-{int(time.time())}"))
        args.failed += 1
        return None, None
    p50 = p50_read(rep)
    row = {"tree": tree, "design": f"ab {mode}", "case": case if case == "A/A" else f"planted {effect:.0%}",
           "hog": hog, "verdict": rep["verdict"], "minutes": minutes,
           "p50_ci95": list(interval95(out, mode)), "noise_floor": rep.get("noise_floor"),
           "blocks": rep.get("blocks"), "stopped_early": (rep.get("sequential") or {}).get("stopped_early"),
           "delay_ns": delay if case == "planted" else 0, "p50_effect": p50["effect"],
           "p50_ci": [p50["ci_low"], p50["ci_high"]], "p50_lag1": rep.get("p50_lag1"), "worse": moved(rep),
           "pairs": rep.get("pairs"), "pair_p50_effects": rep.get("pair_p50_effects"),
           "loadavg": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    lag = f", lag-1 {rep['p50_lag1']:+.2f}" if rep.get("p50_lag1") is not None else ""
    floor = f", floor ±{rep['noise_floor']:.2%}" if rep.get("noise_floor") is not None else ""
    print(f"check {n:02d} ({tree}): {mode} {row['case']}{' beside a hog' if hog else ''}: {rep['verdict']} "
          f"({minutes:.1f} min{floor}, load {row['loadavg'][0]:.1f}..{row['loadavg'][1]:.1f}), "
          f"p50 {pct(p50['effect'])} [{pct(p50['ci_low'])}, {pct(p50['ci_high'])}]{lag} "
          f"{row['worse']}", flush=True)
    return row, rep


def pct(x, sign="+") -> str:
    """A share (signed unless sign=""), or n/a when the check could not estimate it (too few blocks)."""
    return "n/a" if x is None else f"{x:{sign}.2%}"


def width_of(ci) -> float | None:
    return None if None in ci else ci[1] - ci[0]


def known_median(values) -> float | None:
    """The median of the values that are known (not None), None when none is."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def interval95(folder: Path, mode: str) -> tuple:
    """(low, high) of the 95% interval of the p50 ratio of reads, recomputed from a kept
    check's archives with the statistics the check itself uses."""
    from strata.datasets.archive import Archive
    from strata.checks.compare import stack
    from strata.checks.compare_duet import compare_duet
    from strata.checks.compare_rounds import compare_rounds_histograms

    def whole(path):
        with Archive.open(str(path)) as ar:
            first, last = ar.extent("nfs.latency[op]")
            return ar.query("nfs.latency[op]", first, last + 1)
    pairs = sorted(folder.glob("duet-A-*.archive"))
    if mode == "duet" and pairs:
        from strata.checks.compare_pairs import compare_pairs
        kv, _ = compare_pairs("read", [(whole(a), whole(folder / a.name.replace("-A-", "-B-"))) for a in pairs],
                              1, ("p50",), 0.95)
    elif mode == "duet":
        kv, _ = compare_duet("read", whole(folder / "duet-A.archive"), whole(folder / "duet-B.archive"), 1,
                             ("p50",), 0.95)
    else:
        paths = sorted(folder.glob("round-*.archive"))
        runs = [whole(p) for p in paths]
        buckets, rows = stack(runs, "read")
        sides = [p.stem.split("-")[-1] for p in paths]
        a = rows[[i for i, x in enumerate(sides) if x == "A"]]
        b = rows[[i for i, x in enumerate(sides) if x == "B"]]
        kv = compare_rounds_histograms("read", a, b, buckets, ("p50",), 0.95)
    m = kv.metrics[0]
    return m.ci_low, m.ci_high


def ab_runs(args, work: Path, out: list) -> int:
    """A/A and planted checks of both modes of `check ab` (each planted effect of --effect,
    each hog condition of --hog), interleaved in a random order (after up to CALIBRATION
    idle duet A/A checks whose median p50 the planted delays are shares of, unless
    --delay-ns is given); returns the first planted delay in ns."""
    effects = [float(e) for e in str(args.effect).split(",")]
    hogs = {"both": (False, True), "on": (True,), "off": (False,)}[args.hog]
    plan = [(m, "A/A", 0.0, h) for m, k in (("duet", args.aa), ("rounds", args.rounds_aa)) for h in hogs
            for _ in range(k)]
    plan += [(m, "planted", e, h) for m, k in (("duet", args.planted), ("rounds", args.rounds_planted))
             for e in effects for h in hogs for _ in range(k)]
    p50 = args.p50_ns
    if not args.delay_ns and not p50:
        p50s = []
        for _ in range(min(CALIBRATION, sum(p[:2] == ("duet", "A/A") and not p[3] for p in plan))):
            plan.remove(("duet", "A/A", 0.0, False))
            row, rep = ab_check(args, "duet", "A/A", 0, work, len(out))
            if row is None:
                continue
            out.append(row)
            p50s.append(p50_of(rep, "baseline"))
        if not p50s:
            raise SystemExit("give --delay-ns, or --aa 1 or more to measure the p50 the delay is a share of")
        p50 = statistics.median(p50s)
        print(f"planted delays: {', '.join(f'{round(p50 * e)} ns ({e:.0%})' for e in effects)} of the median "
              f"p50 of {len(p50s)} duet A/A checks, {p50:.0f} ns", flush=True)
    random.Random(args.seed).shuffle(plan)
    done = {}                                      # checks an earlier run (--resume) already has, by kind
    for r in out:
        done[row_kind(r)] = done.get(row_kind(r), 0) + 1
    for mode, case, effect, hog in plan:
        delay = args.delay_ns or max(1, round(p50 * effect))
        trees = ["after"] + (["before"] if args.before or args.before_args else [])
        random.shuffle(trees)                      # before and after back to back, in a random order
        for tree in trees:
            kind = (f"ab {mode}", case if case == "A/A" else f"planted {effect:.0%}", hog, tree)
            if done.get(kind):
                done[kind] -= 1
                continue
            row, _ = ab_check(args, mode, case, delay, work, len(out), hog, effect, tree)
            if row is None:
                continue
            out.append(row)
            if args.json:
                save(out, args.json)
    return args.delay_ns or max(1, round((p50 or 0) * effects[0]))


def row_kind(r: dict) -> tuple:
    """(design without its tree, case, hog, tree) of a result row: what --resume counts as done."""
    return " ".join(r["design"].split()[:2]), r["case"], r.get("hog", False), r.get("tree", "after")


def save(out: list, path: str):
    """Writes the rows so far, whole or not at all (a run killed while writing keeps the last copy)."""
    tmp = Path(f"{path}.tmp")
    tmp.write_text(json.dumps(out, indent=2))
    tmp.replace(path)


def stored_runs(args, delay: int, work: Path, out: list):
    """Baselines, then A/A and planted candidates judged against 3+ runs and against one."""
    bases = [str(work / f"base{i}.archive") for i in range(args.baselines)]
    for b in bases:
        rc, _, minutes, err = strata("check", "run", "--profile", args.profile, "--baseline", b, "--update-baseline")
        if rc != 0:
            raise SystemExit(f"check run --update-baseline failed: {err}")
        print(f"stored baseline {b} ({minutes:.1f} min)", flush=True)
    planted = work / "planted.toml"
    planted.write_text(Path(args.profile).read_text()
                       .replace("[engine]\n", f'[engine]\ninject_delay = {{ nfs = "{delay}ns" }}\n'))
    for case, profile, n in (("A/A", args.profile, args.aa), ("planted", str(planted), args.planted)):
        for i in range(n):
            cand = str(work / f"cand-{case[0]}{i}.archive")
            baseline_args = [a for b in bases for a in ("--baseline", b)]
            rc, rep, minutes, err = strata("check", "run", "--profile", profile, *baseline_args, "--json", "-o", cand)
            if rep is None:
                raise SystemExit(f"check run failed (exit {rc}): {err}")
            rc1, rep1, _, _ = strata("check", "--baseline", bases[0], "--candidate", cand, "--json",
                                     "--threshold", args.one_threshold, "--metric", "p50,p99,mean")
            out.append({"design": f"stored x{len(bases)}", "case": case, "verdict": rep["verdict"],
                        "minutes": minutes})
            out.append({"design": "stored x1", "case": case, "verdict": rep1["verdict"], "minutes": minutes})
            print(f"stored {case} {i + 1}/{n}: {len(bases)} baselines: {rep['verdict']}, one baseline: "
                  f"{rep1['verdict']} ({minutes:.1f} min)", flush=True)
    spread = []
    for m in ("p50", "p99"):
        values = []
        for b in bases[1:]:
            _, rep, _, _ = strata("check", "--baseline", bases[0], "--candidate", b, "--json", "--metric", m)
            values += [abs(x["effect"]) for r in rep["results"] if r["dataset"] == "nfs.latency[op]"
                       for x in r["metrics"] if x["metric"] == m]
        spread.append(f"{m} up to {max(values):.0%}" if values else f"{m} n/a")
    print("run-to-run spread between stored baselines (vs the first): " + ", ".join(spread), flush=True)


def at_3_percent(out: list):
    """Each group's p50 verdicts had the threshold been 3 % (from each check's own p50
    interval), and for planted checks how many saw an effect beyond the floor they reported."""
    from strata.checks.sequential import verdict
    for design, case, hog in sorted({(r["design"], r["case"], r.get("hog", False)) for r in out
                                     if r.get("p50_ci") and None not in r["p50_ci"]}):
        rows = [r for r in out if (r["design"], r["case"], r.get("hog", False)) == (design, case, hog)
                and r.get("p50_ci") and None not in r["p50_ci"]]
        called = [verdict(r["p50_effect"], *r["p50_ci"], 0.03) or "inconclusive" for r in rows]
        beyond = sum(r.get("noise_floor") is not None and r["p50_effect"] > r["noise_floor"] for r in rows)
        print(f"{design} {case}{' beside a hog' if hog else ''}, p50 at a 3 % threshold: " +
              ", ".join(f"{v} {called.count(v)}" for v in ("same", "better", "worse", "inconclusive")) +
              (f"; effect beyond its own floor {beyond}/{len(rows)}" if case != "A/A" else ""))


def rejudged(out: list, confidence: float = 0.99):
    """Each group of fresh-pairs checks judged again on its p50 from the pairs' own effects with
    this tree's test across pairs (for rows measured by an earlier one): verdicts at 2 % and
    3 %, the noise floor, and how many A/A effects lay within it."""
    import math
    from strata.checks.compare_pairs import trimmed_t_test
    from strata.checks.duet_pairs import looks, spent
    from strata.checks.sequential import verdict
    for design, case, hog in sorted({(r["design"], r["case"], r.get("hog", False)) for r in out
                                     if len(r.get("pair_p50_effects") or []) >= 3}):
        rows = [r for r in out if (r["design"], r["case"], r.get("hog", False)) == (design, case, hog)
                and len(r.get("pair_p50_effects") or []) >= 3]
        judged = []
        for r in rows:
            n = len(r["pair_p50_effects"])
            c, lo, hi, _ = trimmed_t_test(np.log1p(r["pair_p50_effects"]), confidence
                                          if r.get("stopped_early") else 1 - spent(looks(n, True), 1 - confidence)[-1])
            e, lo, hi = math.expm1(c), math.expm1(lo), math.expm1(hi)
            judged.append((e, lo, hi, max(hi - e, e - lo)))
        line = f"{design} {case}{' beside a hog' if hog else ''}, p50 judged again across its pairs with this tree's test:"
        for t in (0.02, 0.03):
            called = [verdict(e, lo, hi, t) or "inconclusive" for e, lo, hi, _ in judged]
            line += f" at {t:.0%}: " + ", ".join(f"{v} {called.count(v)}" for v in ("same", "better", "worse",
                                                                                      "inconclusive")) + ";"
        floors = [f for *_, f in judged]
        line += f" floor median ±{statistics.median(floors):.2%} (±{min(floors):.2%} .. ±{max(floors):.2%})"
        line += f"; effect median {statistics.median(e for e, *_ in judged):+.2%}"
        if case == "A/A":
            line += f"; |effect| within its floor {sum(abs(e) <= f for e, _, _, f in judged)}/{len(judged)}"
        print(line)


def summary(out: list, work: Path | None = None):
    """work: the --keep folder of an earlier run, to recompute 95% intervals missing from its rows."""
    for n, r in enumerate(out):
        if "p50_ci95" not in r and work and r["design"].startswith("ab "):
            mode = r["design"][3:]
            r["p50_ci95"] = list(interval95(work / f"check{n:02d}-{mode}-{'aa' if r['case'] == 'A/A' else 'planted'}",
                                            mode))
    print("\ndesign        case     worse/runs  minutes (median)  p50 effect (median)  p50 interval width, "
          "99% / 95% (median)")
    for r in out:
        r["design"] = f"{r['design']} {r['tree']}" if r.get("tree") and not r["design"].endswith(r["tree"]) \
            else r["design"]
    keys = sorted({(r["design"], r["case"], r.get("hog", False)) for r in out})
    for design, case, hog in keys:
        rows = [r for r in out if r["design"] == design and r["case"] == case and r.get("hog", False) == hog]
        worse = sum(r["verdict"] == "worse" for r in rows)
        label = f"{case}{' +hog' if hog else ''}"
        line = f"{design:13} {label:17} {worse:>3}/{len(rows):<6}  " \
               f"{statistics.median(r['minutes'] for r in rows):>4.2f}"
        if "p50_ci" in rows[0]:
            width = known_median(width_of(r["p50_ci"]) for r in rows)
            line += (f"              {pct(known_median(r['p50_effect'] for r in rows))}"
                     f"               {pct(width, '')}")
            if all("p50_ci95" in r for r in rows):
                line += f" / {pct(known_median(width_of(r['p50_ci95']) for r in rows), '')}"
        print(line)
    for design, case, hog in keys:
        rows = [r for r in out if r["design"] == design and r["case"] == case and r.get("hog", False) == hog
                and "noise_floor" in r]
        if rows:
            counts = {v: sum(r["verdict"] == v for r in rows) for v in ("same", "better", "worse", "inconclusive")}
            floors = [r["noise_floor"] for r in rows if r["noise_floor"] is not None]
            seen = [abs(r["p50_effect"]) for r in rows if case == "A/A" and r["p50_effect"] is not None]
            under = sum(r["noise_floor"] is not None and abs(r["p50_effect"]) <= r["noise_floor"] for r in rows
                        if case == "A/A" and r["p50_effect"] is not None)
            print(f"{design} {case}{' beside a hog' if hog else ''}: " +
                  ", ".join(f"{k} {v}" for k, v in counts.items()) +
                  (f"; noise floor median ±{statistics.median(floors):.2%}" if floors else "") +
                  (f"; |A/A p50 effect| median {statistics.median(seen):.2%}, max {max(seen):.2%}, within the "
                   f"floor it reported {under}/{len(seen)}" if seen else "") +
                  f"; stopped early {sum(bool(r.get('stopped_early')) for r in rows)}/{len(rows)}; "
                  f"seconds per check median {60 * statistics.median(r['minutes'] for r in rows):.0f} "
                  f"({60 * min(r['minutes'] for r in rows):.0f}..{60 * max(r['minutes'] for r in rows):.0f})" +
                  (f"; load average median {statistics.median(loads):.1f} ({min(loads):.1f}..{max(loads):.1f})"
                   if (loads := [r["loadavg"][0] for r in rows if r.get("loadavg")]) else ""))
    for design in sorted({r["design"] for r in out if "p50_effect" in r}):
        rows = [r for r in out if r["design"] == design and r["case"] == "A/A"]
        rows = [r for r in rows if r["p50_effect"] is not None and None not in r["p50_ci"]]
        aa = [r["p50_effect"] for r in rows]
        if len(aa) >= 2:
            holding = sum(r["p50_ci"][0] <= 0 <= r["p50_ci"][1] for r in rows)
            print(f"{design}: A/A p50 effects between checks: sd {statistics.stdev(aa):.2%}, "
                  f"range {min(aa):+.2%} .. {max(aa):+.2%}; A/A 99% intervals holding 0: {holding}/{len(aa)}")
    at_3_percent(out)
    rejudged(out)
    lags = [r["p50_lag1"] for r in out if r.get("p50_lag1") is not None]
    if lags:
        print(f"duet blocks' p50 log ratios, lag-1 autocorrelation: median {statistics.median(lags):+.2f}, "
              f"range {min(lags):+.2f} .. {max(lags):+.2f} over {len(lags)} checks")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=str(REPO / "bench/profiles/smoke.toml"))
    ap.add_argument("--aa", type=int, default=20, help="A/A runs of duet mode and of the stored designs")
    ap.add_argument("--planted", type=int, default=10, help="planted-regression runs of duet and the stored designs")
    ap.add_argument("--rounds-aa", type=int, default=5, help="A/A runs of rounds mode")
    ap.add_argument("--rounds-planted", type=int, default=5, help="planted-regression runs of rounds mode")
    ap.add_argument("--seconds", type=int, help="measured seconds per duet check (default: the profile's)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the order the checks run in")
    ap.add_argument("--keep", help="keep every check's archives in this folder")
    ap.add_argument("--effect", default="0.05", help="planted delays as shares of the baseline median, "
                    "comma-separated (e.g. 0.03,0.05)")
    ap.add_argument("--hog", choices=("both", "on", "off"), default="off",
                    help="check ab beside a busy loop pinned to one CPU: both (interleaved), on or off")
    ap.add_argument("--threshold", help="check ab's threshold (default: the profile's)")
    ap.add_argument("--delay-ns", type=int, help="planted delay (default: --effect of the duet A/A p50)")
    ap.add_argument("--p50-ns", type=float, help="the p50 the --effect shares are of (default: measured by "
                    "the first duet A/A checks)")
    ap.add_argument("--before", metavar="CHECKOUT", help="also run every check ab with this checkout's Python "
                    "code (e.g. a worktree of main), back to back with this tree's in a random order")
    ap.add_argument("--before-args", metavar="ARGS", help="also run every duet check with these extra `check ab` "
                    "arguments as the before design (e.g. '--pairs 1 --seconds 60', the one-pair design), back to "
                    "back with the after one in a random order; with --before, on that checkout's code")
    ap.add_argument("--baselines", type=int, default=3, help="stored baseline runs")
    ap.add_argument("--one-threshold", default="25%", help="threshold of the one-baseline comparison")
    ap.add_argument("--rounds", type=int, help="rounds per rounds-mode check (default: the profile's)")
    ap.add_argument("--skip-stored", action="store_true")
    ap.add_argument("--skip-ab", action="store_true")
    ap.add_argument("--json", help="also write every check's outcome here")
    ap.add_argument("--resume", metavar="JSON", help="add to an earlier run's --json: the same plan in the same "
                    "(--seed) order, skipping the checks it holds, each new check appended to it as it ends "
                    "(needs --p50-ns or --delay-ns)")
    ap.add_argument("--summary-of", metavar="JSON", nargs="+", help="only print the summary of earlier runs' "
                    "--json files (all their checks together)")
    args = ap.parse_args()
    if args.summary_of:
        try:
            rows = [r for f in args.summary_of for r in json.loads(Path(f).read_text())]
        except (OSError, ValueError) as e:
            raise SystemExit(f"--summary-of: {e}") from None
        summary(rows, Path(args.keep) if args.keep and len(args.summary_of) == 1 else None)
        return 0
    out = []
    args.failed = 0                                # checks that ended without a report (exit 1 at the end)
    if args.resume:
        if not (args.p50_ns or args.delay_ns):
            raise SystemExit("--resume needs --p50-ns or --delay-ns (the delays the earlier run planted)")
        try:
            out = json.loads(Path(args.resume).read_text()) if Path(args.resume).exists() else []
        except (OSError, ValueError) as e:
            raise SystemExit(f"--resume {args.resume}: {e}") from None
        args.json = args.json or args.resume
    delay = args.delay_ns or 2000          # the stored designs alone: no A/A p50 to take a share of
    with tempfile.TemporaryDirectory(prefix="strata-bench-check-") as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        args.before_command = strata_of(args.before, work) if args.before else None
        if SMOKE:
            args.aa, args.planted, args.rounds_aa, args.rounds_planted, args.skip_stored = 1, 0, 0, 0, True
            args.profile = shortest(args.profile, work)
        try:
            if not args.skip_ab:
                delay = ab_runs(args, work, out)
            if not args.skip_stored:
                stored_runs(args, delay, work, out)
        finally:
            if args.json:
                save(out, args.json)
            summary(out)
    if args.failed:
        print(f"{args.failed} check(s) failed and were left out", file=sys.stderr)
    return 1 if args.failed else 0


if __name__ == "__main__":
    sys.exit(main())
