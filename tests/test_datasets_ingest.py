"""The ingest's vectorised reading of a record (datasets/ingest.py cells_of) against its checking
path, one cell at a time: the same cells and the same keys interned in the same order for
well-formed heat maps and counters, and malformed ones still refused with the line naming why."""
import numpy as np
import pytest

from strata.datasets import ingest
from strata.datasets.errors import BadRecord


def both(kind, data):
    out = []
    for read in (ingest.cells_of, ingest._checked_cells):
        order = {}
        cells = read(kind, data, lambda k: order.setdefault(k, len(order)))
        out.append((cells, list(order)))
    return out


def test_the_fast_path_reads_as_the_checking_path():
    rng = np.random.default_rng(3)
    for _ in range(20):
        keys = [f"10.0.{i}.{j}" for i, j in rng.integers(0, 255, (int(rng.integers(0, 40)), 2))]
        heat = {k: {str(int(b)): int(c) for b, c in zip(rng.integers(0, 1639, 5), rng.integers(0, 3, 5))}
                for k in keys}
        heat[keys[0] if keys else "x"] = {}
        counter = {k: int(c) for k, c in zip(keys, rng.integers(0, 3, len(keys)))}
        counter["big"] = (1 << 64) - 1
        for kind, data in (("heatmap", heat), ("counter", counter)):
            (fast, fast_keys), (slow, slow_keys) = both(kind, data)
            assert fast_keys == slow_keys
            for f in ("row", "key", "bucket", "count", "total"):
                assert np.array_equal(getattr(fast, f), getattr(slow, f)), (kind, f)


@pytest.mark.parametrize("kind, data, why", [
    ("heatmap", {"a": {"x": 1}}, "bucket 'x' is not an integer"),
    ("heatmap", {"a": {"1639": 1}}, "outside 0..1638"),
    ("heatmap", {"a": {"5": -1}}, "is not an unsigned 64-bit integer"),
    ("heatmap", {"a": {"5": True}}, "is not an unsigned 64-bit integer"),
    ("heatmap", {"a": {"5": 1.5}}, "is not an unsigned 64-bit integer"),
    ("heatmap", {"a": 3}, "not an object of buckets"),
    ("counter", {"a": 1 << 64}, "is not an unsigned 64-bit integer"),
    ("counter", {"k" * 513: 1}, "longer than 512"),
])
def test_malformed_records_are_refused_with_the_reason(kind, data, why):
    with pytest.raises(BadRecord, match=why.replace("(", r"\(").replace(".", r"\.")):
        ingest.cells_of(kind, data, lambda k: 0)
