"""Did a change move the latency distribution? The statistics behind `strata check`.

Two runs of one dataset key are compared as what they are: per-interval
llhist histograms (one per second, or per column of the query). Two families
of evidence, each judged against the noise between intervals of the same run:

1. Per-interval metrics (p50, p99, p99.9, mean): every interval gives one
   sample of each metric; baseline and candidate samples are compared with a
   Mann-Whitney U test (rank based, no normality assumed, as benchstat does)
   and the effect is the ratio of their medians, with a bootstrap confidence
   interval.
2. The whole shape: the Wasserstein (earth mover's) distance between the two
   pooled distributions of log10(value), split into the mass that moved up
   (slower) and the mass that moved down. Its significance comes from a
   permutation test that shuffles whole intervals between the runs, so a new
   slow mode that leaves every percentile in place is still caught.

A metric is "worse" when it is significant at the chosen confidence
(Bonferroni-corrected over the metrics tested) and its effect exceeds the
threshold; "better" symmetrically; otherwise "same". For latency, up is worse;
for counters (ops), down is worse.
"""
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import mannwhitneyu

from strata.datasets import llhist

METRICS = ("p50", "p99", "p99.9", "mean")
PERMUTATIONS = 400
BOOTSTRAPS = 1000


@dataclass
class MetricResult:
    metric: str
    baseline: float          # median over intervals (per-interval metrics) or pooled value
    candidate: float
    effect: float            # relative change (candidate/baseline - 1), or decades moved (shape)
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str             # better | same | worse


@dataclass
class KeyVerdict:
    key: str
    verdict: str
    intervals: tuple         # (baseline, candidate) intervals with data
    metrics: list = field(default_factory=list)
    reason: str = ""


def _bucket_mids(buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lo = np.array([llhist.lower(int(b)) for b in buckets], dtype=np.float64)
    hi = np.array([llhist.upper(int(b)) for b in buckets], dtype=np.float64)
    return lo, hi, (lo + hi) / 2


def interval_metric(hists: np.ndarray, buckets: np.ndarray, metric: str) -> np.ndarray:
    """One value of `metric` per interval (row of hists); NaN where a row is empty.
    Percentiles interpolate linearly inside the bucket that holds them."""
    lo, hi, mid = _bucket_mids(buckets)
    totals = hists.sum(axis=1).astype(np.float64)
    out = np.full(len(hists), np.nan)
    nonempty = totals > 0
    if metric == "mean":
        out[nonempty] = (hists[nonempty] @ mid) / totals[nonempty]
        return out
    q = {"p50": 0.5, "p99": 0.99, "p99.9": 0.999}[metric]
    cum = np.cumsum(hists, axis=1).astype(np.float64)
    for i in np.flatnonzero(nonempty):
        target = q * totals[i]
        j = int(np.searchsorted(cum[i], target, side="left"))
        j = min(j, len(buckets) - 1)
        before = cum[i, j - 1] if j > 0 else 0.0
        inside = hists[i, j]
        frac = (target - before) / inside if inside else 0.0
        out[i] = lo[j] + frac * (hi[j] - lo[j])
    return out


def _bootstrap_ratio_ci(a: np.ndarray, b: np.ndarray, confidence: float, rng) -> tuple[float, float]:
    ia = rng.integers(0, len(a), size=(BOOTSTRAPS, len(a)))
    ib = rng.integers(0, len(b), size=(BOOTSTRAPS, len(b)))
    ratios = np.median(b[ib], axis=1) / np.median(a[ia], axis=1) - 1
    tail = (1 - confidence) / 2 * 100
    return float(np.percentile(ratios, tail)), float(np.percentile(ratios, 100 - tail))


def _judge(effect: float, p: float, alpha: float, threshold: float, up_is_worse: bool) -> str:
    if p >= alpha or abs(effect) < threshold:
        return "same"
    slower = effect > 0
    return "worse" if slower == up_is_worse else "better"


def _shape_moves(base: np.ndarray, cand: np.ndarray, logmid: np.ndarray) -> tuple[float, float]:
    """Mass moved up and down, in decades of log10(value), between two pooled histograms."""
    fb = np.cumsum(base) / base.sum()
    fc = np.cumsum(cand) / cand.sum()
    widths = np.diff(logmid)
    diff = (fb - fc)[:-1]
    return float(np.sum(np.clip(diff, 0, None) * widths)), float(np.sum(np.clip(-diff, 0, None) * widths))


def shape_test(base: np.ndarray, cand: np.ndarray, buckets: np.ndarray, rng) -> tuple[float, float, float]:
    """(decades moved up, decades moved down, permutation p-value of the larger move)."""
    _, _, mid = _bucket_mids(buckets)
    logmid = np.log10(np.maximum(mid, 1.0))
    up, down = _shape_moves(base.sum(axis=0), cand.sum(axis=0), logmid)
    observed = max(up, down)
    pooled = np.vstack([base, cand])
    n = len(base)
    exceed = 0
    for _ in range(PERMUTATIONS):
        order = rng.permutation(len(pooled))
        a, b = pooled[order[:n]].sum(axis=0), pooled[order[n:]].sum(axis=0)
        if a.sum() == 0 or b.sum() == 0:
            continue
        pu, pd = _shape_moves(a, b, logmid)
        exceed += max(pu, pd) >= observed
    return up, down, (exceed + 1) / (PERMUTATIONS + 1)


def compare_histograms(key: str, base: np.ndarray, cand: np.ndarray, buckets: np.ndarray,
                       metrics=METRICS, threshold: float = 0.05, confidence: float = 0.99,
                       seed: int = 0) -> KeyVerdict:
    """Compare per-interval histograms (intervals × buckets, same bucket ids) of one key."""
    rng = np.random.default_rng(seed)
    base = base[base.sum(axis=1) > 0]
    cand = cand[cand.sum(axis=1) > 0]
    intervals = (len(base), len(cand))
    if min(intervals) < 3:
        return KeyVerdict(key, "same", intervals, reason="too few intervals with data to judge (< 3)")
    tests = len(metrics) + 1
    alpha = (1 - confidence) / tests
    results = []
    for metric in metrics:
        a = interval_metric(base, buckets, metric)
        b = interval_metric(cand, buckets, metric)
        p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue) if not np.array_equal(a, b) else 1.0
        effect = float(np.median(b) / np.median(a) - 1) if np.median(a) > 0 else 0.0
        lo, hi = _bootstrap_ratio_ci(a, b, confidence, rng)
        results.append(MetricResult(metric, float(np.median(a)), float(np.median(b)), effect, lo, hi, p,
                                    _judge(effect, p, alpha, threshold, up_is_worse=True)))
    up, down, p = shape_test(base, cand, buckets, rng)
    decades = np.log10(1 + threshold)
    moved = up if up >= down else -down
    shape = MetricResult("shape", 0.0, 0.0, moved, -down, up, p,
                         _judge(moved, p, alpha, decades, up_is_worse=True))
    results.append(shape)
    return KeyVerdict(key, _overall(results), intervals, results, _reason(results))


def compare_counts(key: str, base: np.ndarray, cand: np.ndarray, threshold: float = 0.05,
                   confidence: float = 0.99, seed: int = 0) -> KeyVerdict:
    """Compare per-interval event counts (ops/s) of one counter key: fewer is worse."""
    rng = np.random.default_rng(seed)
    base, cand = np.asarray(base, np.float64), np.asarray(cand, np.float64)
    if min(len(base), len(cand)) < 3 or np.median(base) == 0:
        return KeyVerdict(key, "same", (len(base), len(cand)), reason="too few intervals with data to judge")
    p = float(mannwhitneyu(base, cand, alternative="two-sided").pvalue) if not np.array_equal(base, cand) else 1.0
    effect = float(np.median(cand) / np.median(base) - 1)
    lo, hi = _bootstrap_ratio_ci(base, cand, confidence, rng)
    r = MetricResult("rate", float(np.median(base)), float(np.median(cand)), effect, lo, hi, p,
                     _judge(effect, p, 1 - confidence, threshold, up_is_worse=False))
    return KeyVerdict(key, r.verdict, (len(base), len(cand)), [r], _reason([r]))


def _overall(results: list) -> str:
    verdicts = {r.verdict for r in results}
    if "worse" in verdicts:
        return "worse"
    return "better" if "better" in verdicts else "same"


def _reason(results: list) -> str:
    moved = [r for r in results if r.verdict != "same"]
    if not moved:
        return "no metric moved beyond the threshold with significance"
    parts = []
    for r in moved:
        if r.metric == "shape":
            parts.append(f"shape {r.verdict}: {r.effect:+.3f} decades moved (p={r.p_value:.3g})")
        else:
            parts.append(f"{r.metric} {r.verdict}: {r.effect:+.1%} [{r.ci_low:+.1%}, {r.ci_high:+.1%}] (p={r.p_value:.2g})")
    return "; ".join(parts)


def align_buckets(a_buckets: np.ndarray, a_counts: np.ndarray, b_buckets: np.ndarray, b_counts: np.ndarray):
    """Re-index two (times × buckets) count arrays onto the union of their bucket ids."""
    union = np.union1d(a_buckets, b_buckets)
    out = []
    for ids, counts in ((a_buckets, a_counts), (b_buckets, b_counts)):
        dense = np.zeros((counts.shape[0], len(union)), dtype=np.int64)
        dense[:, np.searchsorted(union, ids)] = counts
        out.append(dense)
    return union, out[0], out[1]
