"""What keeps a `strata check ab` honest on a busy machine, on inputs whose truth is
known: the duet's CPU rotation (ABBA, real re-pinning of a real process), the
confidence sequence it stops on (its miscoverage over every look, simulated),
the test across fresh process pairs and its two looks with their error rate spent
O'Brien-Fleming-style (simulated pairs with a bias each),
the noise floor that turns an undecided "same" into "inconclusive" (exit 3), and the
time a check's progress says is left, its set-up included."""
import io
import os
import subprocess
import sys

import numpy as np
import pytest
from rich.console import Console

from strata.checks.compare import KeyVerdict, MetricResult, judge
from strata.checks.compare_pairs import trimmed_t_test
from strata.checks.duet_pairs import decided as pairs_decided, looks, spent
from strata.checks.noise import advice, apply_floor
from strata.checks.placement import Rotation, swapped
from strata.checks.progress import CheckProgress
from strata.checks.report import EXIT, Verdict, emit, overall, print_table
from strata.checks.sequential import MIN_BLOCKS, confidence_sequence, decided


def test_rotation_is_abba_so_each_placement_holds_half_of_every_four_blocks():
    pattern = [swapped(k) for k in range(16)]
    assert pattern[:4] == [False, True, True, False]
    for k in range(0, 16, 4):
        assert sum(pattern[k:k + 4]) == 2
    # a steady drift over four blocks lands on both placements alike: 0+3 == 1+2
    assert sum(k for k in range(4) if swapped(k)) == sum(k for k in range(4) if not swapped(k))


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to swap")
def test_rotation_repins_real_processes_every_block():
    server = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    load = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        r = Rotation()
        r.servers, r.loads = [server.pid], [load.pid]
        seen = []
        for block in range(4):
            r.place(block)
            seen.append((os.sched_getaffinity(server.pid), os.sched_getaffinity(load.pid)))
        a, b = r.cpus
        assert seen == [({a}, {b}), ({b}, {a}), ({b}, {a}), ({a}, {b})]
        assert r.swaps == 2 and r.describe()["rotation"] == "ABBA per block"
    finally:
        for p in (server, load):
            p.kill()
            p.wait()


def test_confidence_sequence_keeps_its_error_rate_over_every_look():
    """A/A blocks (mean 0), looked at after every block from MIN_BLOCKS to 60: the share
    of checks whose sequence ever excludes 0 stays below alpha; a fixed 99 % normal
    interval looked at as often misses far more."""
    rng = np.random.default_rng(7)
    alpha, planned, checks = 0.05, 60, 400
    ever_cs = ever_fixed = 0
    for _ in range(checks):
        d = rng.standard_t(5, planned) * 0.01
        missed_cs = missed_fixed = False
        for n in range(MIN_BLOCKS, planned + 1):
            _, lo, hi = confidence_sequence(d[:n], alpha, planned)
            missed_cs |= lo > 0 or hi < 0
            half = 1.96 * d[:n].std(ddof=1) / np.sqrt(n)
            missed_fixed |= abs(d[:n].mean()) > half
        ever_cs += missed_cs
        ever_fixed += missed_fixed
    assert ever_cs / checks <= alpha
    assert ever_fixed / checks > ever_cs / checks + 0.05
    assert confidence_sequence(np.zeros(MIN_BLOCKS - 1), alpha, planned) is None


def test_decided_stops_on_a_clear_change_and_on_a_clear_same_only():
    rng = np.random.default_rng(3)
    noise = rng.normal(0, 0.005, 40)
    assert decided(np.log(1.05) + noise, 0.02, 0.01, 60) == "worse"
    assert decided(np.log(0.95) + noise, 0.02, 0.01, 60) == "better"
    assert decided(noise, 0.02, 0.01, 60) == "same"
    assert decided(np.log(1.02) + noise, 0.02, 0.01, 60) is None        # at the threshold: keep measuring
    assert decided(rng.normal(0, 0.05, 40), 0.02, 0.01, 60) is None     # too noisy to say "same"


def _p50(effect, lo, hi):
    kv = KeyVerdict("read", "same", (30, 30), [MetricResult("p50", 1.0, 1 + effect, effect, lo, hi, 0.5)])
    return [("nfs.latency[op]", kv)]


def test_same_needs_an_interval_inside_the_threshold_else_inconclusive(tmp_path):
    narrow = judge(_p50(0.004, -0.002, 0.010), 0.02, 0.99)
    assert apply_floor(narrow, 0.02) == pytest.approx(0.006) and overall(narrow) == "same"
    assert narrow[0][1].reason.startswith("p50 +0.4% [-0.2%, +1.0%] is inside ±2.0%, noise floor ±0.6%; ")
    table = Console(width=200, record=True, file=io.StringIO())
    print_table(narrow, table, "blocks", {"noise_floor": 0.006, "threshold": 0.02})
    shown = table.export_text()
    assert "noise floor ±0.6% (" in shown and "threshold 2.0%" in shown

    wide = judge(_p50(0.004, -0.03, 0.04), 0.02, 0.99)          # floor ±3.6 % above a 2 % threshold
    assert apply_floor(wide, 0.02) == pytest.approx(0.036)
    assert overall(wide) == "inconclusive" and "noise floor ±3.6%" in wide[0][1].reason

    straddling = judge(_p50(0.018, 0.012, 0.024), 0.02, 0.99)   # narrow, but a 2.4 % change is not ruled out
    apply_floor(straddling, 0.02)
    assert overall(straddling) == "inconclusive" and "reaches past" in straddling[0][1].reason

    junit = tmp_path / "j.xml"
    assert emit(Verdict(wide, {}, "A", "B", "blocks"), lambda body: "", str(junit), None) == EXIT["inconclusive"] == 3
    assert 'skipped="1"' in junit.read_text() and "<skipped" in junit.read_text()
    line = advice(0.036, 0.02, "duet")
    assert "\n" not in line and "±3.6%" in line and "--seconds" in line


def test_worse_and_better_are_left_as_judged():
    worse = judge([("nfs.latency[op]", KeyVerdict("read", "same", (30, 30), [
        MetricResult("p50", 1.0, 1.05, 0.05, 0.01, 0.09, 0.001)]))], 0.02, 0.99)
    apply_floor(worse, 0.02)
    assert overall(worse) == "worse"


def test_same_layout_turns_randomisation_off_for_the_processes_started_after():
    """Two processes started after same_layout() map their stack at the same address
    (a fresh interpreter in a child, so this test's own process is left as it was)."""
    code = ("import subprocess\n"
            "from strata.checks.layout import same_layout\n"
            "assert same_layout()\n"
            "maps = [subprocess.run(['grep', '-m1', 'stack', '/proc/self/maps'], capture_output=True, text=True).stdout"
            " for _ in range(2)]\n"
            "print(maps[0] == maps[1] and bool(maps[0]))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert out.stdout.strip() == "True", out.stderr
    # without it, two processes draw two layouts
    maps = [subprocess.run(["grep", "-m1", "stack", "/proc/self/maps"], capture_output=True, text=True).stdout
            for _ in range(2)]
    assert maps[0] != maps[1]


def test_pairs_carry_their_bias_into_the_interval_and_the_looks_keep_the_error_rate():
    """A/A with a bias of its own in each pair of engine processes (sd 3 %, the size seen on
    this VM) and little noise between a pair's blocks: one pair's block test claims a
    difference far more often than its alpha; the t-test across 10 fresh pairs, looked at
    after 5 and 10 pairs with the error rate spent O'Brien-Fleming-style, stays within
    alpha over both looks, and so does a false "same" when the true change is the threshold."""
    rng = np.random.default_rng(11)
    alpha, checks, blocks, threshold = 0.05, 400, 4, 0.03
    plan = looks(10, True)
    per_look = spent(plan, alpha)
    one_pair_wrong = across_wrong = false_same = 0
    for _ in range(checks):
        bias = rng.normal(0, 0.03, 10)
        d = bias[:, None] + rng.normal(0, 0.01, (10, blocks))
        _, lo, hi, _ = trimmed_t_test(d[0], 1 - alpha)                     # one pair, its blocks the unit
        one_pair_wrong += lo > 0 or hi < 0
        wrong = same = False
        for n, a in zip(plan, per_look):                            # every look's interval, stopped or not
            _, lo, hi, _ = trimmed_t_test(d[:n].mean(axis=1), 1 - a)
            wrong |= lo > 0 or hi < 0
            same |= pairs_decided(np.log1p(threshold) + d[:n].mean(axis=1), threshold, 1 - a) == "same"
        across_wrong += wrong
        false_same += same
    assert plan == [5, 10] and looks(10, False) == [10] and looks(4, True) == [3, 4]
    assert across_wrong / checks <= alpha + 0.02           # + two binomial sds of 400 checks
    assert false_same / checks <= alpha + 0.02
    assert one_pair_wrong / checks > 0.5


def test_the_trimmed_test_keeps_its_error_rate_and_shrugs_off_a_stalled_pair():
    """Its interval is scipy's Tukey-McLaughlin interval of the 20 %-trimmed mean; over 14
    A/A pairs (sd 3 %, and one pair in ten stalled by up to +-100 %) its two looks stay
    within alpha; one pair at +100 % beside 13 clean ones at +5 % leaves it "worse", where
    a plain t-test could not tell (its interval reaches below 0)."""
    from scipy.stats import mstats
    rng = np.random.default_rng(17)
    for n in (5, 10, 15):                      # where scipy trims as many (int(0.2 n)) values
        x = rng.normal(0, 1, n)
        assert trimmed_t_test(x, 0.99)[1:3] == pytest.approx(tuple(mstats.trimmed_mean_ci(x, (0.2, 0.2),
                                                                                          alpha=0.01)))
    alpha, checks, wrong = 0.05, 400, 0
    plan = looks(14, True)
    for _ in range(checks):
        means = rng.normal(0, 0.03, 14) + (rng.random(14) < 0.1) * rng.uniform(-1, 1, 14)
        intervals = [trimmed_t_test(means[:n], 1 - a)[1:3] for n, a in zip(plan, spent(plan, alpha))]
        wrong += any(lo > 0 or hi < 0 for lo, hi in intervals)
    assert wrong / checks <= alpha + 0.02
    clean = np.log(1.05) + rng.normal(0, 0.005, 13)
    assert pairs_decided(np.append(clean, np.log(2.0)), 0.02, 0.99) == "worse"
    plain = np.append(clean, np.log(2.0))
    half = 3.01 * plain.std(ddof=1) / np.sqrt(14)          # t(13, 0.995): the untrimmed interval
    assert plain.mean() - half < 0


def test_the_spending_gives_the_last_look_nearly_all_of_alpha():
    """The looks' error rates add up to alpha; the early look gets what O'Brien-Fleming's
    function gives half the information (2 - 2 Phi(z / sqrt(1/2))), the last the rest;
    one look alone gets all of it."""
    per_look = spent([5, 10], 0.01)
    assert sum(per_look) == pytest.approx(0.01)
    assert per_look[0] == pytest.approx(0.00027, abs=0.00001)
    assert spent([10], 0.01) == [pytest.approx(0.01)]
    assert spent([3, 6, 9, 12], 0.01)[0] < spent([3, 6, 9, 12], 0.01)[1] < spent([3, 6, 9, 12], 0.01)[3]


def test_pairs_decide_a_clear_change_and_a_clear_same_only():
    rng = np.random.default_rng(5)
    spread = rng.normal(0, 0.004, 8)
    assert pairs_decided(np.log(1.06) + spread, 0.02, 0.975) == "worse"
    assert pairs_decided(np.log(0.94) + spread, 0.02, 0.975) == "better"
    assert pairs_decided(spread, 0.02, 0.975) == "same"
    assert pairs_decided(rng.normal(0, 0.03, 8), 0.02, 0.975) is None    # pairs too far apart to say "same"


def test_a_pair_whose_collector_is_late_starts_an_even_number_of_blocks_later():
    """A window moved past a slow collector's first second keeps its blocks on both CPU
    placements alike: it moves by whole ABBA halves from the rotation's block 0."""
    from strata.checks.duet_pairs import later_start
    assert [later_start(100, e, 1) for e in (90, 100, 101, 102, 103)] == [100, 100, 102, 102, 104]
    assert [later_start(100, e, 2) for e in (100, 101, 103, 105)] == [100, 104, 104, 108]
    for earliest in range(100, 120):
        start = later_start(100, earliest, 1)
        assert start >= earliest and [swapped(start - 100 + k) for k in range(2)].count(True) == 1


def test_a_pair_whose_loads_began_late_keeps_a_second_of_warm_up_or_has_no_block_left():
    """The measured window of a pair (block 0 at origin 100, planned at `start`) once its two loads'
    reports are in: loads that began late shorten its warm-up, then move it an even number of blocks
    on past 1 s of load, ending when the first load ended; past its end, no block is left
    (PairTooLate: the check runs the pair again)."""
    from strata.checks.duet_pairs import MIN_WARMUP, loads_window

    def sent(*starts, stopped=110.5):
        return [{"start_unix": s, "duration_s": stopped - s} for s in starts]
    assert MIN_WARMUP == 1
    assert loads_window(sent(97.3, 97.9), 100, 100, 8, 2, 1) == (100, 108, None)     # 2 s of warm-up
    assert loads_window(sent(97.0, 98.2), 100, 100, 8, 2, 1) == (100, 108, 1)        # 1 s left
    assert loads_window(sent(99.5, 98.0), 100, 100, 8, 2, 1) == (102, 108, 2)        # moved 2 blocks on
    assert loads_window(sent(99.5, 98.0) + sent(98, stopped=106.5), 100, 100, 8, 2, 1) == (102, 106, 2)
    start, end, _ = loads_window(sent(106.2, 98.0), 100, 100, 8, 2, 1)
    assert start == end == 108                                                         # no block left
    assert loads_window(sent(100.4), 100, 100, 4, 1, 2) == (104, 108, 3)              # 2 s blocks: 1 ABBA half on
    assert loads_window(sent(99.0, 99.9), 100, 102, 8, 2, 1) == (102, 110, None)     # moved by a late collector


def test_time_left_counts_the_set_up_between_blocks(capsys, monkeypatch):
    """Blocks of 1 s that took 3 s each, set-up included: 3 s a block is what is left."""
    now = [100.0]
    monkeypatch.setattr("strata.checks.progress.time.monotonic", lambda: now[0])
    with CheckProgress("blocks", 4, 1) as p:     # stderr is captured, so one plain line per block
        now[0] = 106.0
        p.update(2)
        now[0] = 112.0
        p.update(4)
    lines = capsys.readouterr().err.splitlines()
    assert lines[1] == "strata check ab: block 2/4, 6s left" and lines[3].endswith("block 4/4, 0s left")
