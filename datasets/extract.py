"""Writing chosen datasets of an archive to a new archive file: the copy under `datasets
archive` (datasets/transfer.py, which adds the worksheets and the checks a user's command
needs) and under a check's round archives (lab/window.py).

extract() writes a fresh archive (same schema, rollback journal so it is one file) holding
only the chosen datasets, atomically (temporary file, then rename), never over the archive
it reads, its rollup periods still open written whole. attach(), has_spans() and
copy_pending() are the source side, shared with import.
"""
import os
import sqlite3
from urllib.parse import quote

from . import schema
from .archive import Archive
from .ingest import Ingestor
from .errors import ArchiveError


def attach(conn, path: str):
    """Attach the archive at path read-only as `src`: immutable where its WAL's shared memory
    cannot be made (a folder this user cannot write, a read-only mount), as readers open it
    (schema.connect)."""
    uri = "file:" + quote(os.path.abspath(path))
    for mode in ("?mode=ro", "?mode=ro&immutable=1"):
        try:
            conn.execute("ATTACH DATABASE ? AS src", (uri + mode,))
        except sqlite3.OperationalError as e:
            why = e
            continue
        try:
            conn.execute("SELECT count(*) FROM src.sqlite_schema").fetchone()
            return
        except sqlite3.OperationalError as e:
            conn.execute("DETACH DATABASE src")
            why = e
    raise schema.translate(path, why)


def copy_pending(conn, dataset_from: str, dataset_to: str = "dataset"):
    """Copy the attached source's pending rows (datasets/periods.py) of the datasets chosen by
    `dataset_from` (an SQL condition on src.pending), under `dataset_to` (an SQL expression)."""
    if schema.has_pending(conn, "src"):
        conn.execute(f"INSERT INTO pending SELECT {dataset_to}, step, t, through FROM src.pending "
                     f"WHERE {dataset_from}")


def has_spans(conn) -> bool:
    """Whether the attached source archive has a spans table (older ones have none)."""
    return conn.execute("SELECT 1 FROM src.sqlite_schema WHERE type = 'table' AND name = 'spans'").fetchone() \
        is not None


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def extract(archive: Archive, which: list, dest: str, overwrite: bool = False, also=None) -> list:
    """Write the named datasets of archive to a new archive file at dest, with also(conn,
    ids) run in the same transaction (the source attached as `src`); returns their infos."""
    infos = list({i.id: i for i in (archive.dataset(n) for n in which)}.values())
    if not infos:
        raise ArchiveError("name at least one dataset to archive")
    if any(same_file(dest, archive.path + end) for end in ("", "-wal", "-shm", ".lock")):
        raise ArchiveError(f"{dest} is the archive being read (or one of its files); write to another file")
    if os.path.exists(dest) and not overwrite:
        raise ArchiveError(f"{dest} exists (pass --force to replace it)")
    if not os.path.isdir(os.path.dirname(os.path.abspath(dest))):
        raise ArchiveError(f"{dest}: no such folder {os.path.dirname(os.path.abspath(dest))}")
    ids = ",".join(str(i.id) for i in infos)
    with schema.write_new(dest) as conn:
        attach(conn, archive.path)
        copied = conn.execute(f"INSERT INTO datasets SELECT * FROM src.datasets WHERE id IN ({ids})").rowcount
        if copied != len(infos):
            raise ArchiveError(f"{dest}: not written: {len(infos) - copied} of the datasets named were destroyed "
                               "meanwhile")
        conn.execute(f"INSERT INTO keys SELECT * FROM src.keys WHERE dataset IN ({ids})")
        conn.execute(f"INSERT INTO records (dataset, step, t, data) SELECT dataset, step, t, data "
                     f"FROM src.records WHERE dataset IN ({ids}) ORDER BY dataset, step, t")
        if has_spans(conn):
            conn.execute(f"INSERT INTO spans SELECT * FROM src.spans WHERE dataset IN ({ids})")
        copy_pending(conn, f"dataset IN ({ids})")
        Ingestor(conn).recover()     # the open periods written whole: the file needs no collector
        if also:
            also(conn, {i.id for i in infos})
    return infos
