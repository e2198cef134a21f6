"""The compact record encoding of the archive: one varint stream per (dataset, level, time).

Records hold sparse cells (breakdown key index, llhist bucket, count). Each
record is a varint stream (datasets/varint.py):

  heatmap: nk, key[nk], nbuckets[nk], bucket_delta[total], count[total]
           (buckets ascending within a key; each delta is from the key's
           previous bucket, the first from 0)
  counter: nk, key[nk], count[nk]
  gauge:   nk, key[nk], samples[nk], float64-bits-of-sum[nk]

Rollups use the same encoding with sums, so a minute record is exactly the
cell-wise sum of its seconds (a gauge's mean is sum / samples). Many records
encode and decode in one vectorised pass; `Cells.row` says which record a cell
belongs to. decode_groups, the fast path, leaves cells grouped by (record, key),
as stored, so that a reader sums them without spreading the record and key onto
every cell. Malformed records raise CorruptRecord.
"""
from dataclasses import dataclass

import numpy as np

from . import llhist, varint

KINDS = ("heatmap", "counter", "gauge")
MAX_KEY_INDEX = 2**31 - 1   # interned breakdown keys are numbered from 0 per dataset


class CorruptRecord(ValueError):
    """A stored record that does not decode."""


@dataclass
class Cells:
    """Sparse contents of many records: one entry per (row, key, bucket)."""
    row: np.ndarray      # int64 record (or column) index
    key: np.ndarray      # int64 interned key index
    bucket: np.ndarray   # int64 llhist bucket; 0 for counters and gauges
    count: np.ndarray    # uint64 events (heatmap, counter) or samples (gauge)
    total: np.ndarray    # float64 sum of samples (gauge); zeros otherwise

    @staticmethod
    def empty() -> "Cells":
        z = np.zeros(0, dtype=np.int64)
        return Cells(z, z, z, np.zeros(0, np.uint64), np.zeros(0, np.float64))

    def __len__(self):
        return len(self.row)

    @staticmethod
    def concat(parts) -> "Cells":
        parts = [p for p in parts if len(p)]
        if not parts:
            return Cells.empty()
        return Cells(*(np.concatenate([getattr(p, f) for p in parts])
                       for f in ("row", "key", "bucket", "count", "total")))


def combine(cells: Cells, rows: np.ndarray = None) -> Cells:
    """Sum cells that share (row, key, bucket), after mapping rows (optional); sorted."""
    row = cells.row if rows is None else np.asarray(rows, dtype=np.int64)
    if len(cells) == 0:
        return Cells(row, cells.key, cells.bucket, cells.count, cells.total)
    order = np.lexsort((cells.bucket, cells.key, row))
    r, k, b = row[order], cells.key[order], cells.bucket[order]
    new = np.ones(len(r), dtype=bool)
    new[1:] = (r[1:] != r[:-1]) | (k[1:] != k[:-1]) | (b[1:] != b[:-1])
    first = np.flatnonzero(new)
    return Cells(r[first], k[first], b[first],
                 np.add.reduceat(cells.count[order], first),
                 np.add.reduceat(cells.total[order], first))


def _excl_cumsum(n: np.ndarray) -> np.ndarray:
    out = np.zeros(len(n), dtype=np.int64)
    np.cumsum(n[:-1], out=out[1:])
    return out


def encode(kind: str, cells: Cells, nrows: int) -> list:
    """One record (bytes) per row 0..nrows-1 from cells sorted by (row, key, bucket)."""
    row, key = cells.row, cells.key
    if kind == "heatmap":
        grp = np.ones(len(row), dtype=bool)
        grp[1:] = (row[1:] != row[:-1]) | (key[1:] != key[:-1])
        gfirst = np.flatnonzero(grp)
    else:
        gfirst = np.arange(len(row))
    g_row, g_key = row[gfirst], key[gfirst]
    nk = np.bincount(g_row, minlength=nrows).astype(np.int64)
    tot = np.bincount(row, minlength=nrows).astype(np.int64)
    per_key = {"heatmap": 2, "counter": 2, "gauge": 3}[kind]
    width = 1 + per_key * nk + (2 * tot if kind == "heatmap" else 0)
    start = _excl_cumsum(width)
    ints = np.zeros(int(width.sum()), dtype=np.uint64)
    ints[start] = nk
    j = np.arange(len(gfirst)) - _excl_cumsum(nk)[g_row]
    gbase = start[g_row] + 1 + j
    ints[gbase] = g_key
    if kind == "heatmap":
        nb = np.diff(np.append(gfirst, len(row)))
        ints[gbase + nk[g_row]] = nb
        i = np.arange(len(row)) - _excl_cumsum(tot)[row]
        delta = cells.bucket.copy()
        inner = ~grp
        delta[1:][inner[1:]] -= cells.bucket[:-1][inner[1:]]
        cbase = start[row] + 1 + 2 * nk[row] + i
        ints[cbase] = delta
        ints[cbase + tot[row]] = cells.count
    elif kind == "counter":
        ints[gbase + nk[g_row]] = cells.count
    else:
        ints[gbase + nk[g_row]] = cells.count
        ints[gbase + 2 * nk[g_row]] = cells.total.astype(np.float64).view(np.uint64)
    blob = varint.encode(ints)
    byte_end = np.cumsum(varint.lengths(ints)) if len(ints) else np.zeros(0, np.int64)
    bounds = np.concatenate(([0], byte_end[start + width - 1]))
    return [blob[bounds[r]:bounds[r + 1]] for r in range(nrows)]


@dataclass
class Groups:
    """Decoded records as (record, key) groups, each with its cells in order: what a reader
    sums into columns without first spreading the record and key onto every cell."""
    row: np.ndarray      # int64 record index of each group
    key: np.ndarray      # int64 interned key index of each group
    ncells: np.ndarray   # int64 cells of each group (a heat map's buckets; 1 otherwise)
    bucket: np.ndarray   # int64 per cell, group after group
    count: np.ndarray    # uint64 per cell
    total: np.ndarray    # float64 per cell (gauge); zeros otherwise

    def cells(self) -> Cells:
        return Cells(np.repeat(self.row, self.ncells), np.repeat(self.key, self.ncells), self.bucket,
                     self.count, self.total)

    def select(self, keep: np.ndarray) -> "Groups":
        """The groups where keep (bool, one per group) holds, with their cells."""
        per_cell = np.repeat(keep, self.ncells)
        return Groups(self.row[keep], self.key[keep], self.ncells[keep], self.bucket[per_cell],
                      self.count[per_cell], self.total[per_cell])

    @staticmethod
    def of_cells(cells: Cells) -> "Groups":
        """One group per cell."""
        return Groups(cells.row, cells.key, np.ones(len(cells), np.int64), cells.bucket, cells.count,
                      cells.total)


def decode(kind: str, records: list) -> Cells:
    """Cells of many records; cell.row is the record's position in `records`."""
    return decode_groups(kind, records).cells()


def decode_groups(kind: str, records: list) -> Groups:
    """Groups of many records (the fast path of decode); group.row is the record's position
    in `records`. Every record is checked whole: a malformed one raises CorruptRecord."""
    if not records:
        return Groups.of_cells(Cells.empty())
    raw = np.frombuffer(b"".join(records), dtype=np.uint8)
    try:
        ints, ends = varint.decode_with_ends(raw)
    except varint.CorruptStream as e:
        raise CorruptRecord(str(e)) from None
    sizes = np.fromiter((len(r) for r in records), dtype=np.int64, count=len(records))
    if np.any(sizes == 0) or np.any(raw[np.cumsum(sizes) - 1] >= 0x80):
        raise CorruptRecord("record ends inside a number")
    off = varint.numbers_before(ends, np.concatenate(([0], np.cumsum(sizes))))
    start, avail = off[:-1], np.diff(off)
    raw_nk = ints[start] if len(ints) else np.zeros(len(records), np.uint64)
    per_key = {"heatmap": 2, "counter": 2, "gauge": 3}[kind]
    if np.any(raw_nk > (avail // per_key).astype(np.uint64)):   # before any arithmetic can wrap
        raise CorruptRecord("record shorter than its key count")
    nk = raw_nk.astype(np.int64)
    if np.any(1 + per_key * nk > avail):
        raise CorruptRecord("record shorter than its key count")
    g_row = np.repeat(np.arange(len(records)), nk)
    j = np.arange(len(g_row)) - _excl_cumsum(nk)[g_row]
    gbase = start[g_row] + 1 + j
    g_key = ints[gbase]
    if np.any(g_key > MAX_KEY_INDEX):
        raise CorruptRecord("breakdown key index out of range")
    g_key = g_key.astype(np.int64)
    if kind == "heatmap":
        nb = ints[gbase + nk[g_row]]
        if np.any(nb > llhist.NBUCKETS):
            raise CorruptRecord("more buckets than llhist has")
        nb = nb.astype(np.int64)
        tot = np.bincount(g_row, weights=nb, minlength=len(records)).astype(np.int64)
        if np.any(1 + 2 * nk + 2 * tot != avail):
            raise CorruptRecord("record length does not match its bucket counts")
        # the stream is, record after record, a header (1 + 2 nk numbers), tot bucket deltas
        # and tot counts: one label per number picks the deltas and the counts out
        part = np.repeat(np.tile(np.array([0, 1, 2], np.int8), len(records)),
                         np.stack([1 + 2 * nk, tot, tot], axis=1).ravel())
        delta, count = ints[part == 1], ints[part == 2]
        if len(delta) and delta.max() >= llhist.NBUCKETS:   # checked unsigned: a huge delta must not wrap
            raise CorruptRecord("bucket out of range")
        bucket = np.cumsum(delta, dtype=np.int64)
        gfirst = _excl_cumsum(nb)
        base = np.zeros(len(g_row), dtype=np.int64)
        has = nb > 0
        base[has] = bucket[gfirst[has]] - delta[gfirst[has]].astype(np.int64)
        bucket -= np.repeat(base, nb)
        if len(bucket) and bucket.max() >= llhist.NBUCKETS:
            raise CorruptRecord("bucket out of range")
        return Groups(g_row, g_key, nb, bucket, count, np.zeros(len(count), np.float64))
    if np.any(1 + per_key * nk != avail):
        raise CorruptRecord("record length does not match its key count")
    count = ints[gbase + nk[g_row]]
    total = (ints[gbase + 2 * nk[g_row]].view(np.float64) if kind == "gauge"
             else np.zeros(len(g_row), np.float64))
    return Groups(g_row, g_key, np.ones(len(g_row), np.int64), np.zeros(len(g_row), np.int64), count, total)
