"""Duet blocks judged across process pairs (`strata check ab` with [ab] pairs > 1).

One pair of engine processes keeps a bias of its own through every block it
serves (on a shared VM, A/A pairs differ by a few percent, whichever CPU they
run on), so blocks of one pair are not independent samples of B/A: a test over
them measures how well that pair knows its own bias, not whether B differs from
A. A check therefore runs several fresh pairs one after another (checks/duet.py)
and treats each pair as a cluster: per metric, the mean log ratio over each
pair's blocks is one value, and the test is Yuen's trimmed t-test over those
values (a cluster-robust test: between-pair bias and within-pair noise both
enter its variance). It is trimmed because on a loaded machine a pair now and
then reads far off (+100 % or −10 % where the others spread by 2 %: a stall in
one of its two blocks), and one such pair would widen a plain t-interval
several-fold; the 20 %-trimmed mean leaves the extreme pairs out, the
winsorized variance keeps their spread, and P pairs give P − 2g − 1 degrees of
freedom (Yuen 1974; Wilcox, "Introduction to Robust Estimation and Hypothesis
Testing"). Effect: exp of the trimmed mean of the pairs' means − 1; the
interval is the trimmed t-interval at the confidence asked.
"""
import math

import numpy as np
from scipy import stats
from scipy.stats import mstats

from strata.checks.compare import METRICS, KeyVerdict, MetricResult, interval_metric, shift
from strata.checks.compare_duet import block_histograms, block_rates

MIN_PAIRS = 3     # fewer: no spread between pairs to test against
TRIM = 0.2        # share of the pairs left out at each end of the trimmed mean


def trimmed_t_test(means, confidence: float) -> tuple:
    """(trimmed mean, low, high, two-sided p) of Yuen's trimmed t-test of the values' TRIM-trimmed
    mean = 0: the lowest and highest g = int(TRIM * n) values are left out of the mean, its
    standard error is the winsorized standard deviation * sqrt(n) / (n - 2g), with n - 2g - 1
    degrees of freedom (Tukey-McLaughlin; below 5 values nothing is trimmed: a plain
    one-sample t-test)."""
    means = np.asarray(means, np.float64)
    n = len(means)
    g = int(TRIM * n)
    h = n - 2 * g
    centre = float(stats.trim_mean(means, g / n)) if g else float(means.mean())
    winsorized = np.asarray(mstats.winsorize(means, limits=(g / n, g / n))) if g else means
    se = float(winsorized.std(ddof=1)) * math.sqrt(n) / h
    if se == 0:
        return centre, centre, centre, (1.0 if centre == 0 else 0.0)
    half = float(stats.t.ppf(1 - (1 - confidence) / 2, h - 1)) * se
    p = float(2 * stats.t.sf(abs(centre) / se, h - 1))
    return centre, centre - half, centre + half, p


def _pair_means(values_a: list, values_b: list) -> tuple:
    """(per-pair mean log ratio, geometric mean of A's blocks, of B's) over pairs of
    per-block values; blocks with a missing or zero value on either side are left out."""
    means, la, lb = [], [], []
    for a, b in zip(values_a, values_b):
        keep = np.isfinite(a) & np.isfinite(b) & (a > 0) & (b > 0)
        if keep.any():
            means.append(float(np.mean(np.log(b[keep]) - np.log(a[keep]))))
            la += list(np.log(a[keep]))
            lb += list(np.log(b[keep]))
    return np.array(means), float(np.exp(np.mean(la))) if la else 0.0, float(np.exp(np.mean(lb))) if lb else 0.0


def _ratio_result(metric: str, values_a: list, values_b: list, confidence: float) -> MetricResult:
    means, base, cand = _pair_means(values_a, values_b)
    centre, lo, hi, p = trimmed_t_test(means, confidence)
    return MetricResult(metric, base, cand, math.expm1(centre), math.expm1(lo), math.expm1(hi), p)


def _too_few(key: str, pairs: int, blocks: int) -> KeyVerdict:
    return KeyVerdict(key, "same", (blocks, blocks),
                      reason=f"too few process pairs with data to judge ({pairs} < {MIN_PAIRS})")


def compare_pairs(key: str, pairs: list, block_seconds: int = 1, metrics=METRICS, confidence: float = 0.99):
    """The KeyVerdict (unjudged: compare.judge() sets verdicts) of one key over the
    process pairs' (qa, qb) QueryResults, and for heat maps the per-block p99 of
    each side, pairs one after another (for the Markdown summary)."""
    if pairs[0][0].kind == "heatmap":
        per_pair = []
        for qa, qb in pairs:
            buckets, a, b = block_histograms(qa, qb, key, block_seconds)
            keep = (a.sum(axis=1) > 0) & (b.sum(axis=1) > 0)
            if keep.any():
                per_pair.append((buckets, a[keep], b[keep]))
        blocks = sum(len(a) for _, a, _ in per_pair)
        if len(per_pair) < MIN_PAIRS:
            return _too_few(key, len(per_pair), blocks), None
        results = []
        for metric in metrics:
            va = [interval_metric(a, buckets, metric) for buckets, a, _ in per_pair]
            vb = [interval_metric(b, buckets, metric) for buckets, _, b in per_pair]
            results.append(_ratio_result(metric, va, vb, confidence))
        shifts = [np.mean([shift(x, y, buckets) for x, y in zip(a, b)]) for buckets, a, b in per_pair]
        centre, lo, hi, p = trimmed_t_test(np.array(shifts), confidence)
        results.append(MetricResult("shape", 0.0, 0.0, centre, lo, hi, p))
        series = (np.concatenate([interval_metric(a, buckets, "p99") for buckets, a, _ in per_pair]),
                  np.concatenate([interval_metric(b, buckets, "p99") for buckets, _, b in per_pair]))
        return KeyVerdict(key, "same", (blocks, blocks), results), series
    rates = [block_rates(qa, qb, key, block_seconds) for qa, qb in pairs]
    rates = [(a, b) for a, b in rates if ((a > 0) & (b > 0)).any()]
    blocks = sum(int(((a > 0) & (b > 0)).sum()) for a, b in rates)
    if len(rates) < MIN_PAIRS:
        return _too_few(key, len(rates), blocks), None
    result = _ratio_result("rate", [a for a, _ in rates], [b for _, b in rates], confidence)
    return KeyVerdict(key, "same", (blocks, blocks), [result]), None


def pair_p50_means(pairs_ratios: list) -> np.ndarray:
    """The per-pair mean of each pair's block p50 log ratios (pairs without blocks left out)."""
    return np.array([float(np.mean(d[np.isfinite(d)])) for d in pairs_ratios if np.isfinite(d).any()])
