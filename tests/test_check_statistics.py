"""`strata check`'s statistics on synthetic runs whose truth is known: the same
distribution twice must read "same", a 10 % slower p99 or a new slow mode with
p99 unchanged must read "worse" — at the rates the check promises."""
import numpy as np
import pytest

from check_synthetic import aligned, base_sample, run, slow_mode_sample, tail_shifted_sample
from strata.datasets.compare import compare_counts, compare_histograms, interval_metric

TRIALS = 100


def verdicts(sampler, metrics=("p50", "p99", "p99.9", "mean")):
    out = []
    for trial in range(TRIALS):
        buckets, (a, b) = aligned(run(base_sample, 10_000 + trial), run(sampler, 20_000 + trial))
        out.append(compare_histograms("k", a, b, buckets, metrics=metrics, seed=trial).verdict)
    return out


def test_same_distribution_reads_same_in_99_of_100():
    v = verdicts(base_sample)
    assert v.count("same") >= 99, v


def test_p99_ten_percent_slower_reads_worse_in_95_of_100():
    v = verdicts(tail_shifted_sample)
    assert v.count("worse") >= 95, v


def test_new_slow_mode_with_p99_unchanged_reads_worse_in_95_of_100():
    v = verdicts(slow_mode_sample)
    assert v.count("worse") >= 95, v


def test_slow_mode_is_caught_by_the_shape_alone():
    buckets, (a, b) = aligned(run(base_sample, 1), run(slow_mode_sample, 2))
    result = compare_histograms("k", a, b, buckets, metrics=("p50", "p99"))
    by_metric = {m.metric: m for m in result.metrics}
    assert by_metric["p99"].verdict == "same"      # the percentile really is unchanged
    assert by_metric["shape"].verdict == "worse"   # and the shape still sees the new mode
    assert result.verdict == "worse"


def test_interval_percentiles_interpolate_inside_the_bucket():
    buckets = np.array([100, 101])                  # [100,110) and [110,120)
    hists = np.array([[50, 50], [100, 0], [0, 0]])
    p50 = interval_metric(hists, buckets, "p50")
    assert p50[0] == pytest.approx(110.0)
    assert p50[1] == pytest.approx(105.0)
    assert np.isnan(p50[2])


def test_counters_fewer_ops_is_worse():
    rng = np.random.default_rng(3)
    base = rng.poisson(10_000, 60)
    assert compare_counts("k", base, rng.poisson(10_000, 60)).verdict == "same"
    assert compare_counts("k", base, rng.poisson(8_000, 60)).verdict == "worse"
    assert compare_counts("k", base, rng.poisson(12_000, 60)).verdict == "better"


def test_a_key_only_one_run_has_is_judged_by_its_share():
    from strata.cli.check_cmd import one_sided
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
