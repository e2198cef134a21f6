"""The archive file: its SQLite schema, and opening it safely.

A strata archive is an SQLite database with PRAGMA application_id = 'STRA'
and PRAGMA user_version = the schema version, so a foreign SQLite file, a
non-SQLite file, a truncated file and a file from a newer strata each get one
clear ArchiveError. Writers use WAL (readers never block the collector);
readers open read-only and fall back to immutable mode where the WAL's
shared-memory file cannot be created (a directory they cannot write).

Tables:
  datasets  one row per dataset: name, statistic, breakdown, filters (JSON),
            kind, unit, probe, state, times, retention and pruning horizon
            per level (data before horizon_L has been pruned from level L).
            Its id is AUTOINCREMENT: never given twice in one archive, so no
            record, span, key or running collector that names a destroyed
            dataset's id can be taken for a later dataset's. Archives written
            before are migrated by their first writer (_migrate_ids); older
            strata read and write a migrated archive unchanged, so the format
            version stays 1.
  keys      breakdown keys interned per dataset (dataset, idx) -> key
  records   (dataset, step, t) -> encoded cells (datasets/codec.py); step 1,
            60 or 3600 for the second, minute and hour levels, 600 for the minute
            level's ten-minute records (an archive written before them has none)
  usage     rows and bytes per (dataset, step), kept by triggers
  meta      'changes': bumped whenever a dataset is created, destroyed,
            suspended or resumed (the collector polls it)
  spans     (dataset, t) -> seconds, cause: the second-level record at t holds
            the events of [t, t + seconds), collected across an outage (the
            collector stalled, the archive could not be written, the wall clock
            stepped back); cause 'stall', 'archive' or 'clock'. Added to format 1 without a version change:
            writers create it in an archive that lacks it, readers of an archive
            without it see no spans.
  pending   (dataset, step, t) -> through: the rollup record of the period [t, t + step)
            holds none of the period's stored seconds from `through` on (it is written once
            per period: datasets/ingest.py, periods.py); its exact contents are that record
            plus those seconds. Added to format 1 like spans; an older strata reading an
            archive a collector is writing sees an open period's record as of its last flush.
"""
import os
import sqlite3
import stat
import struct
from contextlib import contextmanager
from urllib.parse import quote

from .errors import ArchiveError, ArchiveFull, NoArchive

APPLICATION_ID = 0x53545241  # "STRA"
SPANS = """CREATE TABLE IF NOT EXISTS spans(
  dataset INTEGER NOT NULL, t INTEGER NOT NULL, seconds INTEGER NOT NULL CHECK (seconds > 1),
  cause TEXT NOT NULL, PRIMARY KEY (dataset, t)
) WITHOUT ROWID;"""
PENDING = """CREATE TABLE IF NOT EXISTS pending(
  dataset INTEGER NOT NULL, step INTEGER NOT NULL, t INTEGER NOT NULL, through INTEGER NOT NULL,
  PRIMARY KEY (dataset, step, t)
) WITHOUT ROWID;"""
VERSION = 1
WAL_LIMIT = 16 << 20   # bytes the WAL file is cut back to after a checkpoint resets it
HEADER = b"SQLite format 3\x00"
REPAIR = "`strata datasets verify` names the damage, `--salvage OUT` copies out what is readable"

DATASETS = """
CREATE TABLE TABLE_NAME(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL UNIQUE,
  statistic TEXT NOT NULL,
  breakdown TEXT NOT NULL DEFAULT '',
  filters TEXT NOT NULL DEFAULT '{}',
  kind TEXT NOT NULL CHECK (kind IN ('heatmap', 'counter', 'gauge')),
  unit TEXT NOT NULL,
  probe TEXT NOT NULL DEFAULT '',
  state TEXT NOT NULL CHECK (state IN ('active', 'suspended')),
  created INTEGER NOT NULL,
  state_since INTEGER NOT NULL,
  keep_second INTEGER, keep_minute INTEGER, keep_hour INTEGER,
  horizon_second INTEGER NOT NULL DEFAULT 0,
  horizon_minute INTEGER NOT NULL DEFAULT 0,
  horizon_hour INTEGER NOT NULL DEFAULT 0
);"""
DATASETS_COLUMNS = ("id, name, statistic, breakdown, filters, kind, unit, probe, state, created, state_since, "
                    "keep_second, keep_minute, keep_hour, horizon_second, horizon_minute, horizon_hour")
DATASET_TRIGGERS = """
CREATE TRIGGER datasets_created AFTER INSERT ON datasets
BEGIN UPDATE meta SET value = value + 1 WHERE key = 'changes'; END;
CREATE TRIGGER datasets_destroyed AFTER DELETE ON datasets
BEGIN UPDATE meta SET value = value + 1 WHERE key = 'changes'; END;
CREATE TRIGGER datasets_state AFTER UPDATE OF state ON datasets
BEGIN UPDATE meta SET value = value + 1 WHERE key = 'changes'; END;
"""
DDL = DATASETS.replace("TABLE_NAME", "datasets") + """
CREATE TABLE keys(
  dataset INTEGER NOT NULL, idx INTEGER NOT NULL, key TEXT NOT NULL,
  PRIMARY KEY (dataset, idx), UNIQUE (dataset, key)
) WITHOUT ROWID;
CREATE TABLE records(
  dataset INTEGER NOT NULL, step INTEGER NOT NULL, t INTEGER NOT NULL, data BLOB NOT NULL,
  UNIQUE (dataset, step, t)
);
CREATE TABLE usage(
  dataset INTEGER NOT NULL, step INTEGER NOT NULL,
  rows INTEGER NOT NULL DEFAULT 0, bytes INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (dataset, step)
) WITHOUT ROWID;
CREATE TABLE meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO meta VALUES ('changes', 0);
""" + DATASET_TRIGGERS + """

CREATE TRIGGER records_added AFTER INSERT ON records BEGIN
  INSERT INTO usage VALUES (NEW.dataset, NEW.step, 1, length(NEW.data))
  ON CONFLICT DO UPDATE SET rows = rows + 1, bytes = bytes + length(NEW.data);
END;
CREATE TRIGGER records_changed AFTER UPDATE OF data ON records BEGIN
  UPDATE usage SET bytes = bytes + length(NEW.data) - length(OLD.data)
  WHERE dataset = NEW.dataset AND step = NEW.step;
END;
CREATE TRIGGER records_removed AFTER DELETE ON records BEGIN
  UPDATE usage SET rows = rows - 1, bytes = bytes - length(OLD.data)
  WHERE dataset = OLD.dataset AND step = OLD.step;
END;
""" + SPANS + "\n" + PENDING


def translate(path, e: Exception) -> ArchiveError:
    """One line for an SQLite failure on the archive at path."""
    code = getattr(e, "sqlite_errorcode", None)
    base = code & 0xFF if code is not None else None
    if base == sqlite3.SQLITE_FULL:
        return ArchiveFull(f"{path}: the disk is full (the last write was rolled back)")
    if base in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return ArchiveError(f"{path}: damaged archive ({e}); {REPAIR}")
    if base == sqlite3.SQLITE_BUSY:
        return ArchiveError(f"{path}: the archive is busy (locked by another writer); try again")
    if base == sqlite3.SQLITE_READONLY:
        return ArchiveError(f"{path}: cannot write the archive ({e}); writing needs its owner or root")
    if base == sqlite3.SQLITE_CANTOPEN:
        return ArchiveError(f"{path}: cannot open the archive ({e})")
    return ArchiveError(f"{path}: {e}")


_NOT_FILES = {stat.S_IFIFO: "a named pipe", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
              stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a folder"}


def header_problem(path) -> tuple:
    """(what is wrong with the file at path as an SQLite file, or None; whether SQLite can
    read it at all): not SQLite, or cut short (a truncated copy still reads in part)."""
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):   # reading a named pipe would wait for a writer
            return f"not an archive file ({_NOT_FILES.get(stat.S_IFMT(mode), 'not a regular file')})", False
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(100)
    except OSError as e:
        return f"cannot read ({e.strerror})", False
    if size == 0:
        return None, True
    if not head.startswith(HEADER[:len(head)]) or len(head) < 100:
        if head.startswith(HEADER[:len(head)]):
            return f"truncated archive ({size} bytes)", False
        return "not a strata archive (not an SQLite database)", False
    page_size = struct.unpack(">H", head[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    change, pages, valid_for = struct.unpack(">I", head[24:28])[0], struct.unpack(">I", head[28:32])[0], \
        struct.unpack(">I", head[92:96])[0]
    wal = path + "-wal"
    wal_empty = not os.path.exists(wal) or os.path.getsize(wal) == 0
    if change == valid_for and wal_empty and size < pages * page_size:
        return f"truncated archive ({size} of {pages * page_size} bytes)", True
    return None, True


def check_header(path):
    """Raise ArchiveError unless path looks like a complete SQLite file (or is empty)."""
    problem, _ = header_problem(path)
    if problem:
        raise ArchiveError(f"{path}: {problem}" + (f"; {REPAIR}" if problem.startswith("truncated") else ""))


def _connect(uri: str) -> sqlite3.Connection:
    conn = sqlite3.connect(uri, uri=True, timeout=10, isolation_level=None, check_same_thread=False)
    try:
        conn.execute("PRAGMA application_id").fetchone()  # forces the file to be read now
    except BaseException:
        conn.close()
        raise
    return conn


def connect(path: str, readonly: bool, make: bool | None = None) -> sqlite3.Connection:
    """An open, validated connection to the archive at path; made when missing if make
    (default: when writable), else refused as missing."""
    make = not readonly if make is None else make
    try:
        os.stat(path)
        exists = True
    except PermissionError:
        raise ArchiveError(f"{path}: cannot read (Permission denied on a folder above it)") from None
    except OSError:
        exists = False
    if not exists and (readonly or not make):
        raise NoArchive(path)
    if exists:
        check_header(path)
    elif not os.path.isdir(os.path.dirname(os.path.abspath(path))):
        try:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        except OSError as e:
            raise ArchiveError(f"{path}: cannot make its folder ({e.strerror})") from None
    uri = "file:" + quote(os.path.abspath(path))
    try:
        if readonly:
            try:
                conn = _connect(uri + "?mode=ro")
            except sqlite3.OperationalError:
                conn = _connect(uri + "?mode=ro&immutable=1")
        else:
            conn = _connect(uri + "?mode=rwc")
    except sqlite3.Error as e:
        raise translate(path, e) from None
    try:
        _validate_or_create(conn, path, readonly)
        if not readonly:
            conn.execute("PRAGMA busy_timeout = 10000")
            # every commit synced: a write the device fails fails its commit (and the collector
            # holds those seconds) instead of being lost after SQLite reported it done
            conn.execute("PRAGMA synchronous = FULL")
            # a reader holding a snapshot lets the WAL grow; once it lets go, the next
            # checkpoint resets the WAL and this truncates it back
            conn.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT}")
        return conn
    except sqlite3.Error as e:
        conn.close()
        raise translate(path, e) from None
    except UnicodeDecodeError:
        conn.close()
        raise ArchiveError(f"{path}: damaged archive (text that is not UTF-8); {REPAIR}") from None
    except MemoryError:
        conn.close()
        raise ArchiveError(f"{path}: out of memory reading the archive (a damaged row?); {REPAIR}") from None
    except BaseException:
        conn.close()
        raise


def _validate_or_create(conn, path, readonly):
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id == 0 and not readonly:
        tables = conn.execute("SELECT count(*) FROM sqlite_schema").fetchone()[0]
        if tables == 0:
            initialise(conn)
            return
    if app_id != APPLICATION_ID:
        raise ArchiveError(f"{path}: not a strata archive (an SQLite database of another program)")
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > VERSION:
        raise ArchiveError(f"{path}: archive format {version} is newer than this strata reads ({VERSION})")
    if not readonly and conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        conn.execute("PRAGMA journal_mode = WAL")
    if not readonly:
        conn.execute(SPANS)
        conn.execute(PENDING)
        if not ids_never_reused(conn):
            _migrate_ids(conn)


def ids_never_reused(conn) -> bool:
    """Whether the datasets table's ids are AUTOINCREMENT (archives written before are not)."""
    sql = conn.execute("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'datasets'").fetchone()
    return sql is not None and "AUTOINCREMENT" in sql[0].upper()


def _migrate_ids(conn):
    """Make the datasets table's ids AUTOINCREMENT in an archive written before they were, in
    one transaction keeping every row: the table is copied into a new one and renamed, and the
    id sequence starts above every id any table still names (orphan rows of a destroyed
    dataset included), so no new dataset is given an id something refers to."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not ids_never_reused(conn):    # another writer may have done it meanwhile
            high = max(conn.execute(f"SELECT coalesce(max({col}), 0) FROM {table}").fetchone()[0]
                       for table, col in (("datasets", "id"), ("keys", "dataset"), ("records", "dataset"),
                                          ("usage", "dataset"), ("spans", "dataset"),
                                          ("pending", "dataset")))
            conn.execute(DATASETS.replace("TABLE_NAME", "datasets_new"))
            conn.execute(f"INSERT INTO datasets_new ({DATASETS_COLUMNS}) SELECT {DATASETS_COLUMNS} FROM datasets")
            conn.execute("DROP TABLE datasets")     # its triggers go with it (no DELETE trigger runs)
            conn.execute("ALTER TABLE datasets_new RENAME TO datasets")
            for stmt in _statements(DATASET_TRIGGERS):
                conn.execute(stmt)
            conn.execute("DELETE FROM sqlite_sequence WHERE name IN ('datasets', 'datasets_new')")
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('datasets', ?)", (high,))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def has_spans(conn) -> bool:
    """Whether the archive has the spans table (archives written before it have none)."""
    return conn.execute("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'spans'").fetchone() is not None


def has_pending(conn, schema_name: str = "main") -> bool:
    """Whether the archive has the pending table (archives written before it have none)."""
    return conn.execute(f"SELECT 1 FROM {schema_name}.sqlite_schema WHERE type = 'table' AND name = 'pending'"
                        ).fetchone() is not None


def initialise(conn, journal: str = "WAL"):
    """Create the schema in an empty database."""
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.execute("BEGIN IMMEDIATE")
    for stmt in _statements(DDL):
        conn.execute(stmt)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    conn.execute(f"PRAGMA user_version = {VERSION}")
    conn.execute("COMMIT")
    if journal == "WAL":
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


@contextmanager
def write_new(dest: str):
    """A fresh one-file archive (rollback journal) for dest, written in one transaction to
    a temporary file beside it that replaces dest only when the block succeeds; SQLite and
    file-system errors become one-line ArchiveErrors naming dest."""
    tmp = f"{dest}.tmp-{os.getpid()}"
    try:
        conn = sqlite3.connect("file:" + quote(os.path.abspath(tmp)) + "?mode=rwc", uri=True, isolation_level=None)
        try:
            initialise(conn, journal="DELETE")
            conn.execute("BEGIN")
            yield conn
            conn.execute("COMMIT")
        finally:
            conn.close()
        os.replace(tmp, dest)
    except sqlite3.Error as e:
        raise translate(dest, e) from None
    except OSError as e:
        raise ArchiveError(f"{dest}: cannot write ({e.strerror})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _statements(script: str):
    """Split the DDL into statements (triggers hold ';' inside BEGIN ... END)."""
    buf = ""
    for line in script.strip().splitlines():
        buf += line + "\n"
        if sqlite3.complete_statement(buf):
            yield buf.strip()
            buf = ""
