"""Moving datasets between archive files: export to a self-contained file, import from one.

export() writes a fresh archive (same schema, rollback journal so it is one
file) holding only the chosen datasets, and the worksheets that show only them,
atomically (temporary file, then rename), never over the archive it reads nor one a
running collector writes. import_from() copies every dataset of
such a file into an archive, suspended, so a collector here does not add this
host's data to them, with the file's worksheets (datasets/worksheets.py: which are
carried, and a name already taken here). A file that `verify` finds damaged is not
imported. Notes on worksheets go to `say` (stderr by default), one line each.
"""
import os
import sqlite3
import sys
from urllib.parse import quote

from . import schema, status, verify, worksheets
from .archive import Archive
from .errors import ArchiveError


def _attach(conn, path: str):
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


def _stderr(command: str):
    return lambda line: print(f"strata datasets {command}: {line}", file=sys.stderr, flush=True)


def _has_spans(conn) -> bool:
    """Whether the attached source archive has a spans table (older ones have none)."""
    return conn.execute("SELECT 1 FROM src.sqlite_schema WHERE type = 'table' AND name = 'spans'").fetchone() \
        is not None


def _quoted(names) -> str:
    return ", ".join(repr(n) for n in names)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def export(archive: Archive, which: list, dest: str, overwrite: bool = False, say=None) -> list:
    """Write the named datasets of archive, and the worksheets showing only them, to a new
    archive file at dest; returns the datasets' names."""
    say = say or _stderr("archive")
    infos = list({i.id: i for i in (archive.dataset(n) for n in which)}.values())
    if not infos:
        raise ArchiveError("name at least one dataset to archive")
    if any(_same_file(dest, archive.path + end) for end in ("", "-wal", "-shm", ".lock")):
        raise ArchiveError(f"{dest} is the archive being read (or one of its files); write to another file")
    if os.path.exists(dest) and not overwrite:
        raise ArchiveError(f"{dest} exists (pass --force to replace it)")
    writer = status.read(dest) if os.path.exists(dest) else None
    if writer:
        raise ArchiveError(f"{dest} is the archive a running collector (pid {writer.get('pid')}) writes; "
                           "not replaced (write to another file)")
    if not os.path.isdir(os.path.dirname(os.path.abspath(dest))):
        raise ArchiveError(f"{dest}: no such folder {os.path.dirname(os.path.abspath(dest))}")
    ids = ",".join(str(i.id) for i in infos)
    every = archive.datasets()
    with schema.write_new(dest) as conn:
        _attach(conn, archive.path)
        copied = conn.execute(f"INSERT INTO datasets SELECT * FROM src.datasets WHERE id IN ({ids})").rowcount
        if copied != len(infos):
            raise ArchiveError(f"{dest}: not written: {len(infos) - copied} of the datasets named were destroyed "
                               "meanwhile")
        conn.execute(f"INSERT INTO keys SELECT * FROM src.keys WHERE dataset IN ({ids})")
        conn.execute(f"INSERT INTO records (dataset, step, t, data) SELECT dataset, step, t, data "
                     f"FROM src.records WHERE dataset IN ({ids}) ORDER BY dataset, step, t")
        if _has_spans(conn):
            conn.execute(f"INSERT INTO spans SELECT * FROM src.spans WHERE dataset IN ({ids})")
        sheets, left = worksheets.carried(worksheets.rows(conn, "src"), every, {i.id for i in infos})
        worksheets.insert(conn, sheets)
    if sheets:
        say(f"with worksheet(s) {_quoted(r[0] for r in sheets)}")
    if left:
        say(f"left out worksheet(s) {_quoted(left)}: they show datasets not archived")
    return [i.name for i in infos]


def _refuse_clash(archive: Archive, incoming: list, here: set):
    clash = [d.name for d in incoming if d.name in here]
    if clash:
        raise ArchiveError(f"{archive.path} already has {', '.join(clash)} (destroy or rename before importing)")


def import_from(archive: Archive, src: str, say=None) -> list:
    """Copy every dataset of the archive file src into archive (suspended), with the
    worksheets that show only them; returns the datasets' names."""
    say = say or _stderr("import")
    if not os.path.exists(src):
        raise ArchiveError(f"{src}: no such file")
    if _same_file(src, archive.path):
        raise ArchiveError(f"{src} is the archive it would be imported into; nothing to import")
    with Archive.open(src, readonly=True) as source:
        incoming = source.datasets()
        with source.guard():
            sheets, left = worksheets.carried(worksheets.rows(source.conn), incoming, {d.id for d in incoming})
    _refuse_clash(archive, incoming, {x.name for x in archive.datasets()})
    report = verify.check(src)
    if report.problems:
        more = f"; and {len(report.problems) - 1} more" if len(report.problems) > 1 else ""
        raise ArchiveError(f"{src}: not imported, it is damaged ({report.problems[0]}{more}); "
                           f"`strata datasets verify {src}` names the damage, `--salvage OUT` copies out what is "
                           "readable")
    with archive.guard():
        _attach(archive.conn, src)
    try:
        with archive.write() as c:
            _refuse_clash(archive, incoming, {n for (n,) in c.execute("SELECT name FROM datasets")})
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
            renamed = worksheets.insert(c, sheets)
    finally:
        with archive.guard():
            archive.conn.execute("DETACH DATABASE src")
    if sheets:
        say(f"with worksheet(s) {_quoted(r[0] for r in sheets)}")
    for name, stored in renamed:
        say(f"worksheet {name!r} is here already (another one, kept): the imported one is {stored!r}")
    if left:
        say(f"left out worksheet(s) {_quoted(left)}: they show datasets {src} does not hold")
    return [d.name for d in incoming]
