"""Writing collected seconds into the archive, with minute, ten-minute and hour rollups.

Each record the collector emits for (dataset, second) becomes cells, stored at once as
the second's record. Its minute, ten-minute and hour are open periods summed in memory
(datasets/periods.py) and written once: when the dataset's first second after the period
arrives, at flush(), at the end of a transaction once `flush_every` seconds have passed
since the last flush (0, the default: every transaction; None: never by time), and for
close() (a dataset suspended, the collector stopping). A second committed before its
periods are written is marked in the `pending` table in the same transaction, so a crash
loses no part of a rollup: the next writer's first transaction rebuilds every pending
period from its record and its stored seconds and writes it (recover()), as it does
after a failed transaction (whose sums in memory it forgets). Readers add the pending
seconds themselves (datasets/reader.py), so a rollup is always read as the exact sum of
its seconds. A second that cannot be rebuilt from the stored seconds (it lies before
the second level's pruning horizon, or its period's record already holds a later second)
is written into its periods' records in its own transaction.

Breakdown keys are interned per dataset. A record that spans more than one second (events
collected across an outage) is stored at its first second and marked in the spans table
(datasets/schema.py). A level's record that would lie wholly before that level's pruning
horizon (a prune ran meanwhile; ten-minute records go by the minute level's) is not
written, nor one of a dataset destroyed meanwhile: pruned data does not come back in part.
"""
import math
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain

import numpy as np

from . import codec, llhist, periods
from .schema import has_pending
from .errors import BadRecord
from .retention import LEVEL_OF, STEP

STEPS = tuple(LEVEL_OF)
ROLLUPS = tuple(s for s in STEPS if s > 1)
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
    """Cells (row 0) of one record's "data" object; intern(key) -> key index (in the order of
    the keys, for those with a count). Heat maps and counters take a vectorised path; what it
    does not take whole (a malformed record) goes the checking path, which says what is wrong."""
    if not isinstance(data, dict):
        raise BadRecord("data is not an object")
    fast = _heatmap_cells(data) if kind == "heatmap" else _counter_cells(data) if kind == "counter" else None
    if fast is not None:
        keys, key, bucket, count = fast
        nonzero = count > 0
        key, bucket, count = key[nonzero], bucket[nonzero], count[nonzero]
        used = np.flatnonzero(np.bincount(key, minlength=len(keys)))
        index = np.zeros(len(keys), np.int64)
        index[used] = [intern(keys[k]) for k in used]
        return codec.combine(codec.Cells(np.zeros(len(key), np.int64), index[key], bucket, count,
                                         np.zeros(len(key), np.float64)))
    return _checked_cells(kind, data, intern)


def _heatmap_cells(data):
    """(keys, key position, bucket, count) of a well-formed heat-map record; None otherwise."""
    keys, values = list(data), list(data.values())
    if not all(type(v) is dict for v in values) or max(map(len, keys), default=0) > MAX_KEY:
        return None
    counts = list(chain.from_iterable(v.values() for v in values))
    if not set(map(type, counts)) <= {int}:
        return None
    try:
        bucket = np.fromiter(map(int, chain.from_iterable(values)), np.int64, len(counts))
        count = np.array(counts, dtype=np.uint64)
    except (ValueError, OverflowError):
        return None
    if len(bucket) and (bucket.min() < 0 or bucket.max() >= llhist.NBUCKETS):
        return None
    key = np.repeat(np.arange(len(keys)), np.fromiter(map(len, values), np.int64, len(values)))
    return keys, key, bucket, count


def _counter_cells(data):
    """(keys, key position, bucket, count) of a well-formed counter record; None otherwise."""
    keys, counts = list(data), list(data.values())
    if not set(map(type, counts)) <= {int} or max(map(len, keys), default=0) > MAX_KEY:
        return None
    try:
        count = np.array(counts, dtype=np.uint64)
    except OverflowError:
        return None
    return keys, np.arange(len(keys)), np.zeros(len(keys), np.int64), count


def _checked_cells(kind: str, data: dict, intern) -> codec.Cells:
    """cells_of, one cell at a time, every value checked (BadRecord naming what is wrong)."""
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


@dataclass
class _Period:
    """An open period in memory: its whole sum, and how it stands against the archive."""
    kind: str
    sum: periods.Sum
    through: int           # the stored record holds every stored second before it, none from it
    pending: bool = False  # a stored second from `through` on is not in the record (a pending row)
    dirty: bool = False    # the sum changed since the record was written
    urgent: bool = False   # holds a second rebuild() cannot find: written in this transaction
    last: int = -1         # the latest second added


@dataclass
class Ingestor:
    """Adds collected records to an archive connection."""
    conn: sqlite3.Connection
    flush_every: float | None = 0
    clock: object = time.monotonic
    keys: dict = field(default_factory=dict)      # dataset id -> {key: idx}
    open: dict = field(default_factory=dict)      # (dataset, step, t) -> _Period
    latest: dict = field(default_factory=dict)    # dataset id -> its latest second added
    flushed: float | None = None                  # clock() at the last flush; None: flush at the next commit
    recovered: bool = False                       # pending periods rebuilt and written since the last failure

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
        """One write transaction; the periods due are written before it commits. On any failure
        it rolls back and forgets what it holds in memory (rebuilt from the archive next time)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            if not self.recovered:
                self.recover()
            yield self
            self._write_due()
            self.conn.execute("COMMIT")
        except BaseException:
            self.keys.clear()
            self.open.clear()
            self.latest.clear()
            self.recovered = False
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
        stored = t + 1 > horizon.get(1, 0)
        held = [self._period(dataset, step, t - t % step, kind) for step in ROLLUPS
                if t - t % step + step > horizon.get(STEP[LEVEL_OF[step]], 0)]   # read before t is stored
        if stored:
            self._add_second(dataset, t, kind, cells)
        for key, p in held:
            self._add_to_period(key, p, cells, t, stored)
        self.latest[dataset] = max(t, self.latest.get(dataset, t))
        if seconds > 1 and stored:
            self.conn.execute("INSERT INTO spans VALUES (?, ?, ?, ?) ON CONFLICT (dataset, t) DO UPDATE "
                              "SET seconds = max(seconds, excluded.seconds)", (dataset, t, seconds, cause))

    def _add_second(self, dataset, t, kind, cells):
        """Store the second's record (added to the one stored, when a second comes twice)."""
        row = periods.stored_record(self.conn, dataset, 1, t)
        if row is not None:
            cells = codec.combine(codec.Cells.concat([codec.decode(kind, [row]), cells]))
        periods.write_record(self.conn, dataset, 1, t, codec.encode(kind, cells, 1)[0])

    def _period(self, dataset, step, start, kind) -> tuple:
        """(key, _Period) of an open period, loaded from the archive if not in memory."""
        key = (dataset, step, start)
        if key not in self.open:
            self.open[key] = self._load(dataset, step, start, kind)
        return key, self.open[key]

    def _add_to_period(self, key, p, cells, t, stored):
        p.sum.add(cells)
        p.dirty, p.last = True, max(p.last, t)
        if not stored or t < p.through:
            p.urgent = True
        elif not p.pending:
            p.pending = True
            self.conn.execute("INSERT OR REPLACE INTO pending VALUES (?, ?, ?, ?)", (*key, p.through))

    def _load(self, dataset, step, start, kind) -> _Period:
        """A period as the archive holds it (its record, and its pending seconds if any)."""
        row = self.conn.execute("SELECT through FROM pending WHERE dataset = ? AND step = ? AND t = ?",
                                (dataset, step, start)).fetchone()
        if row is not None:
            return _Period(kind, periods.rebuild(self.conn, kind, dataset, step, start, row[0]), row[0], pending=True)
        blob = periods.stored_record(self.conn, dataset, step, start)
        if blob is None:
            return _Period(kind, periods.Sum(), start)
        last = self.conn.execute("SELECT MAX(t) FROM records WHERE dataset = ? AND step = 1 AND t >= ? AND t < ?",
                                 (dataset, start, start + step)).fetchone()[0]
        return _Period(kind, periods.Sum(codec.decode(kind, [blob])), start if last is None else last + 1)

    def _write_due(self):
        """Write the periods due now: those that ended (a later second of their dataset came),
        those holding a second nothing else keeps, and, once flush_every has passed, all."""
        now = self.clock()
        every = self.flush_every is not None and (self.flushed is None or now - self.flushed >= self.flush_every)
        due = [k for k, p in self.open.items() if p.urgent or (p.dirty and every)
               or k[2] + k[1] <= self.latest.get(k[0], k[2])]
        self._write(due)
        if every:
            self.flushed = now

    def flush(self):
        """Write every open period that changed since it was written (inside transaction())."""
        self._write([k for k, p in self.open.items() if p.dirty])

    def close(self, datasets):
        """Write the open periods of the given datasets and forget them (a dataset suspended or
        no longer collected; inside transaction())."""
        which = [k for k in self.open if k[0] in datasets]
        self._write(which)
        for k in which:
            self.open.pop(k, None)

    def _write(self, which):
        horizons = {}
        for key in which:
            dataset, step, start = key
            p = self.open[key]
            if dataset not in horizons:
                horizons[dataset] = self._horizons(dataset)
            level = horizons[dataset]
            if level is None or start + step <= level[STEP[LEVEL_OF[step]]]:
                self.open.pop(key)      # destroyed, or its level pruned meanwhile: not written again
            elif p.dirty or p.urgent:
                periods.write_record(self.conn, dataset, step, start, p.sum.encode(p.kind))
                p.through, p.dirty, p.urgent = max(p.through, p.last + 1), False, False
            if p.pending:
                self.conn.execute("DELETE FROM pending WHERE dataset = ? AND step = ? AND t = ?", key)
                p.pending = False
            if start + step <= self.latest.get(dataset, start):
                self.open.pop(key, None)

    def _horizons(self, dataset):
        """{level step: pruning horizon} of the dataset; None if it is gone."""
        row = self.conn.execute("SELECT horizon_minute, horizon_hour FROM datasets WHERE id = ?",
                                (dataset,)).fetchone()
        return None if row is None else {60: row[0], 3600: row[1]}

    def recover(self):
        """Write every pending period of the archive, rebuilt from its record and its stored
        seconds (after a crash or a failed transaction; inside a transaction)."""
        self.open.clear()
        if has_pending(self.conn):
            kinds = dict(self.conn.execute("SELECT id, kind FROM datasets"))
            for dataset, step, start, through in self.conn.execute("SELECT dataset, step, t, through FROM pending "
                                                                   "ORDER BY dataset").fetchall():
                if dataset in kinds:
                    p = _Period(kinds[dataset], periods.rebuild(self.conn, kinds[dataset], dataset, step, start,
                                                                through), through, pending=True, dirty=True)
                    self.open[(dataset, step, start)] = p
                    self._write([(dataset, step, start)])
                self.conn.execute("DELETE FROM pending WHERE dataset = ? AND step = ? AND t = ?",
                                  (dataset, step, start))
            self.open.clear()
        self.recovered = True
