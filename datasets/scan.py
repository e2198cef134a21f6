"""Reading the rows of a table of a damaged archive: every row SQLite can still reach.

A scan walks a table in the order of one integer column (the rowid, an id, a time)
and, where SQLite reports a damaged page ("database disk image is malformed", a
page past the end of a truncated file), seeks past it: it probes ever larger values
of the column until a seek succeeds, then narrows back to the first value that
reads, and goes on from there. The rows of the damaged leaf page are lost, nothing
else; a damaged interior page loses the rows under it. What was skipped is
reported as (after, before) bounds of the column.

    for row in rows(conn, "records", "rowid, dataset, step, t, data", "rowid", skipped.append): ...
"""
import sqlite3

DAMAGE = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_IOERR)
TOP = (1 << 63) - 1
RECOVERY_ROWS = 64   # rows read one at a time after a failure, before scanning on


def is_damage(e: Exception) -> bool:
    """Whether an SQLite error says the file's bytes are bad (not a request or a lock); a
    damaged row's header can also make SQLite ask for more memory than there is."""
    if isinstance(e, MemoryError):
        return True
    code = getattr(e, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in DAMAGE


def rows(conn, table: str, columns: str, order: str, skipped, where: str = "", args: tuple = ()):
    """Every readable row (`order`, then `columns`) of table, in `order`; skipped(after, before)
    for each run of rows lost to damage between two readable ones (None: the table's start
    or end). Cells of a damaged page that SQLite reads without noticing are yielded (the
    caller checks their contents); after a failure, a jump in `order` counts as skipped."""
    cond = (f"{where} AND " if where else "") + f"typeof({order}) = 'integer' AND "   # damage may store any type
    sql = f"SELECT {order}, {columns} FROM {table} WHERE {cond}{order} > ? ORDER BY {order}"
    start = last = -TOP - 1
    gap_from = stuck = None    # after a seek: the last row read before it, and where it resumed

    def lost(after, before):
        skipped(None if after == start else after, before)

    while True:
        try:
            for row in conn.execute(sql, (*args, last)):
                if row[0] <= last:          # a damaged page read out of order
                    break
                yield row
                last = row[0]
            else:
                return
        except (sqlite3.DatabaseError, MemoryError) as e:
            if not is_damage(e):
                raise
        # the module drops the row it read before a failing step, and a damaged page may be
        # read in part: go on one row at a time (LIMIT 1 never steps past its row) for a while
        for _ in range(RECOVERY_ROWS):
            try:
                row = conn.execute(sql + " LIMIT 1", (*args, last)).fetchone()
            except (sqlite3.DatabaseError, MemoryError) as e:
                if not is_damage(e):
                    raise
                break
            if row is None:
                if gap_from is not None:
                    lost(gap_from, None)
                return
            if row[0] <= last:
                break
            before = last if gap_from is None else gap_from
            if row[0] > before + 1:
                lost(before, row[0])
            gap_from = stuck = None
            yield row
            last = row[0]
        else:
            continue
        if gap_from is None:
            gap_from = last
        resume = _next_readable(conn, table, order, cond, args, last if stuck is None else stuck)
        if resume is None:
            lost(gap_from, None)
            return
        stuck, last = resume, resume - 1


def _first_at(conn, table, order, cond, args, value):
    """The first value of `order` at or after value; None past the end; raises on damage."""
    row = conn.execute(f"SELECT {order} FROM {table} WHERE {cond}{order} >= ? ORDER BY {order} LIMIT 1",
                       (*args, value)).fetchone()
    return TOP if row is None else row[0]


def _next_readable(conn, table, order, cond, args, after):
    """The smallest value v > after from which a seek reads (None if none does)."""
    def reads(v):
        try:
            _first_at(conn, table, order, cond, args, v)
            return True
        except (sqlite3.DatabaseError, MemoryError) as e:
            if not is_damage(e):
                raise
            return False

    lo, gap = after, 1          # lo: a value whose seek fails (or the start)
    while True:
        hi = min(lo + gap, TOP)
        if reads(hi):
            break
        if hi >= TOP:
            return None
        lo, gap = hi, gap * 2
    while hi - lo > 1:          # narrow: the first value whose seek reads
        mid = lo + (hi - lo) // 2
        if reads(mid):
            hi = mid
        else:
            lo = mid
    try:
        first = _first_at(conn, table, order, cond, args, hi)
    except sqlite3.DatabaseError:
        return None
    return None if first >= TOP else first
