"""How far can `strata check` be trusted on this machine? False alarms and detections
of both designs, each measured in the same run:

- `strata check ab` (paired rounds): --aa runs with the same engine binary on both
  sides (every "worse" is a false alarm), then --planted runs with B's NFS replies
  delayed by --effect (default 5 %) of the baseline median read latency, the median
  taken from the first A/A run (every "worse" is a detection); minutes per check.
- the stored-baseline mode (`strata check run`): --baselines runs stored first, then
  as many A/A and planted candidate runs, each judged against all stored runs (their
  spread in the test) and against the first alone (warning, profile threshold);
  and the run-to-run spread of p50/p99 between the stored runs, which the
  one-baseline threshold must exceed.

Needs root. Prints one line per check and a summary; --json FILE keeps them.
Usage: sudo .venv/bin/python bench/check_ab.py [--aa 20] [--planted 10] [--baselines 3]
       [--profile bench/profiles/smoke.toml] [--rounds N] [--skip-stored] [--skip-ab]
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STRATA = [sys.executable, "-c", "from strata.cli.main import main; main()"]
ENGINE = str(REPO / "build" / "bin" / "strata-engine")


def strata(*args, timeout=1800) -> tuple[int, dict | None, float, str]:
    """(exit code, JSON report or None, minutes, last stderr line) of one `strata ...` call."""
    began = time.monotonic()
    proc = subprocess.run([*STRATA, *args], capture_output=True, text=True, timeout=timeout)
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


def ab_runs(args, out: list) -> int:
    """The A/A and planted runs of `check ab`; returns the planted delay in ns."""
    extra = ["--rounds", str(args.rounds)] if args.rounds else []
    delay = 0
    for i in range(args.aa):
        rc, rep, minutes, err = strata("check", "ab", "--profile", args.profile, "--a", ENGINE, "--b", ENGINE,
                                       "--json", *extra)
        if rep is None:
            raise SystemExit(f"check ab failed (exit {rc}): {err}")
        if not delay:
            delay = max(1, round(p50_of(rep, "baseline") * args.effect))
        out.append({"design": "ab", "case": "A/A", "verdict": rep["verdict"], "minutes": minutes})
        print(f"ab A/A {i + 1}/{args.aa}: {rep['verdict']} ({minutes:.1f} min) {moved(rep)}", flush=True)
    if not delay:
        delay = args.delay_ns
    for i in range(args.planted):
        rc, rep, minutes, err = strata("check", "ab", "--profile", args.profile, "--a", ENGINE, "--b", ENGINE,
                                       "--b-inject-delay", f"nfs:{delay}ns", "--json", *extra)
        if rep is None:
            raise SystemExit(f"check ab failed (exit {rc}): {err}")
        p50 = next(m for r in rep["results"] if r["dataset"] == "nfs.latency[op]" and r["key"] == "read"
                   for m in r["metrics"] if m["metric"] == "p50")
        out.append({"design": "ab", "case": "planted", "delay_ns": delay, "verdict": rep["verdict"],
                    "minutes": minutes, "p50_effect": p50["effect"], "p50_ci": [p50["ci_low"], p50["ci_high"]]})
        print(f"ab planted {delay} ns {i + 1}/{args.planted}: {rep['verdict']} ({minutes:.1f} min), p50 "
              f"{p50['effect']:+.1%} [{p50['ci_low']:+.1%}, {p50['ci_high']:+.1%}]", flush=True)
    return delay


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


def summary(out: list):
    print("\ndesign        case     worse/runs  minutes per check (median)")
    keys = sorted({(r["design"], r["case"]) for r in out})
    for design, case in keys:
        rows = [r for r in out if r["design"] == design and r["case"] == case]
        worse = sum(r["verdict"] == "worse" for r in rows)
        print(f"{design:13} {case:8} {worse:>3}/{len(rows):<6}  {statistics.median(r['minutes'] for r in rows):.1f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=str(REPO / "bench/profiles/smoke.toml"))
    ap.add_argument("--aa", type=int, default=20, help="A/A runs per design")
    ap.add_argument("--planted", type=int, default=10, help="planted-regression runs per design")
    ap.add_argument("--effect", type=float, default=0.05, help="planted delay as a share of the baseline median")
    ap.add_argument("--delay-ns", type=int, default=2000, help="planted delay when there are no A/A runs")
    ap.add_argument("--baselines", type=int, default=3, help="stored baseline runs")
    ap.add_argument("--one-threshold", default="25%", help="threshold of the one-baseline comparison")
    ap.add_argument("--rounds", type=int, help="rounds per `check ab` (default: the profile's)")
    ap.add_argument("--skip-stored", action="store_true")
    ap.add_argument("--skip-ab", action="store_true")
    ap.add_argument("--json", help="also write every check's outcome here")
    args = ap.parse_args()
    out = []
    delay = args.delay_ns
    if not args.skip_ab:
        delay = ab_runs(args, out)
    if not args.skip_stored:
        with tempfile.TemporaryDirectory(prefix="strata-bench-check-") as work:
            stored_runs(args, delay, Path(work), out)
    summary(out)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
