"""Paired rounds (`strata check ab`): A and B alternate in short rounds (ABBA...),
and each pair of adjacent rounds gives one log ratio ln(B/A) per metric, so the
drift of a shared machine over minutes cancels within a pair and the spread
between pairs is the noise the test uses.

Per metric: effect = geometric mean of the per-pair ratios − 1; p-value from a
sign-flip permutation test of the mean log ratio (exact up to EXACT_PAIRS pairs,
Monte Carlo beyond); interval from inverting that test (the shifts the test
does not reject at the confidence asked). The shape uses the signed distance of
compare.shift() per pair in place of the log ratio. Verdicts: compare.judge().

With n pairs an exact two-sided sign-flip test cannot go below 2/2^n, so the
number of rounds bounds the confidence a check can reach (min_pairs()).
"""
import math

import numpy as np

from strata.checks.compare import METRICS, KeyVerdict, MetricResult, interval_metric, shift

EXACT_PAIRS = 16
MONTE_CARLO = 20_000
_SIGNS: dict = {}


def _sign_patterns(n: int) -> np.ndarray:
    if n not in _SIGNS:
        codes = np.arange(2 ** n)[:, None] >> np.arange(n)[None, :]
        _SIGNS[n] = np.where(codes & 1, -1.0, 1.0)
    return _SIGNS[n]


def _random_signs(n: int) -> np.ndarray:
    """MONTE_CARLO fixed random sign patterns for n pairs (the same each call: a
    verdict does not depend on the draw, and an interval's bisection is cheap)."""
    key = ("mc", n)
    if key not in _SIGNS:
        _SIGNS[key] = np.random.default_rng(0).choice((-1.0, 1.0), size=(MONTE_CARLO, n))
    return _SIGNS[key]


def signflip_p(d: np.ndarray) -> float:
    """Two-sided p-value of mean(d) = 0 against sign flips of the pairs."""
    d = np.asarray(d, np.float64)
    n = len(d)
    observed = abs(d.mean())
    tol = 1e-12 * max(1.0, float(np.abs(d).max(initial=0.0)))
    if n <= EXACT_PAIRS:
        stats = np.abs(_sign_patterns(n) @ d) / n
        return float(np.mean(stats >= observed - tol))
    exceed = int(np.sum(np.abs(_random_signs(n) @ d) / n >= observed - tol))
    return (exceed + 1) / (MONTE_CARLO + 1)


def min_pairs(confidence: float, tests: int = 1) -> int:
    """Fewest pairs with which an exact sign-flip test can reach 1 − confidence
    after a Holm/BH adjustment over `tests` tests of which only one moved."""
    return math.ceil(1 + math.log2(tests / (1 - confidence)) + 1e-9)


def signflip_interval(d: np.ndarray, confidence: float) -> tuple[float, float]:
    """The shifts δ for which the test of d − δ is not rejected at 1 − confidence;
    ±inf on a side where so few pairs cannot reject anything."""
    d = np.asarray(d, np.float64)
    alpha = 1 - confidence
    centre = float(d.mean())

    def accepted(delta):
        return signflip_p(d - delta) >= alpha

    bounds = []
    for far in (float(d.min()) - 1e-9, float(d.max()) + 1e-9):
        if accepted(far):
            bounds.append(-math.inf if far < centre else math.inf)
            continue
        inside, outside = centre, far
        for _ in range(40):
            mid = (inside + outside) / 2
            if accepted(mid):
                inside = mid
            else:
                outside = mid
        bounds.append(inside)
    return bounds[0], bounds[1]


def _ratio_result(metric: str, a: np.ndarray, b: np.ndarray, confidence: float) -> MetricResult:
    d = np.log(b) - np.log(a)
    lo, hi = signflip_interval(d, confidence)
    return MetricResult(metric, float(np.exp(np.log(a).mean())), float(np.exp(np.log(b).mean())),
                        float(np.expm1(d.mean())), float(np.expm1(lo)), float(np.expm1(hi)), signflip_p(d))


def _too_few(key: str, pairs: int) -> KeyVerdict:
    return KeyVerdict(key, "same", (pairs, pairs), reason=f"too few pairs of rounds with data to judge ({pairs} < 3)")


def compare_rounds_histograms(key: str, a: np.ndarray, b: np.ndarray, buckets: np.ndarray,
                              metrics=METRICS, confidence: float = 0.99) -> KeyVerdict:
    """a[i], b[i]: pooled histograms (over `buckets`) of the i-th pair's A and B rounds.
    Pairs where either round is empty are left out. Verdicts are set by compare.judge()."""
    a, b = np.asarray(a), np.asarray(b)
    keep = (a.sum(axis=1) > 0) & (b.sum(axis=1) > 0)
    a, b = a[keep], b[keep]
    if len(a) < 3:
        return _too_few(key, len(a))
    results = []
    for metric in metrics:
        va, vb = interval_metric(a, buckets, metric), interval_metric(b, buckets, metric)
        results.append(_ratio_result(metric, va, vb, confidence))
    s = np.array([shift(x, y, buckets) for x, y in zip(a, b)])
    lo, hi = signflip_interval(s, confidence)
    results.append(MetricResult("shape", 0.0, 0.0, float(s.mean()), lo, hi, signflip_p(s)))
    return KeyVerdict(key, "same", (len(a), len(b)), results)


def compare_rounds_counts(key: str, a: np.ndarray, b: np.ndarray, confidence: float = 0.99) -> KeyVerdict:
    """a[i], b[i]: events per second of the i-th pair's A and B rounds (fewer is worse)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    keep = (a > 0) & (b > 0)
    a, b = a[keep], b[keep]
    if len(a) < 3:
        return _too_few(key, len(a))
    return KeyVerdict(key, "same", (len(a), len(b)), [_ratio_result("rate", a, b, confidence)])
