"""Checking an archive file: `strata datasets verify`.

check(path) reads the file read-only and returns a Report: one line per problem
found, naming it. The checks, in order:

  file      a regular file, SQLite, complete (not cut short), a strata archive (application id),
            of a format this strata reads (user_version; a newer one cannot be judged)
  sqlite    PRAGMA integrity_check, its b-tree names turned into table names
  tables    the tables of format 1 (datasets/schema.py) are there
  datasets  each row readable, of a known kind and state, its name well formed
  keys      each dataset's interned breakdown keys readable
  records   readable (datasets/scan.py reads past damaged pages and names what it
            skipped), of a known dataset, a stored step (1, 60, 600, 3600) and a time aligned
            to it, stored once per (dataset, step, time), decodable as the dataset's
            kind (datasets/codec.py) and naming only breakdown keys the dataset has
  usage     the usage table's record counts agree with the records found
  spans     of a known dataset, over more than one second, of a known cause, marking
            a second-level record that exists
  worksheets  (an optional table: the named worksheets `strata web` saves) each row
            readable, its name a worksheet's (datasets/worksheets.py), its state a JSON object, its time
            whole seconds

A Checker given a sink hands it every dataset, key, record, span and worksheet that passed
(datasets/salvage.py copies them into a fresh archive).
"""
import json
import os
import re
import sqlite3
import time
from array import array
from dataclasses import dataclass, field
from urllib.parse import quote

import numpy as np

from . import codec, names, scan, schema, worksheets
from .errors import ArchiveError
from .retention import LEVEL_OF

STEPS = tuple(LEVEL_OF)   # packed in 2 bits of a seen record (Checker.seen)
CAUSES = ("stall", "archive", "clock")
TABLES = ("datasets", "keys", "records", "usage", "meta")
DATASET_COLUMNS = ("id, name, statistic, breakdown, filters, kind, unit, probe, state, created, state_since, "
                   "keep_second, keep_minute, keep_hour, horizon_second, horizon_minute, horizon_hour")
BATCH = 2000
LEVEL = {1: "second", 60: "minute", 600: "ten-minute", 3600: "hour"}
TREE = re.compile(r"^Tree (\d+)")            # integrity_check's names for a b-tree and a page
PAGE = re.compile(r"^Page (\d+):")
ON_PAGE = re.compile(r"^(?:On tree page|Page) (\d+)\b")   # the page an integrity_check line is about


@dataclass
class Report:
    path: str
    problems: list = field(default_factory=list)
    newer: bool = False                            # a format this strata cannot judge
    datasets: int = 0
    records: dict = field(default_factory=dict)    # step -> records that passed
    expected: dict = field(default_factory=dict)   # step -> records the usage table counts
    alike: list = field(default_factory=list)      # per problem: a key shared by the findings like it, or None

    def add(self, where: str, what: str, like: tuple | None = None):
        """One problem; like: (what it is about, how the others alike read), e.g.
        (dataset id, "that do not decode"): lines() folds the problems alike into one line."""
        line = f"{where}: {what}"   # bytes of the file quoted in it may not be UTF-8
        self.problems.append(line.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
        self.alike.append(None if like is None else (where, *like))

    def lines(self) -> list:
        """The problems as printed: each one whole, except that problems alike (of one dataset
        or page, of one kind) fold into the first of them and a count of the others."""
        groups = {}
        for i, (line, like) in enumerate(zip(self.problems, self.alike)):
            groups.setdefault(i if like is None else like, []).append(line)
        return [lines[0] + (f" (and {len(lines) - 1} more {like[-1]})" if len(lines) > 1 else "")
                for like, lines in groups.items()]


def _when(t: int) -> str:
    return f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(t))} ({t})"


def _text(raw: bytes) -> str:
    """TEXT as stored; bytes that are not UTF-8 kept as surrogates (_utf8 finds them)."""
    return raw.decode("utf-8", "surrogateescape")


def _why(e: Exception) -> str:
    return str(e) or "SQLite ran out of memory (a damaged row's header asks for too much)"


def _integer(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _utf8(*values) -> bool:
    try:
        for v in values:
            if isinstance(v, str):
                v.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _connect(path: str) -> sqlite3.Connection:
    """A read-only connection that reads as much as SQLite can: the page count of a file
    cut short is taken from the file (writable_schema), a WAL that cannot be opened is
    left out (immutable)."""
    uri = "file:" + quote(os.path.abspath(path))
    for mode in ("?mode=ro", "?mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(uri + mode, uri=True, isolation_level=None, check_same_thread=False)
        except sqlite3.OperationalError:
            continue
        try:
            conn.text_factory = _text
            conn.execute("PRAGMA writable_schema = ON")   # no write happens on a read-only connection
            conn.execute("PRAGMA application_id").fetchone()
            return conn
        except sqlite3.OperationalError as e:
            conn.close()
            if scan.is_damage(e):
                raise ArchiveError(f"{path}: {e}") from None
        except (sqlite3.DatabaseError, MemoryError) as e:
            conn.close()
            raise ArchiveError(f"{path}: {_why(e)}") from None
    raise ArchiveError(f"{path}: cannot open")


class Checker:
    def __init__(self, path: str, sink=None):
        self.path, self.sink = path, sink
        self.report = Report(path)
        self.datasets = {}     # id -> (name, kind)
        self.keys = {}         # id -> number of the highest key index + 1, and the set of indices
        self.seen = array("q")   # (dataset, step, t) of every record read, packed

    def run(self) -> Report:
        r = self.report
        problem, complete = schema.header_problem(self.path)
        if problem:
            r.add("file", problem)
            if not complete:
                return r
        try:
            conn = _connect(self.path)
        except ArchiveError as e:
            r.add("file", str(e).split(": ", 1)[-1])
            return r
        try:
            conn.execute("BEGIN")   # one snapshot: a collector writing meanwhile is not a mismatch
            if self._format(conn):
                self._schema()
                self._integrity(conn)
                if self._tables(conn):
                    self._datasets(conn)
                    self._keys(conn)
                    self._records(conn)
                    self._usage(conn)
                    self._spans(conn)
                    self._pending(conn)
                    self._worksheets(conn)
        except (sqlite3.Error, UnicodeDecodeError) as e:
            r.add("sqlite", f"reading stopped: {e}")
        except MemoryError:
            r.add("sqlite", "reading stopped: a damaged row asks for more memory than there is")
        finally:
            conn.close()
        return r

    def _format(self, conn) -> bool:
        r = self.report
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except (sqlite3.DatabaseError, MemoryError) as e:
            r.add("file", f"the header cannot be read ({_why(e)})")
            return False
        if app_id != schema.APPLICATION_ID:
            r.add("file", "not a strata archive (an SQLite database of another program)")
            return False
        if version > schema.VERSION:
            r.newer = True
            r.add("file", f"archive format {version} is newer than this strata reads ({schema.VERSION}); "
                          "check it with a newer strata")
            return False
        if version < 1:
            r.add("file", f"archive format {version} is not a format strata wrote")
            return False
        return True

    def _schema(self):
        """SQLite's own parse of the schema, which the reading connection (writable_schema)
        would let pass."""
        try:
            conn = sqlite3.connect("file:" + quote(os.path.abspath(self.path)) + "?mode=ro&immutable=1", uri=True)
            try:
                conn.execute("SELECT 1 FROM datasets LIMIT 0").fetchall()
            finally:
                conn.close()
        except (sqlite3.Error, UnicodeDecodeError) as e:
            self.report.add("sqlite", f"the schema cannot be read: {e}")

    def _integrity(self, conn):
        r = self.report
        try:
            roots = dict(conn.execute("SELECT rootpage, name FROM sqlite_schema WHERE rootpage > 0"))
            lines = [line for (row,) in conn.execute("PRAGMA integrity_check(50)") for line in row.splitlines()]
        except (sqlite3.DatabaseError, MemoryError) as e:
            r.add("sqlite", f"the integrity check stopped: {_why(e)}")
            return
        lines = [line for line in lines if line != "ok" and not line.startswith("*** in database")]
        owners = self._owners(conn, {int(m.group(1)) for m in map(PAGE.match, lines) if m})
        for line in lines:
            on = ON_PAGE.match(line)
            line = TREE.sub(lambda m: f"table {roots.get(int(m.group(1)), m.group(1))}:", line)
            line = PAGE.sub(lambda m: f"page {m.group(1)}{owners.get(int(m.group(1)), '')}:", line)
            r.add("sqlite", line, on and (f"on page {on.group(1)}",))

    @staticmethod
    def _owners(conn, pages) -> dict:
        """page -> ' (of TABLE)' for the pages named, as far as SQLite's dbstat can tell."""
        if not pages:
            return {}
        try:
            found = conn.execute(f"SELECT pageno, name FROM dbstat WHERE pageno IN ({','.join('?' * len(pages))})",
                                 tuple(pages)).fetchall()
        except sqlite3.Error:
            return {}
        return {p: f" (of {name})" for p, name in found}

    def _tables(self, conn) -> bool:
        have = {n for (n,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
        missing = [t for t in TABLES if t not in have]
        if missing:
            self.report.add("tables", f"missing: {', '.join(missing)}")
        self.has_spans = "spans" in have
        self.has_worksheets = "worksheets" in have
        return "datasets" in have and "records" in have and "keys" in have

    def _skipped(self, where: str, column: str):
        def note(after, before):
            lo = "the start" if after is None else f"{column} {after}"
            hi = "the end" if before is None else f"{column} {before}"
            self.report.add(where, f"rows between {lo} and {hi} cannot be read (damaged pages)")
        return note

    def _datasets(self, conn):
        r = self.report
        for row in scan.rows(conn, "datasets", DATASET_COLUMNS, "id", self._skipped("datasets", "id")):
            ds, name, kind, state = row[1], row[2], row[6], row[9]
            bad = None
            if not all(isinstance(v, str) for v in row[2:10]):
                bad = "a name, kind, unit, probe or state that is not text"
            elif not _utf8(*row):
                bad = "text that is not UTF-8"
            elif kind not in codec.KINDS:
                bad = f"unknown kind {kind!r}"
            elif state not in ("active", "suspended"):
                bad = f"unknown state {state!r}"
            elif not all(map(_integer, row[10:12] + row[15:18])) or \
                    not all(v is None or (_integer(v) and v > 0) for v in row[12:15]):
                bad = "times, retention or horizons that are not whole seconds"
            else:
                try:
                    if not isinstance(name, str) or str(names.parse(name)) != name:
                        bad = f"name {name!r} is not canonical"
                    json.loads(row[5])
                except (ArchiveError, TypeError, ValueError) as e:
                    bad = f"{e}"
            if bad:
                r.add("datasets", f"dataset {ds}: {bad}")
                continue
            self.datasets[ds] = (name, kind)
            if self.sink:
                self.sink.dataset(row[1:])
        r.datasets = len(self.datasets)

    def _keys(self, conn):
        for ds, (name, _) in self.datasets.items():
            known = set()
            for _, idx, key in scan.rows(conn, "keys", "idx, key", "idx",
                                         self._skipped(f"keys of {name}", "index"), "dataset = ?", (ds,)):
                if not _utf8(key):
                    self.report.add(f"keys of {name}", f"key {idx} is text that is not UTF-8")
                    continue
                known.add(idx)
                if self.sink:
                    self.sink.key(ds, idx, key)
            self.keys[ds] = known

    def _records(self, conn):
        batches = {}     # dataset -> [(step, t, data)]
        unknown = {}
        for _, ds, step, t, data in scan.rows(conn, "records", "dataset, step, t, data", "rowid",
                                              self._skipped("records", "rowid")):
            if ds not in self.datasets:
                unknown[ds] = unknown.get(ds, 0) + 1
                continue
            name = self.datasets[ds][0]
            if step not in STEPS or not isinstance(t, int) or t % step or not 0 <= t < 1 << 40:
                self.report.add("records", f"{name}: a record of step {step!r} at time {t!r} (not a level's "
                                           "step and time)", (ds, "not of a level's step and time"))
                continue
            if not isinstance(data, bytes):
                self.report.add("records", f"{name} {LEVEL[step]} {_when(t)}: its data is not bytes",
                                (ds, "whose data is not bytes"))
                continue
            batch = batches.setdefault(ds, [])
            batch.append((step, t, data))
            if len(batch) >= BATCH:
                self._decode(ds, batch)
                batch.clear()
        for ds, batch in batches.items():
            self._decode(ds, batch)
        for ds, n in sorted(unknown.items(), key=str):
            self.report.add("records", f"{n} record(s) of dataset id {ds}, which the archive does not hold "
                                       "(or whose row cannot be read)")
        self._duplicates()

    def _decode(self, ds, batch):
        name, kind = self.datasets[ds]
        try:
            cells = codec.decode(kind, [d for _, _, d in batch])
            good = self._known_keys(ds, cells, len(batch))
        except codec.CorruptRecord:
            good = None
        for i, (step, t, data) in enumerate(batch):
            if good is None:
                try:
                    ok = self._known_keys(ds, codec.decode(kind, [data]), 1)[0]
                except codec.CorruptRecord as e:
                    self.report.add("records", f"{name} {LEVEL[step]} {_when(t)}: does not decode ({e})",
                                    (ds, "that do not decode"))
                    continue
            else:
                ok = good[i]
            if not ok:
                self.report.add("records", f"{name} {LEVEL[step]} {_when(t)}: names a breakdown key the "
                                           "dataset does not have", (ds, "naming keys the dataset does not have"))
                continue
            self.seen.append((ds << 44) | (STEPS.index(step) << 42) | t)
            self.report.records[step] = self.report.records.get(step, 0) + 1
            if self.sink:
                self.sink.record(ds, step, t, data)

    def _known_keys(self, ds, cells, n) -> np.ndarray:
        """Per record of a batch of n: whether every key index it names is one of the dataset's."""
        known = np.fromiter(self.keys.get(ds, ()), dtype=np.int64)
        bad = ~np.isin(cells.key, known)
        out = np.ones(n, dtype=bool)
        out[cells.row[bad]] = False
        return out

    def _duplicates(self):
        seen = np.frombuffer(self.seen, dtype=np.int64)
        values, counts = np.unique(seen, return_counts=True)
        for v in values[counts > 1][:20]:
            ds, step, t = int(v) >> 44, STEPS[(int(v) >> 42) & 3], int(v) & ((1 << 42) - 1)
            self.report.add("records", f"{self.datasets[ds][0]} {LEVEL[step]} {_when(t)} is stored "
                                       f"{int(counts[values == v][0])} times", (ds, "stored more than once"))
        self.index, self.counts = values, counts

    def _usage(self, conn):
        found = {}
        for v, n in zip(self.index.tolist(), self.counts.tolist()):
            ds, step = v >> 44, STEPS[(v >> 42) & 3]
            found[ds, step] = found.get((ds, step), 0) + n
        try:
            usage = conn.execute("SELECT dataset, step, rows FROM usage").fetchall()
        except (sqlite3.DatabaseError, MemoryError) as e:
            self.report.add("usage", f"cannot be read ({_why(e)})")
            return
        short = {}     # dataset -> [(step, rows counted, found whole)] where they differ
        for ds, step, rows in usage:
            if ds not in self.datasets:
                continue
            if step not in STEPS or not _integer(rows):
                self.report.add("usage", f"{self.datasets[ds][0]}: a row of step {step!r} counting {rows!r}")
                continue
            self.report.expected[step] = self.report.expected.get(step, 0) + rows
            if found.get((ds, step), 0) != rows:
                short.setdefault(ds, []).append((step, rows, found.get((ds, step), 0)))
        for ds, levels in short.items():
            self.report.add("usage", f"{self.datasets[ds][0]}: record(s) found whole of those counted: " +
                            ", ".join(f"{whole} of {rows} {LEVEL[step]}" for step, rows, whole in sorted(levels)))

    def _pending(self, conn):
        """Pass the rollup periods still open (datasets/periods.py) of the datasets read to the sink."""
        if self.sink and schema.has_pending(conn):
            for ds, step, t, through in conn.execute("SELECT dataset, step, t, through FROM pending"):
                if ds in self.datasets and step in (60, 600, 3600) and t <= through <= t + step:
                    self.sink.pending(ds, step, t, through)

    def _spans(self, conn):
        if not self.has_spans:
            return
        for ds, (name, _) in self.datasets.items():
            for t, seconds, cause in scan.rows(conn, "spans", "seconds, cause", "t",
                                               self._skipped(f"spans of {name}", "time"), "dataset = ?", (ds,)):
                bad = None
                if not isinstance(seconds, int) or seconds < 2:
                    bad = f"spans {seconds!r} seconds"
                elif cause not in CAUSES:
                    bad = f"unknown cause {cause!r}"
                else:
                    v = (ds << 44) | t
                    i = np.searchsorted(self.index, v)
                    if i >= len(self.index) or self.index[i] != v:
                        bad = "marks no second-level record"
                if bad:
                    kind = bad.split()[0]      # spans, unknown or marks
                    self.report.add("spans", f"{name} {_when(t)}: {bad}", (ds, kind, "like it"))
                elif self.sink:
                    self.sink.span(ds, t, seconds, cause)

    def _worksheets(self, conn):
        if not self.has_worksheets:
            return
        try:
            rows = conn.execute("SELECT name, state, saved FROM worksheets").fetchall()
        except (sqlite3.DatabaseError, MemoryError) as e:
            self.report.add("worksheets", f"rows cannot be read ({_why(e)})")
            return
        for name, state, saved in rows:
            bad = None
            if worksheets.name_problem(name):
                bad = "a name that is not a worksheet's"
            elif not isinstance(state, str) or not _utf8(name, state):
                bad = "a state that is not UTF-8 text"
            elif not _integer(saved):
                bad = "a time that is not whole seconds"
            else:
                try:
                    if not isinstance(json.loads(state), dict):
                        bad = "a state that is not a JSON object"
                except ValueError:
                    bad = "a state that is not JSON"
            if bad:
                self.report.add("worksheets", f"{str(name)[:80]!r}: {bad}")
            elif self.sink:
                self.sink.worksheet(name, state, saved)


def check(path: str) -> Report:
    """Check the archive file at path (read-only)."""
    path = str(path)
    if not os.path.exists(path):
        raise ArchiveError(f"{path}: no such file")
    return Checker(path).run()
