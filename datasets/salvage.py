"""Copying what is readable out of a damaged archive: `strata datasets verify --salvage OUT`.

salvage(path, out) runs verify's checks (datasets/verify.py) and copies every dataset,
key, record, span and worksheet that passed them, under the same ids and names, into a
fresh archive at `out` (a rollback-journal file, like `strata datasets archive` writes):
every readable, whole second, minute and hour is kept (a period a collector had still open
written as the sum of its record and its seconds kept); a record stored twice keeps its
first copy. Every worksheet that passes is kept, whichever datasets survived: the file
is the same archive, repaired.
"""
import os

from . import schema, worksheets
from .errors import ArchiveError
from .ingest import Ingestor
from .verify import DATASET_COLUMNS, Checker, Report


class _Sink:
    """Writes what passed the checks into a fresh archive."""

    def __init__(self, conn):
        self.conn = conn

    def dataset(self, row):
        self.conn.execute(f"INSERT INTO datasets ({DATASET_COLUMNS}) VALUES ({', '.join('?' * 17)})", row)

    def key(self, ds, idx, key):
        self.conn.execute("INSERT OR IGNORE INTO keys VALUES (?, ?, ?)", (ds, idx, key))

    def record(self, ds, step, t, data):
        self.conn.execute("INSERT OR IGNORE INTO records (dataset, step, t, data) VALUES (?, ?, ?, ?)",
                          (ds, step, t, data))

    def span(self, ds, t, seconds, cause):
        self.conn.execute("INSERT OR IGNORE INTO spans VALUES (?, ?, ?, ?)", (ds, t, seconds, cause))

    def pending(self, ds, step, t, through):
        self.conn.execute("INSERT OR IGNORE INTO pending VALUES (?, ?, ?, ?)", (ds, step, t, through))

    def worksheet(self, name, state, saved):
        self.conn.execute(worksheets.TABLE)
        self.conn.execute("INSERT OR IGNORE INTO worksheets VALUES (?, ?, ?)", (name, state, saved))


def salvage(path: str, out: str) -> Report:
    """Copy everything of the archive at path that passes check() into a new archive at out."""
    path, out = str(path), str(out)
    if not os.path.exists(path):
        raise ArchiveError(f"{path}: no such file")
    if os.path.exists(out):
        raise ArchiveError(f"{out} exists; salvage writes a new file")
    if not os.path.isdir(os.path.dirname(os.path.abspath(out))):
        raise ArchiveError(f"{out}: no such folder {os.path.dirname(os.path.abspath(out))}")
    with schema.write_new(out) as conn:
        report = Checker(path, _Sink(conn)).run()
        if report.newer:
            raise ArchiveError(report.problems[-1].split(": ", 1)[1])
        Ingestor(conn).recover()     # rollup periods left open: written whole from the seconds kept
    return report
