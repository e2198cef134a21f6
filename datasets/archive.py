"""The archive: datasets, their lifecycle, pruning and the query API.

    with Archive.open(path, readonly=True) as a:
        for d in a.datasets(): ...
        r = a.query("nfs.latency[client]", start, end, resolution=60)   # QueryResult

Writers (create, suspend, resume, destroy, prune, import, collection) open
with readonly=False; every SQLite failure surfaces as one ArchiveError line.
"""
import json
import os
import sqlite3
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from . import catalogue, codec, names, periods, reader, schema
from .errors import ArchiveError
from .suggest import did_you_mean
from .ingest import Ingestor
from .retention import LEVEL_OF, LEVELS, STEP, STORED, Retention

ROW_OVERHEAD = 40  # bytes per record beyond its payload: table row, unique index entry, page slack
PRUNE_BATCH = 5000


@dataclass
class DatasetInfo:
    id: int
    name: str
    statistic: str
    breakdown: str
    filters: dict
    kind: str
    unit: str
    probe: str
    state: str
    created: int
    state_since: int
    retention: Retention
    horizon: dict                                # level -> unix second before which data was pruned
    usage: dict = field(default_factory=dict)    # level -> (rows, bytes) of all its stored steps

    @property
    def ondisk(self) -> int:
        """Approximate bytes this dataset takes in the file."""
        return sum(rows * ROW_OVERHEAD + size for rows, size in self.usage.values())

    def to_json(self) -> dict:
        return {"name": self.name, "statistic": self.statistic, "breakdown": self.breakdown or None,
                "filters": self.filters, "kind": self.kind, "unit": self.unit, "probe": self.probe,
                "state": self.state, "created": self.created, "since": self.state_since,
                "retention": {lv: self.retention.of(lv) for lv in LEVELS},
                "records": {lv: self.usage.get(lv, (0, 0))[0] for lv in LEVELS},
                "ondisk_bytes": self.ondisk}


_COLUMNS = ("id, name, statistic, breakdown, filters, kind, unit, probe, state, created, state_since, "
            "keep_second, keep_minute, keep_hour, horizon_second, horizon_minute, horizon_hour")


def _info(row) -> DatasetInfo:
    return DatasetInfo(row[0], row[1], row[2], row[3], json.loads(row[4]), row[5], row[6], row[7],
                       row[8], row[9], row[10], Retention(*row[11:14]), dict(zip(LEVELS, row[14:17])))


class Archive:
    def __init__(self, path: str, conn, readonly: bool):
        self.path, self.conn, self.readonly = path, conn, readonly

    @classmethod
    def open(cls, path, readonly: bool = True, make: bool | None = None) -> "Archive":
        """The archive at path; a writer (not readonly) makes it when missing unless make is False."""
        path = str(path)
        return cls(path, schema.connect(path, readonly, make), readonly)

    def close(self):
        self.conn.close()

    def identity(self):
        """(device, inode) of the file at the archive's path now; None if there is none."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def reopen(self, infos: list):
        """Open the archive at this path again (made, folder included, if it is gone), holding
        the datasets `infos` under the same ids: restored where missing. ArchiveError if that
        cannot be done now (the folder cannot be made, the file there is damaged, an id is
        another dataset's there)."""
        if not os.path.exists(self.path):   # made aside and renamed in: readers never see it half made
            tmp = f"{self.path}.new-{os.getpid()}"
            try:
                made = Archive(tmp, schema.connect(tmp, readonly=False), False)
                try:
                    made._restore(infos)
                finally:
                    made.close()
                os.replace(tmp, self.path)
            except OSError as e:
                raise ArchiveError(f"{self.path}: cannot make the archive again ({e.strerror})") from None
            finally:
                for leftover in (tmp, tmp + "-wal", tmp + "-shm"):
                    if os.path.exists(leftover):
                        os.unlink(leftover)
        conn = schema.connect(self.path, readonly=False)
        self.conn.close()
        self.conn, self.readonly = conn, False
        self._restore(infos)

    def _restore(self, infos: list):
        """Insert the datasets `infos` that are missing, under their ids."""
        conn = self.conn
        try:
            with self.guard():
                conn.execute("BEGIN IMMEDIATE")
                for i in infos:
                    row = conn.execute("SELECT name FROM datasets WHERE id = ?", (i.id,)).fetchone()
                    if row and row[0] != i.name:
                        raise ArchiveError(f"{self.path}: the file now there holds {row[0]} where "
                                           f"{i.name} was expected; not writing into it")
                    if not row:
                        conn.execute(f"INSERT INTO datasets ({_COLUMNS.split(', horizon')[0]}) "
                                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                                     (i.id, i.name, i.statistic, i.breakdown, json.dumps(i.filters), i.kind,
                                      i.unit, i.probe, i.state, i.created, i.state_since, i.retention.second,
                                      i.retention.minute, i.retention.hour))
                conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @classmethod
    def open_for_collecting(cls, path) -> tuple:
        """(archive, None) opened for writing; or, when it cannot be written now (a full disk,
        a read-only file system), (archive opened read-only, the ArchiveError) so that
        collection can start and hold its records until it can (Collector)."""
        try:
            return cls.open(path, readonly=False), None
        except ArchiveError as e:
            try:
                return cls.open(path, readonly=True), e
            except ArchiveError:
                raise e from None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @contextmanager
    def guard(self):
        """Turn SQLite and record failures into one ArchiveError line."""
        try:
            yield
        except codec.CorruptRecord as e:
            raise ArchiveError(f"{self.path}: damaged archive (bad record: {e}); {schema.REPAIR}") from None
        except sqlite3.Error as e:
            raise schema.translate(self.path, e) from None
        except UnicodeDecodeError:
            raise ArchiveError(f"{self.path}: damaged archive (text that is not UTF-8); {schema.REPAIR}") from None
        except MemoryError:   # SQLITE_NOMEM: a damaged row's header asks for a huge allocation
            raise ArchiveError(f"{self.path}: out of memory reading the archive (a damaged row?); "
                               f"{schema.REPAIR}") from None

    @contextmanager
    def write(self):
        """A write transaction (BEGIN IMMEDIATE ... COMMIT), rolled back on failure."""
        if self.readonly:
            raise ArchiveError(f"{self.path}: opened read-only")
        with self.guard():
            self.conn.execute("BEGIN IMMEDIATE")
            try:
                yield self.conn
                self.conn.execute("COMMIT")
            except BaseException:
                if self.conn.in_transaction:
                    self.conn.execute("ROLLBACK")
                raise

    # -- listing -----------------------------------------------------------------------------

    def datasets(self) -> list:
        """Every dataset, oldest first, with its on-disk usage."""
        with self.guard():
            infos = [_info(r) for r in self.conn.execute(f"SELECT {_COLUMNS} FROM datasets ORDER BY id")]
            usage = {}
            for ds, step, rows, size in self.conn.execute("SELECT dataset, step, rows, bytes FROM usage"):
                level = usage.setdefault(ds, {})
                have = level.get(LEVEL_OF.get(step), (0, 0))
                level[LEVEL_OF.get(step)] = (have[0] + rows, have[1] + size)
        for info in infos:
            info.usage = usage.get(info.id, {})
        return infos

    def dataset(self, name: str) -> DatasetInfo:
        """The dataset called name (any filter order); ArchiveError naming the choices if none."""
        wanted = names.parse(name)
        canonical = str(wanted)
        infos = self.datasets()
        for info in infos:
            if info.name == canonical:
                return info
        have = [i.name for i in infos]
        same = [i.name for i in infos if i.statistic == wanted.statistic]
        here = f"; datasets here: {', '.join(have) or 'none'}"
        if same:
            hint = did_you_mean(canonical, same) or f"; {wanted.statistic} datasets here: {', '.join(same)}"
        elif wanted.statistic in catalogue.load().by_name():   # a statistic no dataset here keeps
            hint = f"{here}; to collect it: strata datasets create '{canonical}'"
        else:
            hint = did_you_mean(canonical, have) or here
        raise ArchiveError(f"no dataset {canonical} in {self.path}{hint}")

    def changes(self) -> int:
        """A counter bumped whenever a dataset is created, destroyed, suspended or resumed."""
        with self.guard():
            return self.conn.execute("SELECT value FROM meta WHERE key = 'changes'").fetchone()[0]

    # -- lifecycle ---------------------------------------------------------------------------

    def create(self, name: str, retention: Retention | None = None, active: bool = True,
               now: int | None = None, allow_absent_device: bool = False) -> DatasetInfo:
        """Create a dataset from its name, validated against the statistics catalogue (a
        device filter: a device this host has, unless allow_absent_device)."""
        parsed = names.checked(name, allow_absent_device)
        stat = catalogue.by_name()[parsed.statistic]
        keep = (retention or Retention()).check()
        now = int(time.time()) if now is None else now
        with self.write() as c:
            if c.execute("SELECT 1 FROM datasets WHERE name = ?", (str(parsed),)).fetchone():
                raise ArchiveError(f"dataset {parsed} already exists in {self.path}")
            c.execute("INSERT INTO datasets (name, statistic, breakdown, filters, kind, unit, probe, state, "
                      "created, state_since, keep_second, keep_minute, keep_hour) "
                      "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                      (str(parsed), parsed.statistic, parsed.breakdown, json.dumps(dict(parsed.filters)),
                       stat.kind, stat.unit, stat.probe, "active" if active else "suspended", now, now,
                       keep.second, keep.minute, keep.hour))
        return self.dataset(str(parsed))

    def set_state(self, which: list | None, state: str, now: int | None = None) -> list:
        """Suspend or resume the named datasets (None: all); returns the names that changed."""
        now = int(time.time()) if now is None else now
        targets = self.datasets() if which is None else [self.dataset(n) for n in which]
        changed = [d.name for d in targets if d.state != state]
        with self.write() as c:
            c.executemany("UPDATE datasets SET state = ?, state_since = ? WHERE name = ? AND state != ?",
                          [(state, now, n, state) for n in changed])
        return changed

    def set_retention(self, name: str, retention: Retention):
        info = self.dataset(name)
        keep = retention.check()
        with self.write() as c:
            c.execute("UPDATE datasets SET keep_second = ?, keep_minute = ?, keep_hour = ? WHERE id = ?",
                      (keep.second, keep.minute, keep.hour, info.id))

    def destroy(self, name: str):
        """Delete a dataset and all its data."""
        info = self.dataset(name)
        with self.write() as c:
            c.execute("DELETE FROM usage WHERE dataset = ?", (info.id,))
            c.execute("DELETE FROM records WHERE dataset = ?", (info.id,))
            c.execute("DELETE FROM keys WHERE dataset = ?", (info.id,))
            c.execute("DELETE FROM spans WHERE dataset = ?", (info.id,))
            c.execute("DELETE FROM pending WHERE dataset = ?", (info.id,))
            c.execute("DELETE FROM datasets WHERE id = ?", (info.id,))

    def prune(self, name: str, older_than: int, level: str = "hour", now: int | None = None) -> int:
        """Delete data older than `older_than` seconds at `level` and every finer level."""
        if level not in LEVELS:
            raise ArchiveError(f"unknown level {level!r}; levels: {', '.join(LEVELS)}")
        info = self.dataset(name)
        cutoff = (int(time.time()) if now is None else now) - older_than
        return sum(self._prune_level(info, lv, cutoff) for lv in LEVELS[:LEVELS.index(level) + 1])

    def enforce_retention(self, now: int | None = None) -> int:
        """Prune every dataset's levels to their retention; returns records removed."""
        now = int(time.time()) if now is None else now
        removed = 0
        for info in self.datasets():
            for lv in LEVELS:
                keep = info.retention.of(lv)
                if keep is not None:
                    removed += self._prune_level(info, lv, now - keep)
        return removed

    def _prune_level(self, info, level, cutoff) -> int:
        """Delete the records of each step the level stores that lie wholly before cutoff. The
        second level's pending seconds before cutoff are first folded into their open periods'
        records, and a period pruned from its level is no longer pending (periods.py)."""
        steps = STORED[level]
        before = " UNION ALL ".join("SELECT rowid FROM records WHERE dataset = ? AND step = ? AND t < ?"
                                    for _ in steps)
        bounds = [v for step in steps for v in (info.id, step, cutoff - step + 1)]
        removed = 0
        while True:  # small batches: the collector never waits long for the write lock
            with self.write() as c:
                if level == "second":
                    periods.fold(c, info.kind, info.id, cutoff)
                else:
                    c.execute(f"DELETE FROM pending WHERE dataset = ? AND step IN ({', '.join(map(str, steps))}) "
                              "AND t + step <= ?", (info.id, cutoff))
                n = c.execute(f"DELETE FROM records WHERE rowid IN ({before} LIMIT ?)",
                              (*bounds, PRUNE_BATCH)).rowcount
                if n < PRUNE_BATCH:
                    c.execute(f"UPDATE datasets SET horizon_{level} = max(horizon_{level}, ?) WHERE id = ?",
                              (cutoff, info.id))
                    if level == "second":   # a span's mark goes with its second-level record
                        c.execute("DELETE FROM spans WHERE dataset = ? AND t < ?", (info.id, cutoff))
            removed += n
            if n < PRUNE_BATCH:
                return removed

    # -- reading -----------------------------------------------------------------------------

    def query(self, name: str, start: int, end: int, resolution: int | None = None):
        """Data of dataset `name` over [start, end) as a QueryResult (datasets/query.py)."""
        return self.read(self.dataset(name), start, end, resolution)

    def read(self, info: DatasetInfo, start: int, end: int, resolution: int | None = None):
        """query() of a dataset already found (a DatasetInfo of datasets()): its row is not
        read again."""
        with self.guard():
            return reader.query(self.conn, info, start, end, resolution)

    def extent(self, name: str) -> tuple:
        """(first, last): the first and last second holding data of dataset `name`, from the
        finest level that has any; ArchiveError when it holds none."""
        info = self.dataset(name)
        with self.guard():
            for level in LEVELS:
                first, last = self.conn.execute("SELECT MIN(t), MAX(t) FROM records WHERE dataset = ? "
                                                "AND step = ?", (info.id, STEP[level])).fetchone()
                if first is not None:
                    return int(first), int(last) + STEP[level] - 1
        raise ArchiveError(f"dataset {info.name} in {self.path} holds no data")

    def query_whole(self, name: str):
        """All the data of dataset `name`, from its first second to its last (extent())."""
        first, last = self.extent(name)
        return self.query(name, first, last + 1)

    def rate(self, info: DatasetInfo, now: int | None = None, window: int = 60):
        """Events per collected second over the last `window` seconds (None for gauges or no data)."""
        if info.kind == "gauge":
            return None
        now = int(time.time()) if now is None else now
        with self.guard():
            rows = self.conn.execute("SELECT data FROM records WHERE dataset = ? AND step = 1 AND t >= ? "
                                     "AND t < ?", (info.id, now - window, now)).fetchall()
            if not rows:
                return None
            cells = codec.decode(info.kind, [r[0] for r in rows])
            # a record collected across an outage holds the events of all the seconds it spans
            spanned = self.conn.execute("SELECT COALESCE(SUM(seconds - 1), 0) FROM spans WHERE dataset = ? "
                                        "AND t >= ? AND t < ?", (info.id, now - window, now)).fetchone()[0] \
                if schema.has_spans(self.conn) else 0
        return float(np.sum(cells.count, dtype=np.float64)) / (len(rows) + spanned)

    def ingestor(self, flush_every: float | None = 0) -> Ingestor:
        """The writer of collected seconds (datasets/ingest.py): rollups written at the end of
        every transaction, or once flush_every seconds have passed (None: at period ends only)."""
        if self.readonly:
            raise ArchiveError(f"{self.path}: opened read-only")
        return Ingestor(self.conn, flush_every)
