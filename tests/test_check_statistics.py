"""`strata check`'s statistics on synthetic runs and rounds whose truth is known:
sign-flip tests and their intervals, the multiple-comparison adjustments, paired
rounds with a known B/A ratio under a drifting machine (known ratio -> known
verdict), and the stored-baseline mode (no p-value from one run; the spread of
several runs is the noise)."""
import numpy as np
import pytest

from check_synthetic import aligned, base_sample, run, slow_mode_sample, tail_shifted_sample
from strata.checks.compare import adjust, interval_metric, judge
from strata.checks.compare_rounds import (compare_rounds_counts, compare_rounds_histograms, min_pairs,
                                            signflip_interval, signflip_p)
from strata.checks.compare_runs import compare_runs_counts, compare_runs_histograms

PAIRS = 12


def test_signflip_p_is_exact_for_few_pairs():
    assert signflip_p(np.ones(6)) == pytest.approx(2 / 64)          # only all-plus and all-minus as extreme
    assert signflip_p(np.array([1.0, -1.0, 1.0, -1.0])) == 1.0
    assert signflip_p(np.array([3.0, 1.0, 1.0, -1.0])) == pytest.approx(8 / 16)  # |±3 ±1 ±1 ±1| >= 4
    assert min_pairs(0.99) == 8 and min_pairs(0.99, tests=10) == 11


def test_signflip_interval_holds_the_mean_and_widens_with_confidence():
    d = np.random.default_rng(1).normal(0.05, 0.02, PAIRS)
    lo95, hi95 = signflip_interval(d, 0.95)
    lo99, hi99 = signflip_interval(d, 0.99)
    assert lo99 <= lo95 < d.mean() < hi95 <= hi99
    assert lo95 > 0                                                  # 0 is rejected: the p-value agrees
    assert signflip_p(d) < 0.05
    assert signflip_interval(d[:4], 0.99) == (-np.inf, np.inf)       # 4 pairs cannot reach p < 0.01


def test_holm_and_benjamini_hochberg_by_hand():
    p = [0.01, 0.04, 0.03, 0.005, None]
    assert adjust(p, "holm")[:4] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert adjust(p, "holm")[4] is None
    assert adjust(p, "bh")[:4] == pytest.approx([0.02, 0.04, 0.04, 0.02])


def drifting_rates(rng, ratio, pairs=PAIRS):
    """Per-pair machine drift of ±20 % shared by both rounds of a pair, 1 % noise per round."""
    drift = rng.lognormal(0, 0.2, pairs) * 10_000
    return drift * rng.lognormal(0, 0.01, pairs), drift * ratio * rng.lognormal(0, 0.01, pairs)


@pytest.mark.parametrize("ratio,verdict", [(1.0, "same"), (0.95, "worse"), (1.05, "better")])
def test_known_ratio_gives_known_verdict_despite_drift(ratio, verdict):
    rng = np.random.default_rng(7)
    a, b = drifting_rates(rng, ratio)
    [(_, kv)] = judge([("nfs.ops[op]", compare_rounds_counts("read", a, b))], 0.02, 0.99)
    assert kv.verdict == verdict, kv.reason
    m = kv.metrics[0]
    assert m.ci_low <= ratio - 1 <= m.ci_high
    assert m.effect == pytest.approx(ratio - 1, abs=0.01)


def test_multiple_comparison_control_keeps_null_keys_same():
    """60 keys that did not change: unadjusted, some p-values fall below 0.01 by chance;
    after BH or Holm none is called."""
    rng = np.random.default_rng(11)
    results = [("nfs.ops[client]", compare_rounds_counts(f"c{i}", *drifting_rates(rng, 1.0)))
               for i in range(60)]
    raw = [kv.metrics[0].p_value for _, kv in results]
    assert sum(p < 0.01 for p in raw) >= 1                        # chance alone would have alarmed
    for method in ("bh", "holm"):
        judged = judge(results, 0.0, 0.99, method)
        assert all(kv.verdict == "same" for _, kv in judged), method


def rounds(sampler_b, seed, pairs=PAIRS, seconds=3):
    """Pooled round histograms of A (base_sample) and B (sampler_b), on one bucket axis."""
    runs = [run(base_sample, seed + i, seconds) for i in range(pairs)] + \
           [run(sampler_b, seed + 1000 + i, seconds) for i in range(pairs)]
    buckets, dense = aligned(*runs)
    pooled = np.array([h.sum(axis=0) for h in dense])
    return buckets, pooled[:pairs], pooled[pairs:]


def metric(kv, name):
    return next(m for m in kv.metrics if m.metric == name)


def test_rounds_same_distribution_is_same():
    buckets, a, b = rounds(base_sample, 100)
    [(_, kv)] = judge([("d", compare_rounds_histograms("k", a, b, buckets))], 0.02, 0.99)
    assert kv.verdict == "same", kv.reason


def test_rounds_slower_tail_is_worse_on_p99_with_its_size():
    buckets, a, b = rounds(tail_shifted_sample, 200)
    [(_, kv)] = judge([("d", compare_rounds_histograms("k", a, b, buckets))], 0.02, 0.99)
    p99 = metric(kv, "p99")
    assert kv.verdict == "worse" and p99.verdict == "worse", kv.reason
    assert p99.ci_low < 0.10 < p99.ci_high                          # the tail moved by 10 %
    assert metric(kv, "p50").verdict == "same"


def test_rounds_new_slow_mode_is_caught_by_the_shape():
    buckets, a, b = rounds(slow_mode_sample, 300)
    [(_, kv)] = judge([("d", compare_rounds_histograms("k", a, b, buckets, metrics=("p50", "p99")))], 0.02, 0.99)
    assert metric(kv, "p99").verdict == "same"
    assert metric(kv, "shape").verdict == "worse" and kv.verdict == "worse"


def test_one_baseline_run_gives_no_p_value_and_uses_the_threshold():
    buckets, a, b = rounds(tail_shifted_sample, 400, pairs=1, seconds=20)
    [(_, kv)] = judge([("d", compare_runs_histograms("k", a, b[0], buckets))], 0.25, 0.99)
    assert all(m.p_value is None for m in kv.metrics)
    assert kv.verdict == "same"                                      # +10 % p99 < 25 % threshold
    [(_, kv)] = judge([("d", compare_runs_histograms("k", a, b[0], buckets))], 0.05, 0.99)
    assert metric(kv, "p99").verdict == "worse"


def test_several_baseline_runs_put_their_spread_into_the_test():
    rng = np.random.default_rng(5)
    base = rng.lognormal(0, 0.10, 6) * 10_000                        # runs spread by ~10 %
    inside = compare_runs_counts("k", base, float(np.exp(np.log(base).mean())) * 0.85)
    outside = compare_runs_counts("k", base, float(np.exp(np.log(base).mean())) * 0.40)
    [(_, inside), (_, outside)] = judge([("d", inside), ("d", outside)], 0.05, 0.99)
    assert inside.verdict == "same" and inside.metrics[0].p_value > 0.01
    assert outside.verdict == "worse"


def test_interval_percentiles_interpolate_inside_the_bucket():
    buckets = np.array([100, 101])                  # [100,110) and [110,120)
    hists = np.array([[50, 50], [100, 0], [0, 0]])
    p50 = interval_metric(hists, buckets, "p50")
    assert p50[0] == pytest.approx(110.0)
    assert p50[1] == pytest.approx(105.0)
    assert np.isnan(p50[2])


def test_a_key_only_one_run_has_is_judged_by_its_share():
    from strata.checks.baselines import one_sided
    from strata.datasets.query import QueryResult

    def counter(keys, totals):
        return QueryResult(name="nfs.ops[op]", statistic="nfs.ops", kind="counter", unit="ops", step=1,
                           times=np.arange(10), keys=keys,
                           values=np.array([[t // 10] * 10 for t in totals], dtype=np.int64))
    base = counter(["read"], [10_000])
    stray = counter(["read", "write"], [10_000, 20])        # 0.2 %: noise
    real = counter(["read", "write"], [10_000, 3_000])      # a new op with 23 % of the events
    assert one_sided("write", base, stray, 0.1).verdict == "same"
    new = one_sided("write", base, real, 0.1)
    assert new.verdict == "worse" and new.intervals == (0, 10) and "new in the candidate" in new.reason
    assert one_sided("write", real, base, 0.1).verdict == "better"
