"""Moving datasets between archive files: export to a self-contained file, import from one.

export() writes a fresh archive file holding only the chosen datasets
(datasets/extract.py), and the worksheets that show only them, never over one a
running collector writes. import_from() copies every dataset of
such a file into an archive, suspended, so a collector here does not add this
host's data to them, with the file's worksheets (datasets/worksheets.py: which are
carried, and a name already taken here). read_source() reads and checks that file
first, alone: a file that is missing, no archive, or that `verify` finds damaged is
refused before the archive to import into is opened, so a refusal never makes one.
Notes on worksheets go to `say` (stderr by default), one line each.
"""
import os
import sys
from dataclasses import dataclass

from . import extract, verify, worksheets
from .archive import Archive
from .errors import ArchiveError


def _stderr(command: str):
    return lambda line: print(f"strata datasets {command}: {line}", file=sys.stderr, flush=True)


def _quoted(names) -> str:
    return ", ".join(repr(n) for n in names)


def export(archive: Archive, which: list, dest: str, overwrite: bool = False, say=None) -> list:
    """Write the named datasets of archive, and the worksheets showing only them, to a new
    archive file at dest (the caller refuses one a running collector writes: status.refuse_written);
    returns the datasets' names."""
    say = say or _stderr("archive")
    every = archive.datasets()
    carried = {}

    def with_worksheets(conn, ids):
        carried["sheets"], carried["left"] = worksheets.carried(worksheets.rows(conn, "src"), every, ids)
        worksheets.insert(conn, carried["sheets"])

    infos = extract.extract(archive, which, dest, overwrite, also=with_worksheets)
    sheets, left = carried["sheets"], carried["left"]
    if sheets:
        say(f"with worksheet(s) {_quoted(r[0] for r in sheets)}")
    if left:
        say(f"left out worksheet(s) {_quoted(left)}: they show datasets not archived")
    return [i.name for i in infos]


def _refuse_clash(archive: Archive, incoming: list, here: set):
    clash = [d.name for d in incoming if d.name in here]
    if clash:
        them = "it" if len(clash) == 1 else "them"
        raise ArchiveError(f"{archive.path} already has {', '.join(clash)}: destroy {them} there first "
                           "(`strata datasets destroy`), or import into another archive with --archive")


@dataclass(frozen=True)
class Source:
    """An archive file to import, read and checked: its datasets, the worksheets that go
    with them (rows) and those left out (names)."""
    path: str
    datasets: list
    sheets: list
    left: list


def read_source(src: str) -> Source:
    """The archive file src, read and verified without opening any other archive;
    ArchiveError when it is missing, no archive, or damaged."""
    if not os.path.exists(src):
        raise ArchiveError(f"{src}: no such file")
    with Archive.open(src, readonly=True) as source:
        incoming = source.datasets()
        with source.guard():
            sheets, left = worksheets.carried(worksheets.rows(source.conn), incoming, {d.id for d in incoming})
    report = verify.check(src)
    if report.problems:
        more = f"; and {len(report.problems) - 1} more" if len(report.problems) > 1 else ""
        raise ArchiveError(f"{src}: not imported, it is damaged ({report.problems[0]}{more}); "
                           f"`strata datasets verify {src}` names the damage, `--salvage OUT` copies out what is "
                           "readable")
    return Source(src, incoming, sheets, left)


def import_from(archive: Archive, src, say=None) -> list:
    """Copy every dataset of the archive file src (a path, or its Source from read_source)
    into archive (suspended), with the worksheets that show only them; returns the
    datasets' names."""
    say = say or _stderr("import")
    source = src if isinstance(src, Source) else read_source(src)
    src, incoming, sheets, left = source.path, source.datasets, source.sheets, source.left
    if extract.same_file(src, archive.path):
        raise ArchiveError(f"{src} is the archive it would be imported into; nothing to import")
    _refuse_clash(archive, incoming, {x.name for x in archive.datasets()})
    with archive.guard():
        extract.attach(archive.conn, src)
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
                if extract.has_spans(c):
                    c.execute("INSERT INTO spans SELECT ?, t, seconds, cause FROM src.spans WHERE dataset = ?",
                              (new, d.id))
                extract.copy_pending(c, f"dataset = {int(d.id)}", str(int(new)))
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
