"""Lifecycle storm benchmark: tests/lifecycle_storm.py's seeded random stream of dataset
lifecycle commands (create, destroy, re-create, suspend, resume, prune, archive, import,
verify, SIGHUP reload) against a running collector under real load, seed after seed, for
--minutes. Prints per seed and in total: commands run, seconds and events compared with the
reference clients' own counts (NFS GETATTRs; O_DIRECT disk writes, checked against
/sys/block), seconds lost, misplaced (stored while not active) and wrong; the stored events
as a ratio of the events the references made in those seconds (1.000000: nothing lost,
nothing added). A failing seed is printed with its findings: add it
to tests/test_lifecycle_storm.py's SEEDS.

Usage: .venv/bin/python bench/lifecycle_storm.py [--minutes 3] [--storm 60] [--first-seed 100]
Smoke mode (BENCH_SMOKE=1, bench/run.sh): one seed, 8 s of commands.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from lifecycle_storm import run  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--minutes", type=float, default=3)
    ap.add_argument("--storm", type=float, default=60, help="seconds of commands per seed")
    ap.add_argument("--first-seed", type=int, default=100)
    args = ap.parse_args()
    if os.environ.get("BENCH_SMOKE") == "1":
        args.minutes, args.storm = 0.01, 8
    end = time.time() + args.minutes * 60
    seed, total, failed = args.first_seed, {}, []
    while time.time() < end:
        with tempfile.TemporaryDirectory(prefix="strata-storm-") as d:
            try:
                f = run(seed, Path(d), min(args.storm, max(8.0, end - time.time())))
            except AssertionError as e:
                failed.append(seed)
                print(f"seed {seed}: FAILED {e}", flush=True)
                seed += 1
                continue
        for k in ("commands", "seconds_checked", "events_compared", "reference_events", "lost_seconds",
                  "misplaced_seconds", "shifted_seconds", "uncompared_seconds",
                  "wrong_seconds", "load_requests", "disk_writes"):
            total[k] = total.get(k, 0) + f[k]
        for part in ("by_kind", "seconds_checked_by_layer"):
            for k, n in f[part].items():
                total.setdefault(part, {})[k] = total.get(part, {}).get(k, 0) + n
        print(f"seed {seed}: {f['commands']} commands, {f['seconds_checked']} s and {f['events_compared']} "
              f"events compared, lost {f['lost_seconds']}, misplaced {f['misplaced_seconds']}, "
              f"wrong {f['wrong_seconds']}", flush=True)
        seed += 1
    total["seeds"] = seed - args.first_seed
    total["failed_seeds"] = failed
    print("total: " + json.dumps(total))
    if total.get("reference_events"):
        print(f"stored / sent events over the seconds compared: "
              f"{total['events_compared'] / total['reference_events']:.6f}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
