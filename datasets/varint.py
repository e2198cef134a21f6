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
    takes its last byte (the whole value when alone); only the numbers whose previous byte
    is a continuation byte are assembled further, byte by byte from their end, each pass
    over the fewer that are still wider."""
    b = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data
    if b.size == 0:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64)
    if b[-1] >= 0x80:
        raise CorruptStream("varint stream ends inside a number")
    more = b >= 0x80
    ends = np.flatnonzero(~more)
    values = b[ends].astype(np.uint64)
    cont = np.flatnonzero(more)                             # continuation bytes, in order
    if cont.size:
        # the last continuation byte of a number is followed by the number's last byte; that
        # number's index is its position in the stream less the continuation bytes before it
        closing = b[cont + 1] < 0x80
        last = cont[closing] + 1
        wide = last - 1 - np.flatnonzero(closing)
        top = b[last]
        v = (top.astype(np.uint64) << np.uint64(7)) | (b[last - 1] & np.uint8(0x7F))
        values[wide] = v                                    # right for the two-byte numbers
        pos = last - 2
        more = b[pos] >= 0x80      # (pos -1 reads b[-1], not a continuation byte: stops there)
        for width in range(3, MAX_BYTES + 1):               # the few wider, one byte further each pass
            if not more.any():
                break
            wide, v, pos, top = wide[more], v[more], pos[more], top[more]
            v <<= np.uint64(7)
            v |= b[pos] & np.uint8(0x7F)
            values[wide] = v
            pos -= 1
            more = b[pos] >= 0x80
            if width == MAX_BYTES and (more.any() or (top > 1).any()):
                raise CorruptStream("varint wider than 64 bits")
    return values, ends


def numbers_before(ends: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """For byte offsets into a stream (ends from decode_with_ends), how many whole numbers
    lie before each."""
    return np.searchsorted(ends, offsets, side="left")
