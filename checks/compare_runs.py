"""A stored baseline (`strata check --baseline ... --candidate C`): one candidate run
against one or more baseline runs, each run reduced to one value per metric.

With at least MIN_RUNS baseline runs their spread is the noise: the candidate's
log value is compared with a prediction interval from the baselines' mean and
standard deviation (Student's t, n − 1 degrees of freedom), which gives the
p-value and the interval of the effect. With fewer, the between-run spread is
unknown and no test is possible: the effect is reported with no p-value and is
judged against the threshold alone, which must then exceed the run-to-run spread
measured on the machine (bench/check_ab_power.py measures it). Verdicts: compare.judge().
"""
import numpy as np
from scipy.stats import t as student_t

from strata.checks.compare import METRICS, KeyVerdict, MetricResult, interval_metric, shift

MIN_RUNS = 3


def _predict(metric: str, base: np.ndarray, cand: float, confidence: float, log: bool = True) -> MetricResult:
    """base: the baseline runs' values, cand: the candidate's (log scale unless log=False)."""
    bx = np.log(base) if log else np.asarray(base, np.float64)
    cx = float(np.log(cand)) if log else float(cand)
    centre = float(bx.mean())
    effect = cx - centre
    to_effect = np.expm1 if log else (lambda x: x)
    if len(bx) < MIN_RUNS:
        e = float(to_effect(effect))
        return MetricResult(metric, float(np.exp(centre)) if log else 0.0, float(cand) if log else 0.0,
                            e, e, e, None)
    n = len(bx)
    scale = float(bx.std(ddof=1)) * np.sqrt(1 + 1 / n)
    dof = n - 1
    if scale == 0:
        p = 1.0 if effect == 0 else 0.0
        half = 0.0
    else:
        p = float(2 * student_t.sf(abs(effect) / scale, dof))
        half = float(student_t.ppf(1 - (1 - confidence) / 2, dof) * scale)
    return MetricResult(metric, float(np.exp(centre)) if log else 0.0, float(cand) if log else 0.0,
                        float(to_effect(effect)), float(to_effect(effect - half)), float(to_effect(effect + half)), p)


def compare_runs_histograms(key: str, base: np.ndarray, cand: np.ndarray, buckets: np.ndarray,
                            metrics=METRICS, confidence: float = 0.99) -> KeyVerdict:
    """base: pooled histograms of the baseline runs (runs × buckets); cand: the candidate's."""
    base = np.asarray(base)
    base = base[base.sum(axis=1) > 0]
    cand = np.asarray(cand)
    if not len(base) or cand.sum() == 0:
        return KeyVerdict(key, "same", (len(base), int(cand.sum() > 0)), reason="a side has no data")
    results = []
    for metric in metrics:
        vb = interval_metric(base, buckets, metric)
        vc = float(interval_metric(cand[None, :], buckets, metric)[0])
        results.append(_predict(metric, vb, vc, confidence))
    total = base.sum(axis=0)
    # each baseline run against the others pooled: how far runs of the same thing move
    spread = [shift(total - run, run, buckets) for run in base] if len(base) >= MIN_RUNS else []
    moved = shift(total, cand, buckets)
    if spread:
        results.append(_predict("shape", np.array(spread), moved, confidence, log=False))
    else:
        results.append(MetricResult("shape", 0.0, 0.0, moved, moved, moved, None))
    return KeyVerdict(key, "same", (len(base), 1), results)


def compare_runs_counts(key: str, base: np.ndarray, cand: float, confidence: float = 0.99) -> KeyVerdict:
    """base: events per second of each baseline run; cand: the candidate's (fewer is worse)."""
    base = np.asarray(base, np.float64)
    base = base[base > 0]
    if not len(base) or cand <= 0:
        return KeyVerdict(key, "same", (len(base), int(cand > 0)), reason="a side has no events")
    return KeyVerdict(key, "same", (len(base), 1), [_predict("rate", base, cand, confidence)])
