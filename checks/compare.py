"""Did a change move the latency distribution? What the statistics of `strata check` share.

The unit of replication is a run (or a round of an A/B check), never a second
of one run: the seconds of one run share the machine's state of that minute,
so they are not independent samples, and a test that treats them so is far
too sure of itself (a shared VM drifts by tens of percent from one minute to
the next). The exception is a duet, where A and B serve the same requests in
the same seconds: the state of a second falls on both, and the B/A ratio of
one short block is the unit. Each run (round, block) therefore gives one value
per metric, from its pooled histogram:
p50, p99, p99.9 and mean for latencies, the rate for counters, and for the
shape a signed distance between two runs' distributions of log10(value)
(`shift`). Three designs use them:

- paired rounds (checks/compare_rounds.py, `strata check ab --mode rounds`);
- duet blocks (checks/compare_duet.py, `strata check ab`), tested as rounds are;
- a stored baseline of one or more runs (checks/compare_runs.py).

Each gives, per metric, an effect (candidate/baseline − 1, or decades for the
shape), an interval and a raw p-value (None where no test is possible). judge()
then adjusts all p-values of one check together (Benjamini-Hochberg or Holm,
over every dataset, key and metric) and calls a metric worse when its adjusted
p-value is below 1 − confidence and its effect is beyond the threshold in the
worse direction: latency up, rate down.
"""
from dataclasses import dataclass, field

import numpy as np

from strata.datasets import llhist

METRICS = ("p50", "p99", "p99.9", "mean")
CORRECTIONS = ("bh", "holm")


@dataclass
class MetricResult:
    metric: str               # p50 | p99 | p99.9 | mean | shape | rate
    baseline: float           # geometric mean over baseline runs (shape: 0)
    candidate: float          # geometric mean over candidate runs (shape: 0)
    effect: float             # candidate/baseline − 1; decades moved for the shape
    ci_low: float
    ci_high: float
    p_value: float | None     # raw; None where no test is possible
    verdict: str = "same"     # better | same | worse
    p_adjusted: float | None = None


@dataclass
class KeyVerdict:
    key: str
    verdict: str
    intervals: tuple          # (baseline, candidate) runs or rounds with data
    metrics: list = field(default_factory=list)
    reason: str = ""


def _bucket_bounds(buckets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    lo = np.array([llhist.lower(int(b)) for b in buckets], dtype=np.float64)
    hi = np.array([llhist.upper(int(b)) for b in buckets], dtype=np.float64)
    return lo, hi, (lo + hi) / 2


def interval_metric(hists: np.ndarray, buckets: np.ndarray, metric: str) -> np.ndarray:
    """One value of `metric` per row of hists (rows × buckets); NaN where a row is empty.
    Percentiles interpolate linearly inside the bucket that holds them."""
    lo, hi, mid = _bucket_bounds(buckets)
    hists = np.asarray(hists)
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
        j = min(int(np.searchsorted(cum[i], target, side="left")), len(buckets) - 1)
        before = cum[i, j - 1] if j > 0 else 0.0
        inside = hists[i, j]
        frac = (target - before) / inside if inside else 0.0
        out[i] = lo[j] + frac * (hi[j] - lo[j])
    return out


def shift(base: np.ndarray, cand: np.ndarray, buckets: np.ndarray) -> float:
    """Signed shape change from one pooled histogram to another, in decades of
    log10(value): the Wasserstein mass moved up (slower) when it exceeds the mass
    moved down, else minus the mass moved down. Swapping the two negates it, so
    it is symmetric around 0 when nothing changed; a new slow mode that leaves
    the percentiles in place still moves mass up."""
    _, _, mid = _bucket_bounds(buckets)
    logmid = np.log10(np.maximum(mid, 1.0))
    fb = np.cumsum(base) / base.sum()
    fc = np.cumsum(cand) / cand.sum()
    widths = np.diff(logmid)
    diff = (fb - fc)[:-1]
    up = float(np.sum(np.clip(diff, 0, None) * widths))
    down = float(np.sum(np.clip(-diff, 0, None) * widths))
    return up if up >= down else -down


def align_buckets(a_buckets: np.ndarray, a_counts: np.ndarray, b_buckets: np.ndarray, b_counts: np.ndarray):
    """Re-index two (rows × buckets) count arrays onto the union of their bucket ids."""
    union = np.union1d(a_buckets, b_buckets)
    out = []
    for ids, counts in ((a_buckets, a_counts), (b_buckets, b_counts)):
        dense = np.zeros((counts.shape[0], len(union)), dtype=np.int64)
        dense[:, np.searchsorted(union, ids)] = counts
        out.append(dense)
    return union, out[0], out[1]


def stack(runs: list, key: str):
    """One key of one dataset over several runs (QueryResults over their windows):
    (bucket ids, runs × buckets pooled histograms) for heat maps, (None, events per
    collected second of each run) for counters; a run without the key gives zeros."""
    if runs[0].kind == "heatmap":
        union = np.unique(np.concatenate([qr.buckets for qr in runs] + [np.zeros(0, np.int64)]))
        rows = np.zeros((len(runs), len(union)), np.int64)
        for r, qr in enumerate(runs):
            if key in qr.keys and len(qr.buckets):
                rows[r, np.searchsorted(union, qr.buckets)] = qr.counts[qr.keys.index(key)].sum(axis=0)
        return union, rows
    rates = np.zeros(len(runs))
    for r, qr in enumerate(runs):
        collected = qr.seconds_collected()
        seconds = int(collected.sum()) if collected is not None else len(qr.times) * qr.step
        if key in qr.keys and seconds:
            rates[r] = float(np.nan_to_num(qr.values[qr.keys.index(key)]).sum()) / seconds
    return None, rates


def adjust(pvalues: list, method: str = "bh") -> list:
    """Adjusted p-values (None stays None): Benjamini-Hochberg (false discovery rate)
    or Holm (family-wise error), over all the tests given."""
    idx = [i for i, p in enumerate(pvalues) if p is not None]
    m = len(idx)
    out = list(pvalues)
    if not m:
        return out
    p = np.array([pvalues[i] for i in idx], dtype=np.float64)
    order = np.argsort(p)
    ranked = p[order]
    if method == "holm":
        adj = np.maximum.accumulate(np.minimum(1.0, ranked * (m - np.arange(m))))
    elif method == "bh":
        adj = np.minimum.accumulate((ranked * m / np.arange(1, m + 1))[::-1])[::-1]
        adj = np.minimum(adj, 1.0)
    else:
        raise ValueError(f"unknown correction {method!r}; choose from {', '.join(CORRECTIONS)}")
    back = np.empty(m)
    back[order] = adj
    for k, i in enumerate(idx):
        out[i] = float(back[k])
    return out


def _direction(metric: str, effect: float, threshold: float) -> str:
    limit = np.log10(1 + threshold) if metric == "shape" else threshold
    if abs(effect) < limit:
        return "same"
    up_is_worse = metric != "rate"
    return "worse" if (effect > 0) == up_is_worse else "better"


def judge(results: list, threshold: float, confidence: float, correction: str = "bh") -> list:
    """Sets the verdicts of (dataset, KeyVerdict) pairs whose metrics carry raw p-values:
    one multiple-comparison adjustment over all of them. A metric without a p-value
    (no test possible) is judged on its effect alone. Returns results."""
    metrics = [m for _, kv in results for m in kv.metrics]
    for m, adj in zip(metrics, adjust([m.p_value for m in metrics], correction)):
        m.p_adjusted = adj
        significant = adj is None or adj < 1 - confidence
        m.verdict = _direction(m.metric, m.effect, threshold) if significant else "same"
    for _, kv in results:
        if kv.metrics:
            kv.verdict = overall_of(kv.metrics)
            kv.reason = reason(kv.metrics)
    return results


def overall_of(metrics: list) -> str:
    verdicts = {m.verdict for m in metrics}
    if "worse" in verdicts:
        return "worse"
    return "better" if "better" in verdicts else "same"


def _effect_text(m: MetricResult) -> str:
    if m.metric == "shape":
        return f"{m.effect:+.3f} decades [{m.ci_low:+.3f}, {m.ci_high:+.3f}]"
    return f"{m.effect:+.1%} [{m.ci_low:+.1%}, {m.ci_high:+.1%}]"


def reason(metrics: list) -> str:
    """One line: the metrics that moved with their effect, interval and adjusted p,
    or the largest effect seen when none did."""
    def p_text(m):
        return "" if m.p_adjusted is None else f" (p_adj={m.p_adjusted:.2g})"
    moved = [m for m in metrics if m.verdict != "same"]
    if moved:
        return "; ".join(f"{m.metric} {m.verdict}: {_effect_text(m)}{p_text(m)}" for m in moved)
    biggest = max((m for m in metrics if m.metric != "shape"), key=lambda m: abs(m.effect), default=metrics[0])
    return f"nothing moved beyond the threshold with significance; largest: {biggest.metric} " \
           f"{_effect_text(biggest)}{p_text(biggest)}"
