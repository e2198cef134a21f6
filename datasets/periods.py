"""Open rollup periods: their in-memory sums, and their exact contents rebuilt from what is stored.

A minute, ten-minute or hour record is written once per period (datasets/ingest.py), so
while a period is open the archive may hold seconds of it that its record does not hold
yet. The `pending` table (datasets/schema.py) marks them: a row (dataset, step, t, through) says that the
record of the period [t, t + step) holds none of the period's second-level records from
`through` on (and every stored one before), so the period's exact contents are its
record (if any) plus those seconds. A period without a row is exact as stored. Readers
(datasets/reader.py), the prune of the second level (datasets/archive.py) and a writer
starting after a crash all rebuild a period the same way: rebuild().

Sum keeps a period's cells in memory, summed by (key, bucket) and sorted by their
combined id: adding a second's n cells costs a binary search each (O(n log m)) and a copy
only when cells new to the period appear, so a second's cost follows its own cells, not
what the period already holds.
"""
import numpy as np

from . import codec, llhist
from .schema import has_pending

NB = llhist.NBUCKETS     # a cell's id: key * NB + bucket (bucket 0 for counters and gauges)


class Sum:
    """Cells summed by (key, bucket), sorted by id."""

    def __init__(self, cells: codec.Cells | None = None):
        self.id = np.zeros(0, np.int64)
        self.count = np.zeros(0, np.uint64)
        self.total = np.zeros(0, np.float64)
        if cells is not None and len(cells):
            self.add(codec.combine(codec.Cells(np.zeros(len(cells), np.int64), cells.key, cells.bucket,
                                               cells.count, cells.total)))

    def add(self, cells: codec.Cells):
        """Add cells unique per (key, bucket) and sorted by them (codec.combine of one row)."""
        ids = cells.key * NB + cells.bucket
        pos = np.searchsorted(self.id, ids)
        hit = pos < len(self.id)
        hit[hit] = self.id[pos[hit]] == ids[hit]
        at = pos[hit]
        self.count[at] += cells.count[hit]
        self.total[at] += cells.total[hit]
        new = ~hit
        if new.any():
            where = pos[new]
            self.id = np.insert(self.id, where, ids[new])
            self.count = np.insert(self.count, where, cells.count[new])
            self.total = np.insert(self.total, where, cells.total[new])

    def cells(self) -> codec.Cells:
        """The sum as the cells of one record (row 0), sorted as codec.encode wants them."""
        return codec.Cells(np.zeros(len(self.id), np.int64), self.id // NB, self.id % NB, self.count, self.total)

    def encode(self, kind: str) -> bytes:
        return codec.encode(kind, self.cells(), 1)[0]


def stored_record(conn, dataset: int, step: int, t: int):
    row = conn.execute("SELECT data FROM records WHERE dataset = ? AND step = ? AND t = ?",
                       (dataset, step, t)).fetchone()
    return None if row is None else row[0]


def seconds_from(conn, dataset: int, first: int, end: int) -> list:
    """The second-level records of dataset with first <= t < end."""
    return [r[0] for r in conn.execute("SELECT data FROM records WHERE dataset = ? AND step = 1 AND t >= ? "
                                       "AND t < ?", (dataset, first, end))]


def rebuild(conn, kind: str, dataset: int, step: int, t: int, through: int) -> Sum:
    """The exact contents of the period [t, t + step) whose pending row says `through`."""
    blobs = [b for b in [stored_record(conn, dataset, step, t)] if b is not None]
    blobs += seconds_from(conn, dataset, through, t + step)
    return Sum(codec.decode(kind, blobs)) if blobs else Sum()


def pending_rows(conn, dataset: int, step: int | None = None, first: int = 0, end: int = 1 << 62) -> list:
    """(step, t, through) of the dataset's pending periods (of one step, first <= t < end)."""
    if not has_pending(conn):
        return []
    if step is None:
        return conn.execute("SELECT step, t, through FROM pending WHERE dataset = ? ORDER BY step, t",
                            (dataset,)).fetchall()
    return conn.execute("SELECT step, t, through FROM pending WHERE dataset = ? AND step = ? AND t >= ? AND t < ? "
                        "ORDER BY t", (dataset, step, first, end)).fetchall()


def write_record(conn, dataset: int, step: int, t: int, blob: bytes):
    conn.execute("INSERT INTO records (dataset, step, t, data) VALUES (?, ?, ?, ?) "
                 "ON CONFLICT (dataset, step, t) DO UPDATE SET data = excluded.data", (dataset, step, t, blob))


def fold(conn, kind: str, dataset: int, cutoff: int):
    """Before the second level's records before `cutoff` are deleted (a prune): fold the
    pending seconds before it into their periods' records, so that each period stays its
    record plus its seconds still stored (inside the prune's write transaction)."""
    for step, t, through in pending_rows(conn, dataset):
        if through >= cutoff:
            continue
        upto = min(cutoff, t + step)
        blobs = [b for b in [stored_record(conn, dataset, step, t)] if b is not None]
        blobs += seconds_from(conn, dataset, through, upto)
        write_record(conn, dataset, step, t, Sum(codec.decode(kind, blobs)).encode(kind))
        if upto >= t + step:
            conn.execute("DELETE FROM pending WHERE dataset = ? AND step = ? AND t = ?", (dataset, step, t))
        else:
            conn.execute("UPDATE pending SET through = ? WHERE dataset = ? AND step = ? AND t = ?",
                         (upto, dataset, step, t))
