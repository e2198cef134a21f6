"""The duet design's statistics (strata.checks.compare_duet) on synthetic per-second
histograms whose truth is known: seconds are aligned across the two sides and cut
into blocks; a drift shared by both sides second by second (what a busy machine
does to two servers that serve at once) does not hide a 5 % change nor invent one;
lag1() sees correlated blocks. The end-to-end duet check is in test_check_ab.py."""
import numpy as np
import pytest

from check_synthetic import aligned
from strata.datasets import llhist
from strata.checks.compare import judge
from strata.checks.compare_duet import block_histograms, block_rates, common_seconds, compare_duet, lag1
from strata.datasets.query import QueryResult

T0 = 1_700_000_000


def heatmap(rows: np.ndarray, buckets: np.ndarray, present=None, key="read") -> QueryResult:
    """A one-key heat-map QueryResult of seconds T0, T0+1, ... holding rows (seconds × buckets)."""
    n = len(rows)
    return QueryResult("nfs.latency[op]", "nfs.latency", "heatmap", "ns", 1, T0 + np.arange(n), [key],
                       buckets=np.asarray(buckets, np.int64), counts=np.asarray(rows, np.uint64)[None],
                       present=np.ones(n, bool) if present is None else np.asarray(present))


def counter(values, present=None) -> QueryResult:
    n = len(values)
    return QueryResult("nfs.ops[op]", "nfs.ops", "counter", "ops", 1, T0 + np.arange(n), ["read"],
                       values=np.asarray(values, np.int64)[None],
                       present=np.ones(n, bool) if present is None else np.asarray(present))


def test_blocks_hold_the_seconds_both_sides_collected():
    a = heatmap([[1, 0], [2, 0], [3, 0], [4, 0], [5, 0]], [10, 20])
    b = heatmap([[0, 1], [0, 2], [0, 3], [0, 4]], [20, 30], present=[True, True, False, True])
    assert common_seconds(a, b).tolist() == [T0, T0 + 1, T0 + 3]      # B missed T0+2, A's T0+4 has no B
    buckets, ra, rb = block_histograms(a, b, "read", 1)
    assert buckets.tolist() == [10, 20, 30]
    assert ra.tolist() == [[1, 0, 0], [2, 0, 0], [0, 0, 0], [4, 0, 0]]  # block ids follow the clock
    assert rb.tolist() == [[0, 0, 1], [0, 0, 2], [0, 0, 0], [0, 0, 4]]
    _, ra2, rb2 = block_histograms(a, b, "read", 2)
    assert ra2.tolist() == [[3, 0, 0], [4, 0, 0]] and rb2.tolist() == [[0, 0, 3], [0, 0, 4]]
    _, _, none = block_histograms(a, heatmap([[1, 1]] * 5, [20, 30], key="write"), "read", 1)
    assert none.sum() == 0                                             # a side without the key: zeros
    ca, cb = block_rates(counter([10, 20, 30, 40]), counter([11, 19, 0, 42], [True, True, False, True]), "read", 2)
    assert ca.tolist() == [15.0, 40.0] and cb.tolist() == [15.0, 42.0]


def duet(shift: float, seed: int, seconds: int = 60, events: int = 2000):
    """Per-second histograms of A and B serving at once: each second the machine scales both
    sides' latencies by the same random factor (±20 %); B is `shift` slower on top."""
    rng = np.random.default_rng(seed)
    rows_a, rows_b = [], []
    for _ in range(seconds):
        drift = rng.lognormal(0, 0.2)
        for rows, factor in ((rows_a, 1.0), (rows_b, 1.0 + shift)):
            v = rng.lognormal(np.log(20e3), 0.3, events) * drift * factor
            rows.append(llhist.buckets_of(v.astype(np.uint64)))
    buckets, (a, b) = aligned(rows_a, rows_b)
    return heatmap(a, buckets), heatmap(b, buckets)


def verdict(qa, qb, threshold=0.02):
    kv, series = compare_duet("read", qa, qb, 1, ("p50", "mean"), 0.99)
    [(_, kv)] = judge([("nfs.latency[op]", kv)], threshold, 0.99)
    return kv, {m.metric: m for m in kv.metrics}, series


@pytest.mark.parametrize("seed", [1, 2])
def test_a_shared_drift_hides_no_five_percent_change_and_invents_none(seed):
    same, m_same, series = verdict(*duet(0.0, seed))
    assert same.verdict == "same" and same.intervals == (60, 60)
    assert m_same["p50"].ci_low < 0 < m_same["p50"].ci_high and m_same["p50"].ci_high - m_same["p50"].ci_low < 0.03
    assert len(series[0]) == 60                                   # one p99 per block for the summary
    worse, m_worse, _ = verdict(*duet(0.05, seed))
    assert worse.verdict == "worse" and m_worse["p50"].verdict == "worse"
    assert m_worse["p50"].ci_low < 0.05 < m_worse["p50"].ci_high   # the interval holds the planted 5 %


def test_lag1_sees_correlated_blocks():
    rng = np.random.default_rng(3)
    white = rng.normal(size=2000)
    ar = np.zeros_like(white)
    for i in range(1, len(ar)):
        ar[i] = 0.8 * ar[i - 1] + white[i]
    assert abs(lag1(white)) < 0.1 and lag1(ar) == pytest.approx(0.8, abs=0.05)
    assert np.isnan(lag1(np.ones(10))) and np.isnan(lag1(np.array([1.0, 2.0])))
