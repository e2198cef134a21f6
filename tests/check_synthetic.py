"""Synthetic latency runs for the `strata check` statistics tests: per-second llhist
histograms drawn from known distributions, so the truth of each comparison is known."""
import numpy as np

from strata.datasets import llhist

SECONDS = 60
EVENTS = 2000


def base_sample(rng, n):
    """A DRAM-ish main mode near 100 us and a 2 % disk tail near 5 ms (values in ns)."""
    main = rng.lognormal(np.log(100e3), 0.25, n)
    tail = rng.lognormal(np.log(5e6), 0.3, n)
    return np.where(rng.random(n) < 0.02, tail, main)


def tail_shifted_sample(rng, n, factor=1.10):
    """The same, with the tail (and so p99) slower by `factor`."""
    main = rng.lognormal(np.log(100e3), 0.25, n)
    tail = rng.lognormal(np.log(5e6 * factor), 0.3, n)
    return np.where(rng.random(n) < 0.02, tail, main)


def slow_mode_sample(rng, n):
    """A new mode near 1 ms holding 5 % of events, below the p99: p50 and p99 stay put."""
    v = base_sample(rng, n)
    mode = rng.random(n) < 0.05
    return np.where(mode & (v < 1e6), rng.lognormal(np.log(1e6), 0.2, n), v)


def run(sampler, seed, seconds=SECONDS, events=EVENTS):
    """(histograms seconds × buckets, bucket ids) for one synthetic run."""
    rng = np.random.default_rng(seed)
    rows = [llhist.buckets_of(sampler(rng, events).astype(np.uint64)) for _ in range(seconds)]
    return rows


def aligned(*runs):
    """Dense histograms over the union of buckets the runs used."""
    buckets = np.unique(np.concatenate([np.concatenate(r) for r in runs]))
    index = {b: i for i, b in enumerate(buckets)}
    out = []
    for r in runs:
        h = np.zeros((len(r), len(buckets)), dtype=np.int64)
        for s, row in enumerate(r):
            ids, counts = np.unique(row, return_counts=True)
            h[s, [index[i] for i in ids]] = counts
        out.append(h)
    return buckets, out
