"""`strata check ab` end to end, in both modes: two real engines side by side under
strata-load, real probes and collectors.

- rounds: one archive per round. B with every NFS reply delayed by about the
  median read latency reads worse, and the verdict's numbers are recomputed here
  from the round archives (datasets API, with this file's own percentile).
- duet: 6 fresh pairs of engines one after another, both engines of a pair
  serving at once under two paired strata-loads (one sends each pair to A first,
  one to B first) while their CPUs swap every block, one archive per side and
  pair. Every read went to both (strata-load's own counts, and each second's
  count in both engines' probes); B delayed by ~3 % of the p50 reads worse (or
  inconclusive), its p50 effect recomputed here from the pairs' archives; the
  same binary on both sides is "same" at 3 % (or inconclusive), never worse or
  better; B delayed by ~1 % at a 1 % threshold is "inconclusive" (or "worse"),
  never "same".
- a pair whose loads had not begun when its blocks ended (held back by a strata-load
  wrapper) is run again and the check answers; every pair late: one line, exit 2.

All run at once beside a busy loop pinned to one CPU: each measures its own
engines (probes follow their pids), and the load one run adds falls on its
neighbour's A and B alike."""
import itertools
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from strata.datasets import llhist
from strata.datasets.archive import Archive

STRATA = [sys.executable, "-c", "from strata.cli.main import main; main()"]
PROFILE = """
description = "check ab test: randread from the ARC"
[engine]
arc_max = "64M"
pool_size = "64M"
recordsize = "8k"
[load]
profile = "randread"
io_size = "8k"
files = 2
file_size = "4m"
clients = 2
threads = 2
rate = 1500
setup = true
[measure]
warmup = 2
datasets = ["nfs.latency[op]", "nfs.ops[op]"]
[check]
metrics = ["p50", "mean"]
[ab]
rounds = 16
round_seconds = 2
round_warmup = 1
confidence = 0.95
seconds = 12
pairs = 3
pair_warmup = 1
"""


# Rounds without the warm-up second: both engines stay up and warm between their rounds,
# and the runs in rounds mode are the longest of the four (16 rounds of load each)
ROUNDS_PROFILE = PROFILE.replace("\nround_warmup = 1\n", "\nround_warmup = 0\n")


def start_check_ab(out, *extra, profile=PROFILE, env=None) -> subprocess.Popen:
    """`strata check ab` with profile (PROFILE) in folder out (round archives in out/rounds),
    its output in out/stdout and out/stderr."""
    out.mkdir()
    (out / "ab.toml").write_text(profile)
    with open(out / "stdout", "w") as stdout, open(out / "stderr", "w") as stderr:
        return subprocess.Popen([*STRATA, "check", "ab", "--profile", "ab.toml", "--json", "-o", str(out / "rounds"),
                                 *extra], stdout=stdout, stderr=stderr, text=True, cwd=out, env=env)


HELD_LOAD = """#!{python}
# strata-load as `strata check ab` runs it, except that a load whose report path matches {pattern!r}
# is held back until the check stops it (SIGINT): it never begins its run
import fnmatch, os, signal, sys
report = sys.argv[sys.argv.index("--json") + 1] if "--json" in sys.argv else ""
if fnmatch.fnmatch(report, {pattern!r}):
    print("held back by the test until stopped", flush=True)
    signal.signal(signal.SIGINT, lambda *_: sys.exit(1))
    while True:
        signal.pause()
os.execv({real!r}, [{real!r}] + sys.argv[1:])
"""


def holding_loads(folder: Path, pattern: str) -> dict:
    """An environment whose strata-load (STRATA_BIN_DIR, lab/binaries.py) holds back the paired loads
    whose report path matches pattern (a pair's loads that start too late, as on a machine too busy
    for them) and runs every other load, engine and collector as built."""
    from conftest import built
    folder.mkdir()
    for name in ("strata-engine", "strata-collect"):
        (folder / name).symlink_to(built(f"bin/{name}"))
    wrapper = folder / "strata-load"
    wrapper.write_text(HELD_LOAD.format(python=sys.executable, pattern=pattern, real=str(built("bin/strata-load"))))
    wrapper.chmod(0o755)
    return {**os.environ, "STRATA_BIN_DIR": str(folder)}


def finish(proc, out) -> tuple:
    """(exit code, stdout, stderr) of a run started by start_check_ab; one past 400 s is interrupted."""
    try:
        proc.wait(timeout=400)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)          # its own teardown: engines, collectors, load
        proc.wait(timeout=60)
    return proc.returncode, (out / "stdout").read_text(), (out / "stderr").read_text()


def verdict(run, codes=(0, 1)) -> tuple:
    """(exit code, JSON report) of a finished run, which must have reached a verdict."""
    rc, stdout, stderr = run
    assert rc in codes, stderr
    return rc, json.loads(stdout)


@pytest.fixture(scope="module")
def engine_bin(build_dir):
    from conftest import built
    return str(built("bin/strata-engine"))


# Duet in fresh process pairs: 6 pairs of 3 one-second blocks, 1 s of warm-up each
DUET_PROFILE = PROFILE.replace("\nseconds = 12\npairs = 3\n", "\nseconds = 18\npairs = 6\n")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, engine_bin):
    """All runs, started together beside a busy loop pinned to one CPU (a neighbour that
    loads one CPU only): rounds mode with B's NFS replies delayed by 40 us; duet mode with
    the same binary on both sides at a 3 % threshold (its first pair's loads held back until
    stopped), with B delayed by about 3 % of the p50 of reads (90 ns of ~2.5-3 us) at the
    profile's 2 %, and by about 1 % (30 ns) at a 1 % threshold; and one whose every pair's
    loads are held back."""
    base = tmp_path_factory.mktemp("check-ab")
    engines = ("--a", engine_bin, "--b", engine_bin)
    hog = subprocess.Popen(["taskset", "-c", str(random.choice(sorted(os.sched_getaffinity(0)))),
                            "sh", "-c", "while :; do :; done"])
    started = {"planted": start_check_ab(base / "planted", *engines, "--mode", "rounds",
                                         "--b-inject-delay", "nfs:40us", profile=ROUNDS_PROFILE),
               "duet-planted": start_check_ab(base / "duet-planted", *engines, "--b-inject-delay", "nfs:90ns",
                                              "--threshold", "2%", profile=DUET_PROFILE),
               "duet-same": start_check_ab(base / "duet-same", *engines, "--threshold", "3%", profile=DUET_PROFILE,
                                           env=holding_loads(base / "bin-pair1", "*/pair1/load-duet-*")),
               "duet-late": start_check_ab(base / "duet-late", *engines, "--pairs", "3", "--seconds", "6",
                                           profile=DUET_PROFILE.replace("pair_warmup = 1", "pair_warmup = 0"),
                                           env=holding_loads(base / "bin-all", "*/load-duet-*")),
               "duet-1pct": start_check_ab(base / "duet-1pct", *engines, "--b-inject-delay", "nfs:30ns",
                                           "--threshold", "1%", profile=DUET_PROFILE)}
    try:
        return {name: finish(proc, base / name) for name, proc in started.items()}
    finally:
        hog.kill()
        hog.wait()
        for proc in started.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def percentile(hist: dict, q: float) -> float:
    """q-quantile of one pooled llhist histogram {bucket: count}, linear inside the bucket."""
    buckets = sorted(hist)
    counts = np.array([hist[b] for b in buckets], dtype=np.float64)
    target = q * counts.sum()
    cum = np.cumsum(counts)
    j = int(np.searchsorted(cum, target))
    before = cum[j - 1] if j else 0.0
    lo, hi = llhist.lower(buckets[j]), llhist.upper(buckets[j])
    return lo + (target - before) / counts[j] * (hi - lo)


def round_values(path) -> tuple[float, float]:
    """(p50 of reads, reads per second) of one round archive, from the raw per-second data."""
    with Archive.open(str(path)) as ar:
        first, last = ar.extent("nfs.latency[op]")
        lat = ar.query("nfs.latency[op]", first, last + 1)
        first, last = ar.extent("nfs.ops[op]")
        ops = ar.query("nfs.ops[op]", first, last + 1)
    k = lat.keys.index("read")
    pooled = lat.counts[k].sum(axis=0)
    hist = {int(b): int(c) for b, c in zip(lat.buckets, pooled) if c}
    seconds = int(ops.present.sum())
    return percentile(hist, 0.5), float(ops.values[ops.keys.index("read")].sum()) / seconds


def metric(report, dataset, name):
    [r] = [r for r in report["results"] if r["dataset"] == dataset and r["key"] == "read"]
    return next(m for m in r["metrics"] if m["metric"] == name), r


def test_planted_nfs_delay_reads_worse_and_agrees_with_the_round_archives(runs):
    rc, report = verdict(runs["planted"])
    assert rc == 1 and report["verdict"] == "worse", report
    assert report["order"] == "ABBA" * 4 and report["b_inject_delay"] == {"nfs": "40us"}
    p50, result = metric(report, "nfs.latency[op]", "p50")
    assert result["verdict"] == "worse" and p50["verdict"] == "worse"
    assert result["intervals"] == [8, 8]
    assert p50["effect"] > 0.2 and p50["ci_low"] > 0          # ~40 us on a median of a few tens of us

    # the same numbers, recomputed from the per-round archives
    values = [round_values(path) for path in report["rounds"]]
    assert [p.split("-")[-1][0] for p in report["rounds"]] == list(report["order"])
    a = [v for v, side in zip(values, report["order"]) if side == "A"]
    b = [v for v, side in zip(values, report["order"]) if side == "B"]
    ratios = np.array([vb[0] / va[0] for va, vb in zip(a, b)])
    assert p50["effect"] == pytest.approx(np.exp(np.log(ratios).mean()) - 1, rel=1e-6, abs=1e-9)
    assert p50["baseline"] == pytest.approx(np.exp(np.mean(np.log([v[0] for v in a]))), rel=1e-6)
    rate, _ = metric(report, "nfs.ops[op]", "rate")
    rate_ratios = np.array([vb[1] / va[1] for va, vb in zip(a, b)])
    assert rate["effect"] == pytest.approx(np.exp(np.log(rate_ratios).mean()) - 1, rel=1e-6, abs=1e-9)
    # the exact two-sided sign-flip p-value over the 8 pairs' log ratios, enumerated here
    d = np.log(ratios)
    flipped = [abs(np.dot(signs, d)) / len(d) for signs in itertools.product((1, -1), repeat=len(d))]
    assert p50["p_value"] == pytest.approx(np.mean(np.array(flipped) >= abs(d.mean()) - 1e-12))


def test_bad_arguments_are_one_line_and_exit_2(tmp_path, engine_bin):
    """Each refused before anything starts; the invocations run at once (each a Python start-up)."""
    profile = tmp_path / "ab.toml"
    profile.write_text(PROFILE)
    cases = [([str(profile), "--a", engine_bin], "side B"),
             ([str(profile), "--a", engine_bin, "--b", str(tmp_path)], "no strata-engine"),
             ([str(profile), "--a", engine_bin, "--b", engine_bin, "--b-inject-delay", "disk:1ms"], "TIER:DURATION"),
             ([str(profile), "--a", engine_bin, "--b", engine_bin, "--mode", "rounds", "--rounds", "7"], "even"),
             ([str(profile), "--a", engine_bin, "--b", engine_bin, "--seconds", "10", "--block-seconds", "2"],
              "6 blocks"),
             ([str(profile), "--a", engine_bin, "--b", engine_bin, "--pairs", "2"], "3 or more"),
             ([str(profile), "--a", engine_bin, "--b", engine_bin, "--pairs", "7"], "fewer than 2 blocks")]
    for n, (change, why) in enumerate(((('[ab]\n', '[ab]\nmode = "sideways"\n'), "ab.mode must be one of duet, rounds"),
                                       (('"randread"', '"write"'), "duet mode sends each READ to both sides"))):
        changed = tmp_path / f"changed{n}.toml"
        changed.write_text(PROFILE.replace(*change))
        cases.append(([str(changed), "--a", engine_bin, "--b", engine_bin], why))
    started = [(args, why, subprocess.Popen([*STRATA, "check", "ab", "--profile", *args],
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
               for args, why in cases]
    for args, why, proc in started:
        _, stderr = proc.communicate(timeout=180)   # all of them at once on a busy machine
        assert proc.returncode == 2 and why in stderr, (args, stderr)
        assert stderr.strip().count("\n") == 0, stderr


def duet_p50_ratios(a_path, b_path) -> np.ndarray:
    """B/A of the p50 of reads in every second both duet archives hold with reads on both sides
    (a machine stall can leave a second without any, which the check leaves out too), from the
    raw data."""
    sides = []
    for path in (a_path, b_path):
        with Archive.open(str(path)) as ar:
            first, last = ar.extent("nfs.latency[op]")
            sides.append(ar.query("nfs.latency[op]", first, last + 1))
    a, b = sides
    seconds = sorted(set(a.times[a.present].tolist()) & set(b.times[b.present].tolist()))
    seconds = [t for t in seconds if all(qr.counts[qr.keys.index("read")][qr.times.tolist().index(t)].sum()
                                         for qr in (a, b))]
    p50 = []
    for qr in (a, b):
        counts = qr.counts[qr.keys.index("read")]
        rows = [counts[qr.times.tolist().index(t)] for t in seconds]
        p50.append([percentile({int(k): int(c) for k, c in zip(qr.buckets, row) if c}, 0.5) for row in rows])
    return np.array(p50[1]) / np.array(p50[0])


def duet_reads(path) -> dict:
    """Reads per second of one duet archive, from its nfs.ops[op] counter."""
    with Archive.open(str(path)) as ar:
        first, last = ar.extent("nfs.ops[op]")
        ops = ar.query("nfs.ops[op]", first, last + 1)
    values = ops.values[ops.keys.index("read")]
    return {int(t): int(v) for t, v, p in zip(ops.times, values, ops.present) if p}


def pair_archives(report) -> list:
    return list(zip(report["archives"]["A"], report["archives"]["B"]))


def test_duet_sends_every_read_to_both_and_reads_a_planted_3_percent_worse(runs):
    """Beside the hog, a ~3 % delay (90 ns) at the profile's 2 % threshold is worse, or
    inconclusive when 6 short pairs on a loaded machine spread too far (seen once in
    three runs at a load average of ~12, floor ±5.8 %); never "same". The p50 effect is
    recomputed here from the pairs' archives: the 20 %-trimmed mean over the pairs of each
    pair's mean block log ratio."""
    rc, report = verdict(runs["duet-planted"], (1, 3))
    assert report["verdict"] in ("worse", "inconclusive") and rc == (1 if report["verdict"] == "worse" else 3), report
    assert report["mode"] == "duet" and report["b_inject_delay"] == {"nfs": "90ns"}
    p50, result = metric(report, "nfs.latency[op]", "p50")
    if result["verdict"] == "worse":        # on an interval above 0: the p50's, or the mean's or shape's
        assert any(m["ci_low"] > 0 and m["metric"] in result["reason"] for m in result["metrics"]), result
    else:                                   # never "same": its interval reaches past the threshold
        assert p50["ci_high"] > 0.02 and "could only see changes beyond" in runs["duet-planted"][2]
    pairs = pair_archives(report)
    assert len(pairs) == report["pairs"] >= 3 and report["blocks"] == 3 * len(pairs)
    means = [np.log(duet_p50_ratios(a, b)).mean() for a, b in pairs]
    trimmed = sorted(means)[int(0.2 * len(means)):len(means) - int(0.2 * len(means))]   # the 20 %-trimmed mean
    assert p50["effect"] == pytest.approx(np.expm1(np.mean(trimmed)), rel=1e-6, abs=1e-9)
    assert report["pair_p50_effects"] == pytest.approx(np.expm1(means).tolist(), rel=1e-6, abs=1e-9)
    # every pair is a fresh pair of engine processes, started in a random order, on copies of the pools
    # each side's engine wrote the working set to once
    assert runs["duet-planted"][2].count("writing both working sets once") == 1
    assert len(report["started"]) == len(pairs) and set(report["started"]) <= {"AB", "BA"}
    # paired: strata-load sent each read to A and to B, and each engine's probes saw them in the same seconds;
    # two loads per pair, one sending each pair to A first and one to B first
    loads = json.loads((Path(pairs[0][0]).parent / "duet.load.json").read_text())["pairs"]
    assert len(loads) == len(pairs) and report["first_server"] == "both"
    for sent in (load for pair in loads for load in pair):
        by_name = {c["name"]: c["ops"].get("read", 0) for c in sent["clients"]}
        assert by_name["client-0"] == by_name["client-0-b"] > 0 and sent["errors"] == 0
    cpus = report["cpus"]
    assert cpus["rotation"] == "ABBA per block" and cpus["swaps"] >= len(pairs) and cpus["servers"] != cpus["load"]
    for a_path, b_path in pairs:
        ra, rb = duet_reads(a_path), duet_reads(b_path)
        assert ra.keys() == rb.keys() and len(ra) == 3
        # each engine's probe counts a read that ended in its second's last 15 ms (STRATA_NFS_EDGE_NS) in
        # the next second: each side may count 15 ms of its reads there
        late = 0.015 * max(max(ra.values()), max(rb.values()))
        # and a batch begun in the warm-up's last second, fired late by an engine starved on a loaded
        # host (here beside a hog), counts in the block's first second: up to one batch (2048) more there
        first = min(ra)
        assert all(abs(ra[t] - rb[t]) <= 0.05 * ra[t] + 5 + 2 * late + (2048 if t == first else 0) for t in ra), \
            (ra, rb)


def test_duet_same_binary_on_both_sides_is_same_at_3_percent(runs):
    """Beside the hog, across 6 fresh pairs of engine processes (each with a bias of its own),
    the same binary on both sides is "same" at 3 % (its p50 interval inside ±3 %) or, when the
    pairs spread too far on a loaded machine, inconclusive; never worse or better, and the
    noise floor it reports is that interval's half-width."""
    rc, report = verdict(runs["duet-same"], (0, 3))
    p50, result = metric(report, "nfs.latency[op]", "p50")
    assert report["verdict"] in ("same", "inconclusive") and rc == (0 if report["verdict"] == "same" else 3), report
    if report["verdict"] == "same":
        assert -0.03 < p50["ci_low"] and p50["ci_high"] < 0.03
    assert report["noise_floor"] == pytest.approx(max(p50["ci_high"] - p50["effect"], p50["effect"] - p50["ci_low"]))
    assert report["pair_p50_sd"] > 0 and len(report["pair_p50_effects"]) == report["pairs"]


def test_duet_planted_1_percent_is_never_same_at_1_percent(runs):
    """A ~1 % delay (30 ns) at a 1 % threshold beside the hog: the pairs' spread is above what
    a 1 % answer needs, so the check says "inconclusive" (exit 3) with its floor and what to
    do, or "worse" if it truly sees it; never "same"."""
    rc, report = verdict(runs["duet-1pct"], (1, 3))
    assert report["verdict"] in ("inconclusive", "worse"), report
    p50, result = metric(report, "nfs.latency[op]", "p50")
    if report["verdict"] == "inconclusive":
        assert rc == 3 and report["noise_floor"] > 0
        assert "could only see changes beyond" in runs["duet-1pct"][2]
    else:                                   # on an interval above 0: the p50's, or the mean's or shape's
        assert rc == 1 and any(m["ci_low"] > 0 and m["metric"] in result["reason"] for m in result["metrics"])


def test_a_pair_whose_loads_began_too_late_runs_again_and_three_such_stop_the_check(runs):
    """A pair whose loads had not begun when its blocks ended (held back here until the check stops
    them, by a strata-load on STRATA_BIN_DIR, as a machine too busy for them would) measured
    nothing: the check runs it again in a fresh pair of engines and answers from the pairs that
    measured (duet-same, its first pair held). When 3 pairs were run again and one more is late,
    the check stops with one line and exit 2 (duet-late, every pair held); its blocks' seconds are
    in test_check_noise (loads_window)."""
    rc, report = verdict(runs["duet-same"], (0, 3))
    stderr = runs["duet-same"][2]
    assert stderr.count("running it again") == 1, stderr
    assert ("process pair 1 measured no whole block (strata-load duet-AB was stopped before its run began: held back "
            "by the test until stopped); running it again") in stderr
    assert len(report["archives"]["A"]) == len(report["pair_p50_effects"]) == report["pairs"] >= 3
    assert report["blocks"] == 3 * report["pairs"]
    rc, stdout, stderr = runs["duet-late"]
    assert rc == 2 and stdout == "" and "Traceback" not in stderr, stderr
    assert stderr.count("running it again") == 3 and stderr.count("process pair 1 measured no whole block") == 4
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("strata check ab: process pair 1 measured no whole block") and \
        "3 pairs were run again already, so the check stops" in last, stderr
