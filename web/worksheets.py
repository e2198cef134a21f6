"""Named worksheets kept in the archive: a small table `worksheets` (name, the page's
state as JSON, when saved; datasets/worksheets.py holds the table and the rule for a
name), created on the first save. It is an additive change to the archive's schema:
readers that do not know it ignore it."""
import json
import os
import time

from strata.datasets import schema
from strata.datasets.worksheets import TABLE, check_name
from strata.datasets.errors import ArchiveError

MAX_STATE = 16 * 1024


def save(path: str, name: str, state: dict):
    name = check_name(name)
    text = json.dumps(state, separators=(",", ":"))
    if len(text) > MAX_STATE:
        raise ArchiveError(f"a worksheet's state is at most {MAX_STATE} bytes")
    conn = schema.connect(path, readonly=False)
    try:
        with conn:
            conn.execute(TABLE)
            conn.execute("INSERT OR REPLACE INTO worksheets(name, state, saved) VALUES (?, ?, ?)",
                         (name, text, int(time.time())))
    finally:
        conn.close()


def _rows(path: str, sql: str, args=()) -> list:
    conn = schema.connect(path, readonly=True)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'worksheets'").fetchone():
            return []
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def names(path: str) -> list:
    return [{"name": n, "saved": t} for n, t in _rows(path, "SELECT name, saved FROM worksheets ORDER BY name")]


def load(path: str, name: str) -> dict:
    """The state saved as `name`; ArchiveError naming the saved ones when there is none (and the
    archive by its file name: a page's user is not told where the server keeps it)."""
    rows = _rows(path, "SELECT state FROM worksheets WHERE name = ?", (check_name(name),))
    if not rows:
        have = ", ".join(w["name"] for w in names(path)) or "none"
        raise ArchiveError(f"no worksheet {name!r} in {os.path.basename(path)}; saved ones: {have}")
    return json.loads(rows[0][0])
