"""Duet blocks (`strata check ab --mode duet`): A and B serve at the same time and
every request goes to both back to back (strata-load --pair-nfsport), so the
machine's drift lands on both sides within microseconds. Each side's archive
holds its own per-second histograms; the seconds both sides collected are cut
into short blocks (block_seconds each), and each block gives one B/A log ratio
per metric (p50, p99, p99.9, mean; the rate for counters; the shape distance).

The unit of replication is the block, not the request: requests within a
second share the state of that second (per-request tests on such dependent
samples are known to cry wolf), while blocks of simultaneous load on both
sides differ only by what differs between A and B plus sampling noise. The
test over blocks is the sign-flip test and interval of compare_rounds (the
blocks are its pairs). It assumes the blocks' log ratios are independent;
lag1() measures how far they are not (bench/check_ab_power.py reports it for A/A
checks), and a longer block absorbs what correlation there is.
"""
import numpy as np

from strata.checks.compare import METRICS, interval_metric
from strata.checks.compare_rounds import compare_rounds_counts, compare_rounds_histograms


def common_seconds(qa, qb) -> np.ndarray:
    """The seconds both QueryResults collected (a second missing on one side is a gap in both)."""
    def collected(qr):
        return qr.times[qr.present] if qr.present.size else qr.times
    return np.intersect1d(collected(qa), collected(qb))


def _block_ids(seconds: np.ndarray, block_seconds: int) -> np.ndarray:
    return (seconds - seconds.min()) // block_seconds if seconds.size else seconds


def block_histograms(qa, qb, key: str, block_seconds: int = 1):
    """(bucket ids, A blocks × buckets, B blocks × buckets) of one heat-map key over the
    seconds both sides collected; a side without the key gives zeros."""
    seconds = common_seconds(qa, qb)
    blocks = _block_ids(seconds, block_seconds)
    nblocks = int(blocks.max()) + 1 if blocks.size else 0
    union = np.union1d(qa.buckets, qb.buckets).astype(np.int64)
    out = []
    for qr in (qa, qb):
        rows = np.zeros((nblocks, len(union)), np.int64)
        if key in qr.keys and len(qr.buckets):
            cols = np.searchsorted(qr.times, seconds)
            counts = qr.counts[qr.keys.index(key)][cols].astype(np.int64)
            dense = np.zeros((len(seconds), len(union)), np.int64)
            dense[:, np.searchsorted(union, qr.buckets)] = counts
            np.add.at(rows, blocks, dense)
        out.append(rows)
    return union, out[0], out[1]


def block_rates(qa, qb, key: str, block_seconds: int = 1):
    """(A, B) events per second of one counter key in each block."""
    seconds = common_seconds(qa, qb)
    blocks = _block_ids(seconds, block_seconds)
    nblocks = int(blocks.max()) + 1 if blocks.size else 0
    width = np.bincount(blocks, minlength=nblocks).astype(np.float64) if nblocks else np.zeros(0)
    out = []
    for qr in (qa, qb):
        sums = np.zeros(nblocks)
        if key in qr.keys:
            values = np.nan_to_num(qr.values[qr.keys.index(key)][np.searchsorted(qr.times, seconds)])
            np.add.at(sums, blocks, values.astype(np.float64))
        out.append(sums / np.maximum(width, 1))
    return out[0], out[1]


def compare_duet(key: str, qa, qb, block_seconds: int = 1, metrics=METRICS, confidence: float = 0.99):
    """The KeyVerdict (unjudged: compare.judge() sets verdicts) of one key of one dataset,
    and for heat maps the per-block p99 of each side (for the Markdown summary)."""
    if qa.kind == "heatmap":
        buckets, a, b = block_histograms(qa, qb, key, block_seconds)
        series = (interval_metric(a, buckets, "p99"), interval_metric(b, buckets, "p99"))
        return compare_rounds_histograms(key, a, b, buckets, metrics, confidence), series
    a, b = block_rates(qa, qb, key, block_seconds)
    return compare_rounds_counts(key, a, b, confidence), None


def log_ratios(qa, qb, key: str, metric: str = "p50", block_seconds: int = 1) -> np.ndarray:
    """ln(B/A) of one metric per block where both sides have data."""
    buckets, a, b = block_histograms(qa, qb, key, block_seconds)
    keep = (a.sum(axis=1) > 0) & (b.sum(axis=1) > 0)
    return np.log(interval_metric(b[keep], buckets, metric)) - np.log(interval_metric(a[keep], buckets, metric))


def lag1(d: np.ndarray) -> float:
    """Lag-1 autocorrelation of a series (0 for independent blocks; NaN when too short)."""
    d = np.asarray(d, np.float64)
    if len(d) < 3 or not np.isfinite(d).all() or d.std() == 0:
        return float("nan")
    x = d - d.mean()
    return float((x[:-1] @ x[1:]) / (x @ x))
