"""Vectorised LEB128 varints: unsigned 64-bit integers, 7 bits per byte, low first.

The archive stores every record as one varint stream, so a whole range of
records decodes in one numpy pass (decode) and a whole batch of rows encodes in
one pass (encode). Decoding checks bounds: a stream that ends mid-number or
holds a number wider than 64 bits raises CorruptStream.
"""
import numpy as np

MAX_BYTES = 10  # ceil(64 / 7)


class CorruptStream(ValueError):
    """Bytes that are not a well-formed varint stream."""


def lengths(values: np.ndarray) -> np.ndarray:
    """Bytes each value takes (1..10)."""
    v = np.asarray(values, dtype=np.uint64)
    n = np.ones(v.shape, dtype=np.int64)
    for k in range(1, MAX_BYTES):
        n += v >= np.uint64(1 << (7 * k))
    return n


def encode(values: np.ndarray) -> bytes:
    """The varint bytes of a uint64 array, concatenated."""
    v = np.asarray(values, dtype=np.uint64).ravel()
    if v.size == 0:
        return b""
    n = lengths(v)
    ends = np.cumsum(n)
    starts = ends - n
    out = np.empty(int(ends[-1]), dtype=np.uint8)
    for k in range(int(n.max())):
        has = n > k
        more = (n[has] > k + 1).astype(np.uint8) << np.uint8(7)
        out[starts[has] + k] = ((v[has] >> np.uint64(7 * k)) & np.uint64(0x7F)).astype(np.uint8) | more
    return out.tobytes()


def decode(data) -> np.ndarray:
    """The uint64 values of a varint stream (bytes, or a uint8 array)."""
    return decode_with_ends(data)[0]


def decode_with_ends(data) -> tuple:
    """(values, ends): the uint64 values of a varint stream and the byte index where each
    ends. Most numbers in an archive record are one byte, so the pass over every number
    takes its last byte (the whole value when alone); only numbers with continuation
    bytes, found from those bytes, are assembled byte by byte."""
    b = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data
    if b.size == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    if b[-1] >= 0x80:
        raise CorruptStream("varint stream ends inside a number")
    ends = np.flatnonzero(b < 0x80)
    values = b[ends].astype(np.uint64)
    if ends.size == b.size:
        return values, ends
    widths = np.diff(ends, prepend=-1)
    wide = np.flatnonzero(widths > 1)                      # numbers with continuation bytes
    widths = widths[wide]
    if widths.max() > MAX_BYTES or np.any((widths == MAX_BYTES) & (b[ends[wide]] > 1)):
        raise CorruptStream("varint wider than 64 bits")
    starts = ends[wide] - widths + 1
    v = np.zeros(len(wide), dtype=np.uint64)
    for k in range(int(widths.max())):
        has = widths > k
        v[has] |= (b[starts[has] + k] & np.uint8(0x7F)).astype(np.uint64) << np.uint64(7 * k)
    values[wide] = v
    return values, ends


def numbers_before(ends: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """For byte offsets into a stream (ends from decode_with_ends), how many whole numbers
    lie before each."""
    return np.searchsorted(ends, offsets, side="left")
