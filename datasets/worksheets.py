"""Worksheets as the archive keeps them: the table `strata web` saves named worksheets in
(web/worksheets.py reads and writes it), the rule for a name, which datasets a
worksheet shows, and carrying worksheets with their datasets into another archive
(`datasets archive` and `import`, datasets/transfer.py; `verify --salvage` copies them
through its checks). datasets/ARCHIVE.md, "Worksheets", states the rules.
"""
import itertools
import json

from . import derive, names
from .errors import ArchiveError

TABLE = """CREATE TABLE IF NOT EXISTS worksheets(
  name TEXT PRIMARY KEY, state TEXT NOT NULL, saved INTEGER NOT NULL) WITHOUT ROWID"""
MAX_NAME = 80
NOT_IN_NAME = "/\\\0\n"


def name_problem(name) -> str | None:
    """Why `name` is not a worksheet's name (None when it is one)."""
    if not isinstance(name, str) or not name.strip() or len(name.strip()) > MAX_NAME or \
            any(c in name for c in NOT_IN_NAME):
        return f"a worksheet name is 1 to {MAX_NAME} characters, without / or \\"
    return None


def check_name(name) -> str:
    """The name, stripped; ArchiveError when it is not a worksheet's."""
    problem = name_problem(str(name or ""))
    if problem:
        raise ArchiveError(problem)
    return str(name).strip()


def rows(conn, schema: str = "main") -> list:
    """(name, state, saved) of every worksheet in the database `schema` of conn, by name
    ([] when it has no worksheets table)."""
    if not conn.execute(f"SELECT 1 FROM {schema}.sqlite_schema WHERE type = 'table' AND name = 'worksheets'"
                        ).fetchone():
        return []
    return conn.execute(f"SELECT name, state, saved FROM {schema}.worksheets ORDER BY name").fetchall()


def shown(state: str, infos: list) -> set | None:
    """The ids of the datasets among `infos` that answer the views of a worksheet's state
    (JSON text) as `strata web` reads them (held, or derived: datasets/derive.py); None when
    it has no view, or a view that none of them answers."""
    try:
        views = json.loads(state).get("views")
    except (ValueError, AttributeError):
        return None
    if not isinstance(views, list) or not views:
        return None
    ids = set()
    for view in views:
        try:
            found = derive.candidates(infos, names.parse(str(view.get("name"))))
        except (ArchiveError, AttributeError):
            return None
        if not found:
            return None
        ids.add(found[0].info.id)
    return ids


def carried(sheets: list, infos: list, ids: set) -> tuple:
    """(rows carried, names left out): a worksheet is carried when it is whole (a name, a
    state as text, a time: what `verify` checks) and every view it shows is answered,
    among `infos` (the datasets of the archive it is in), by a dataset whose id is in
    `ids` (the datasets carried)."""
    out, left = [], []
    for row in sheets:
        name, state, saved = row
        whole = not name_problem(name) and isinstance(state, str) and isinstance(saved, int)
        showing = shown(state, infos) if whole else None
        (out if showing is not None and showing <= ids else left).append(row)
    return out, [r[0] for r in left]


def free_name(name: str, taken) -> str:
    """The first of 'name (2)', 'name (3)', ... not in `taken`, within MAX_NAME."""
    for n in itertools.count(2):
        suffix = f" ({n})"
        candidate = name[:MAX_NAME - len(suffix)] + suffix
        if candidate not in taken:
            return candidate


def insert(conn, sheets: list) -> list:
    """Store the worksheets `sheets` (rows) in conn's archive, keeping every one already
    there: one of the same name and state is left as it is, one of the same name and
    another state keeps its name and the incoming one is stored under free_name().
    Returns (name, name stored under) of each renamed."""
    if not sheets:
        return []
    conn.execute(TABLE)
    have = dict(conn.execute("SELECT name, state FROM main.worksheets"))
    renamed = []
    for name, state, saved in sheets:
        if have.get(name) == state:
            continue
        stored = free_name(name, have) if name in have else name
        if stored != name:
            renamed.append((name, stored))
        conn.execute("INSERT INTO main.worksheets (name, state, saved) VALUES (?, ?, ?)", (stored, state, saved))
        have[stored] = state
    return renamed
