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
    b = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data
    if b.size == 0:
        return np.zeros(0, dtype=np.uint64)
    last = b < 0x80
    if not last[-1]:
        raise CorruptStream("varint stream ends inside a number")
    ends = np.flatnonzero(last)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    widths = ends - starts + 1
    if widths.max() > MAX_BYTES or np.any((widths == MAX_BYTES) & (b[ends] > 1)):
        raise CorruptStream("varint wider than 64 bits")
    low = (b & 0x7F).astype(np.uint64)
    values = low[starts]
    for k in range(1, int(widths.max())):  # most numbers are one byte: later passes touch few
        wide = np.flatnonzero(widths > k)
        values[wide] |= low[starts[wide] + k] << np.uint64(7 * k)
    return values


def terminators_before(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """For byte offsets into a stream, how many whole numbers lie before each."""
    done = np.concatenate(([0], np.cumsum(data < 0x80)))
    return done[offsets]
