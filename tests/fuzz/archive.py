"""archive.py — atheris (libFuzzer) target for reading damaged archive files:
datasets/verify.py (its checks, datasets/scan.py's reading past damaged pages),
datasets/salvage.py and the archive's reader (datasets/archive.py, schema.py, reader.py).

An input is a whole archive file. For any bytes:
  - check() returns a report (never raises but ArchiveError);
  - a file check() passes opens, lists its datasets and answers a query over each
    dataset's whole extent (ArchiveError allowed only for a dataset holding no data);
  - salvage() of a file of this format writes an archive that check() passes, holding
    no more records than check() found whole.
Anything else is a finding.

  .venv/bin/python tests/fuzz/archive.py [libFuzzer flags] CORPUS_DIR...   (make fuzz, make fuzz-smoke)
  STRATA_FUZZ_SEEDS=DIR .venv/bin/python tests/fuzz/archive.py              (writes seeds: small real archives)
"""
import hashlib
import json
import os
import sqlite3
import sys
import tempfile

import atheris

with atheris.instrument_imports():
    from strata.datasets import salvage, schema, verify
    from strata.datasets.archive import Archive
    from strata.datasets.errors import ArchiveError

T0 = 1_700_000_000
# one folder per checkout, in memory where there is /dev/shm (salvage syncs its file),
# emptied for each input; libFuzzer ends the process without running Python's exit
# handlers, so a folder of its own per run would be left behind
CHECKOUT = hashlib.sha256(os.path.abspath(__file__).encode()).hexdigest()[:12]
WORK = os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir(), f"strata-fuzz-archive-{CHECKOUT}")
os.makedirs(WORK, exist_ok=True)


def _clear():
    for name in os.listdir(WORK):
        os.unlink(os.path.join(WORK, name))


def test_one(data: bytes):
    _clear()
    path, out = os.path.join(WORK, "a.db"), os.path.join(WORK, "s.db")
    with open(path, "wb") as f:
        f.write(data)
    try:
        report = verify.check(path)
    except ArchiveError:
        return
    if not report.problems:
        with Archive.open(path) as a:
            for d in a.datasets():
                try:
                    first, last = a.extent(d.name)
                except ArchiveError:
                    continue
                a.query(d.name, first, last + 1, resolution=max(1, (last + 1 - first) // 100))
    if report.newer or any(p.startswith("file: not") for p in report.problems):
        return
    try:
        salvaged = salvage.salvage(path, out)
    except ArchiveError:
        return
    again = verify.check(out)
    assert not again.problems, f"a salvaged archive fails verify: {again.problems}"
    assert sum(again.records.values()) <= sum(salvaged.records.values())


def write_seeds(out: str):
    """Small real archives (512-byte pages): one dataset of each kind, a few seconds, a span."""
    from strata.collect.collector import Collector
    path = os.path.join(out, "three-kinds")
    if os.path.exists(path):
        os.unlink(path)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA page_size = 512")
    schema.initialise(conn, journal="DELETE")
    conn.close()
    with Archive.open(path, readonly=False) as a:
        ids = {kind: a.create(name, now=T0).id for kind, name in
               (("heatmap", "disk.latency[op]"), ("counter", "disk.ops[op]"), ("gauge", "arc.size"))}
        c = Collector(a, command=[], log=lambda m: None)
        c.kinds = {i: k for k, i in ids.items()}
        lines = []
        for t in (T0, T0 + 1, T0 + 2, T0 + 6, T0 + 61):
            lines += [json.dumps({"v": 1, "type": "data", "t": t, "id": str(ids["heatmap"]), "kind": "heatmap",
                                         "data": {"read": {"100": t % 7 + 1}, "write": {"300": 2}}}),
                      json.dumps({"v": 1, "type": "data", "t": t, "id": str(ids["counter"]), "kind": "counter",
                                         "data": {"read": t % 5 + 1}}),
                      json.dumps({"v": 1, "type": "data", "t": t, "id": str(ids["gauge"]), "kind": "gauge",
                                         "data": {"": 4096.5}})]
        c.handle(lines)
        a.conn.execute("PRAGMA journal_mode = DELETE")


def main():
    if os.environ.get("STRATA_FUZZ_SEEDS"):
        write_seeds(os.environ["STRATA_FUZZ_SEEDS"])
        return
    atheris.Setup(sys.argv, test_one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
