"""Writing collected seconds into the archive, with minute, ten-minute and hour rollups.

Each record the collector emits for (dataset, second) becomes cells; the
second record and the enclosing minute, ten-minute and hour records are read, summed
cell-wise with it and written back in the caller's transaction, so rollups
are always the exact sum of their seconds and a crash loses at most the
transaction in flight. Breakdown keys are interned per dataset. A record that
spans more than one second (events collected across an outage) is stored at
its first second and marked in the spans table (datasets/schema.py). A level's
record that would lie wholly before that level's pruning horizon (a prune ran
meanwhile; ten-minute records go by the minute level's) is not written: pruned
data does not come back in part.
"""
import math
import sqlite3
from contextlib import contextmanager

import numpy as np

from . import codec, llhist
from .errors import BadRecord
from .retention import LEVEL_OF, STEP

STEPS = tuple(LEVEL_OF)
MAX_KEY = 512
U64_MAX = (1 << 64) - 1


def _count(value, what):
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= U64_MAX:
        raise BadRecord(f"{what}: count {value!r} is not an unsigned 64-bit integer")
    return value


def check_time(t):
    if isinstance(t, bool) or not isinstance(t, int) or not 0 <= t < 1 << 40:
        raise BadRecord(f"time {t!r} is not a unix second")


def cells_of(kind: str, data: dict, intern) -> codec.Cells:
    """Cells (row 0) of one record's "data" object; intern(key) -> key index."""
    if not isinstance(data, dict):
        raise BadRecord("data is not an object")
    key, bucket, count, total = [], [], [], []
    for k, v in data.items():
        if len(k) > MAX_KEY:
            raise BadRecord(f"breakdown key longer than {MAX_KEY} characters")
        if kind == "heatmap":
            if not isinstance(v, dict):
                raise BadRecord(f"key {k!r}: heat-map data is not an object of buckets")
            idx = None
            for b, c in v.items():
                try:
                    b = int(b)
                except ValueError:
                    raise BadRecord(f"key {k!r}: bucket {b!r} is not an integer") from None
                if not 0 <= b < llhist.NBUCKETS:
                    raise BadRecord(f"key {k!r}: bucket {b} outside 0..{llhist.NBUCKETS - 1}")
                if _count(c, f"key {k!r}"):
                    idx = intern(k) if idx is None else idx
                    key.append(idx), bucket.append(b), count.append(c), total.append(0.0)
        elif kind == "counter":
            if _count(v, f"key {k!r}"):
                key.append(intern(k)), bucket.append(0), count.append(v), total.append(0.0)
        else:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise BadRecord(f"key {k!r}: gauge value {v!r} is not a finite number")
            key.append(intern(k)), bucket.append(0), count.append(1), total.append(float(v))
    n = len(key)
    return codec.combine(codec.Cells(np.zeros(n, np.int64), np.array(key, np.int64),
                                     np.array(bucket, np.int64), np.array(count, np.uint64),
                                     np.array(total, np.float64)))


class Ingestor:
    """Adds collected records to an archive connection."""

    def __init__(self, conn):
        self.conn = conn
        self.keys = {}  # dataset id -> {key: idx}

    def _keys(self, dataset):
        if dataset not in self.keys:
            rows = self.conn.execute("SELECT key, idx FROM keys WHERE dataset = ?", (dataset,))
            self.keys[dataset] = dict(rows.fetchall())
        return self.keys[dataset]

    def _interner(self, dataset):
        known = self._keys(dataset)

        def intern(k):
            idx = known.get(k)
            if idx is None:
                idx = len(known)
                self.conn.execute("INSERT INTO keys VALUES (?, ?, ?)", (dataset, idx, k))
                known[k] = idx
            return idx
        return intern

    @contextmanager
    def transaction(self):
        """One write transaction; on any failure it rolls back and forgets cached keys."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self
            self.conn.execute("COMMIT")
        except BaseException:
            self.keys.clear()
            if self.conn.in_transaction:
                try:
                    self.conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # SQLite rolled back itself (an I/O error); the failure in hand is the news
            raise

    def add(self, dataset: int, t: int, kind: str, data: dict, seconds: int = 1, cause: str = "stall",
            horizon: dict | None = None):
        """Add one record of one dataset (inside transaction()): the events of [t, t + seconds);
        a record spanning more than one second is marked in spans with its cause. horizon:
        {level step (1, 60, 3600): the dataset's pruning horizon at that level}."""
        check_time(t)
        self.add_cells(dataset, t, kind, cells_of(kind, data, self._interner(dataset)), seconds, cause,
                       horizon=horizon)

    def add_cells(self, dataset: int, t: int, kind: str, cells: codec.Cells, seconds: int = 1,
                  cause: str = "stall", keys: list | None = None, horizon: dict | None = None):
        """add() for cells already made; `keys`: the texts of the cells' key indices when they are
        not this archive's (interned here)."""
        horizon = horizon or {}
        if keys is not None:
            intern = self._interner(dataset)
            cells = codec.combine(codec.Cells(cells.row, np.array([intern(k) for k in keys], np.int64)[cells.key],
                                              cells.bucket, cells.count, cells.total)) if len(cells) else cells
        for step in STEPS:
            if t - t % step + step > horizon.get(STEP[LEVEL_OF[step]], 0):
                self._merge(dataset, step, t - t % step, kind, cells)
        if seconds > 1 and t + 1 > horizon.get(1, 0):
            self.conn.execute("INSERT INTO spans VALUES (?, ?, ?, ?) ON CONFLICT (dataset, t) DO UPDATE "
                              "SET seconds = max(seconds, excluded.seconds)", (dataset, t, seconds, cause))

    def _merge(self, dataset, step, t, kind, new):
        row = self.conn.execute("SELECT data FROM records WHERE dataset = ? AND step = ? AND t = ?",
                                (dataset, step, t)).fetchone()
        cells = codec.combine(codec.Cells.concat([codec.decode(kind, [row[0]]), new])) if row else new
        blob = codec.encode(kind, cells, 1)[0]
        self.conn.execute("INSERT INTO records (dataset, step, t, data) VALUES (?, ?, ?, ?) "
                          "ON CONFLICT (dataset, step, t) DO UPDATE SET data = excluded.data",
                          (dataset, step, t, blob))
