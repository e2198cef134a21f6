"""Moving datasets between archive files: export to a self-contained file, import from one.

export() writes a fresh archive (same schema, rollback journal so it is one
file) holding only the chosen datasets, atomically (temporary file, then
rename). import_from() copies every dataset of such a file into an archive,
suspended, so a collector here does not add this host's data to them.
"""
import os
from urllib.parse import quote

from . import schema
from .archive import Archive
from .errors import ArchiveError


def _src_uri(path: str) -> str:
    return "file:" + quote(os.path.abspath(path)) + "?mode=ro"


def _has_spans(conn) -> bool:
    """Whether the attached source archive has a spans table (older ones have none)."""
    return conn.execute("SELECT 1 FROM src.sqlite_schema WHERE type = 'table' AND name = 'spans'").fetchone() \
        is not None


def export(archive: Archive, which: list, dest: str, overwrite: bool = False) -> list:
    """Write the named datasets of archive to a new archive file at dest; returns their names."""
    infos = [archive.dataset(n) for n in which]
    if not infos:
        raise ArchiveError("name at least one dataset to archive")
    if os.path.exists(dest) and not overwrite:
        raise ArchiveError(f"{dest} exists (pass --force to replace it)")
    ids = ",".join(str(i.id) for i in infos)
    with schema.write_new(dest) as conn:
        conn.execute("ATTACH DATABASE ? AS src", (_src_uri(archive.path),))
        conn.execute(f"INSERT INTO datasets SELECT * FROM src.datasets WHERE id IN ({ids})")
        conn.execute(f"INSERT INTO keys SELECT * FROM src.keys WHERE dataset IN ({ids})")
        conn.execute(f"INSERT INTO records (dataset, step, t, data) SELECT dataset, step, t, data "
                     f"FROM src.records WHERE dataset IN ({ids}) ORDER BY dataset, step, t")
        if _has_spans(conn):
            conn.execute(f"INSERT INTO spans SELECT * FROM src.spans WHERE dataset IN ({ids})")
    return [i.name for i in infos]


def import_from(archive: Archive, src: str) -> list:
    """Copy every dataset of the archive file src into archive (suspended); returns their names."""
    with Archive.open(src, readonly=True) as source:
        incoming = source.datasets()
    clash = [d.name for d in incoming if d.name in {x.name for x in archive.datasets()}]
    if clash:
        raise ArchiveError(f"{archive.path} already has {', '.join(clash)} (destroy or rename before importing)")
    with archive.guard():
        archive.conn.execute("ATTACH DATABASE ? AS src", (_src_uri(src),))
    try:
        with archive.write() as c:
            for d in incoming:
                cur = c.execute("INSERT INTO datasets (name, statistic, breakdown, filters, kind, unit, probe, "
                                "state, created, state_since, keep_second, keep_minute, keep_hour, "
                                "horizon_second, horizon_minute, horizon_hour) "
                                "SELECT name, statistic, breakdown, filters, kind, unit, probe, 'suspended', "
                                "created, state_since, keep_second, keep_minute, keep_hour, horizon_second, "
                                "horizon_minute, horizon_hour FROM src.datasets WHERE id = ?", (d.id,))
                new = cur.lastrowid
                c.execute("INSERT INTO keys SELECT ?, idx, key FROM src.keys WHERE dataset = ?", (new, d.id))
                c.execute("INSERT INTO records (dataset, step, t, data) SELECT ?, step, t, data "
                          "FROM src.records WHERE dataset = ? ORDER BY step, t", (new, d.id))
                if _has_spans(c):
                    c.execute("INSERT INTO spans SELECT ?, t, seconds, cause FROM src.spans WHERE dataset = ?",
                              (new, d.id))
    finally:
        with archive.guard():
            archive.conn.execute("DETACH DATABASE src")
    return [d.name for d in incoming]
