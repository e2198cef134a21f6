"""codec.py — atheris (libFuzzer) target for the archive's record decoder,
datasets/codec.py (and the varint stream under it).

An input is: byte 0 the kind (heatmap, counter, gauge: mod 3), byte 1 the
number of records (1 + b mod 4), then one length byte per record but the
last, then the records' bytes (the last takes the rest).  decode() must
either return cells or raise CorruptRecord; cells it returns must be in
range, and encoding their combined form and decoding it again must give the
same cells back.  Anything else is a finding.

  .venv/bin/python tests/fuzz/codec.py [libFuzzer flags] CORPUS_DIR...   (make fuzz, make fuzz-smoke)
  STRATA_FUZZ_SEEDS=DIR .venv/bin/python tests/fuzz/codec.py             (writes seeds from real encodings)
"""
import os
import sys

import atheris
import numpy as np

with atheris.instrument_imports():
    from strata.datasets import codec, llhist

KINDS = codec.KINDS


def split(data: bytes):
    if len(data) < 2:
        return None
    kind, n = KINDS[data[0] % 3], 1 + data[1] % 4
    lens, rest = data[2:2 + n - 1], data[2 + n - 1:]
    if len(lens) < n - 1:
        return None
    records, pos = [], 0
    for ln in lens:
        records.append(rest[pos:pos + ln])
        pos += ln
    records.append(rest[pos:])
    return kind, records


def same(a: codec.Cells, b: codec.Cells) -> bool:
    return (all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("row", "key", "bucket", "count"))
            and np.array_equal(a.total.view(np.uint64), b.total.view(np.uint64)))


def test_one(data: bytes):
    parts = split(data)
    if parts is None:
        return
    kind, records = parts
    try:
        cells = codec.decode(kind, records)
    except codec.CorruptRecord:
        return
    n = len(records)
    assert np.all((cells.row >= 0) & (cells.row < n)), "row out of range"
    assert np.all((cells.key >= 0) & (cells.key <= codec.MAX_KEY_INDEX)), "key out of range"
    assert np.all((cells.bucket >= 0) & (cells.bucket < llhist.NBUCKETS)), "bucket out of range"
    with np.errstate(over="ignore"):
        canon = codec.combine(cells)
    again = codec.decode(kind, codec.encode(kind, canon, n))
    with np.errstate(over="ignore"):
        again = codec.combine(again)
    assert same(canon, again), "encode(decode(x)) does not decode to the same cells"


def seed(kind: str, records: list) -> bytes:
    return bytes([KINDS.index(kind), len(records) - 1]) + bytes(len(r) for r in records[:-1]) + b"".join(records)


def write_seeds(out: str):
    rng = np.random.default_rng(7)
    for kind in KINDS:
        for nrows in (1, 3):
            m = 12
            row = np.sort(rng.integers(0, nrows, m))
            key = rng.integers(0, 5, m)
            bucket = rng.integers(0, llhist.NBUCKETS, m) if kind == "heatmap" else np.zeros(m, np.int64)
            count = rng.integers(1, 1 << 40, m).astype(np.uint64)
            total = rng.random(m) * 1e6 if kind == "gauge" else np.zeros(m)
            cells = codec.combine(codec.Cells(row, key, bucket, count, total))
            recs = codec.encode(kind, cells, nrows)
            if all(len(r) < 256 for r in recs[:-1]):
                with open(os.path.join(out, f"{kind}-{nrows}"), "wb") as f:
                    f.write(seed(kind, recs))


def main():
    if os.environ.get("STRATA_FUZZ_SEEDS"):
        write_seeds(os.environ["STRATA_FUZZ_SEEDS"])
        return
    atheris.Setup(sys.argv, test_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
