"""The record encoding (varints, sparse cells), dataset names and retention parsing."""
import numpy as np
import pytest

from strata.datasets import codec, names, varint
from strata.datasets.catalogue import by_name
from strata.datasets.errors import ArchiveError
from strata.datasets.retention import Retention, format_duration, parse_duration, parse_keep
from strata.views import times

STATS = by_name()


def test_varint_roundtrip_edges():
    v = np.array([0, 1, 127, 128, 16383, 16384, 2**32, 2**63, 2**64 - 1], dtype=np.uint64)
    enc = varint.encode(v)
    assert len(enc) == int(varint.lengths(v).sum())
    assert np.array_equal(varint.decode(enc), v)


@pytest.mark.parametrize("bad", [b"\x80", b"\xff" * 11 + b"\x01", b"\xff" * 9 + b"\x02"])
def test_varint_rejects_malformed(bad):
    with pytest.raises(varint.CorruptStream):
        varint.decode(bad)


def slow_varints(data: bytes) -> list:
    """A byte-at-a-time LEB128 reader: the reference the vectorised decoder must agree with."""
    out, value, shift = [], 0, 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            out.append(value)
            value, shift = 0, 0
    return out


def test_varint_decode_agrees_with_a_byte_by_byte_reader():
    rng = np.random.default_rng(3)
    for _ in range(200):
        widths = rng.integers(1, 65, rng.integers(1, 300))    # values of 1..64 bits, mixed
        v = np.array([int(rng.integers(0, 2**63)) >> (63 - w) if w < 64 else 2**64 - 1 - int(rng.integers(0, 99))
                      for w in widths], dtype=np.uint64)
        enc = varint.encode(v)
        values, ends = varint.decode_with_ends(np.frombuffer(enc, np.uint8))
        assert values.tolist() == slow_varints(enc) == v.tolist()
        assert (ends == np.cumsum(varint.lengths(v)) - 1).all()


def random_cells(rng, rows, kind):
    r, k, b, c = [], [], [], []
    for row in range(rows):
        for key in rng.choice(30, rng.integers(0, 6), replace=False):
            bs = np.sort(rng.choice(1639, rng.integers(1, 12), replace=False)) if kind == "heatmap" else [0]
            for x in bs:
                r.append(row), k.append(key), b.append(x), c.append(int(rng.integers(1, 2**62)))
    count = np.array(c, dtype=np.uint64)
    return codec.combine(codec.Cells(np.array(r, np.int64), np.array(k, np.int64), np.array(b, np.int64),
                                     count, count.astype(np.float64) * 0.5 if kind == "gauge" else
                                     np.zeros(len(c))))


@pytest.mark.parametrize("kind", codec.KINDS)
def test_records_roundtrip(kind):
    cells = random_cells(np.random.default_rng(7), 200, kind)
    records = codec.encode(kind, cells, 202)
    assert len(records) == 202 and records[-1] == b"\x00"  # trailing empty rows still get a record
    back = codec.decode(kind, records)
    for f in ("row", "key", "bucket", "count", "total"):
        assert np.array_equal(getattr(back, f), getattr(cells, f)), f


def test_combine_sums_exactly():
    c = codec.Cells(np.array([0, 0, 1, 0]), np.array([1, 1, 1, 2]), np.array([5, 5, 5, 5]),
                    np.array([2**63, 2**62, 7, 1], np.uint64), np.zeros(4))
    out = codec.combine(c, np.zeros(4, np.int64))
    assert out.key.tolist() == [1, 2] and out.count.tolist() == [2**63 + 2**62 + 7, 1]


@pytest.mark.parametrize("record", [b"\x05", b"\x01\x00\x01\x00", b"\x01\x00\x01\xf0\x0d\x01",
                                    b"\x01\x00\x01\x00\x80",
                                    b"\x01" + b"\xff" * 9 + b"\x01" + b"\x01\x00\x01",  # key index 2**64-1
                                    varint.encode(np.array([1, 0, 2, 5, 2**64 - 3, 7, 8], np.uint64)),
                                    varint.encode(np.array([1, 0, 1, 2**64 - 1, 9], np.uint64)),
                                    varint.encode(np.array([2**62, 0], np.uint64))])
def test_corrupt_heatmap_records_are_refused(record):
    with pytest.raises(codec.CorruptRecord):
        codec.decode("heatmap", [record])


@pytest.mark.parametrize("kind", ["counter", "gauge"])
def test_a_huge_key_count_is_refused(kind):
    with pytest.raises(codec.CorruptRecord):
        codec.decode(kind, [varint.encode(np.array([2**62, 0], np.uint64))])


def test_name_canonical_and_roundtrip():
    n = names.parse("nfs.ops[op=read][client=10.0.0.3][file]", STATS)
    assert str(n) == "nfs.ops[client=10.0.0.3][op=read][file]"
    assert names.parse(str(n), STATS) == n
    assert str(names.parse("arc.accesses[hit/miss]", STATS)) == "arc.accesses[hit/miss]"
    assert names.parse("disk.latency", STATS).breakdown == ""


@pytest.mark.parametrize("text,needle", [
    ("nosuch.stat[op]", "valid statistics: arc.accesses"),
    ("nfs.ops[bogus]", "valid breakdowns: op, client, tier, file"),
    ("nfs.ops[device=vda]", "valid filters: op, client, tier, file"),
    ("arc.size[op]", "valid breakdowns: none"),
    ("nfs.ops[client][op=read]", "must come last"),
    ("nfs.ops[op=read][op=write]", "appears twice"),
    ("nfs.ops[op][op=read]", "must come last"),
    ("nfs.ops[op=a b]", "bad dataset name"),
    ("NFS", "bad dataset name"),
])
def test_bad_names_say_what_is_valid(text, needle):
    with pytest.raises(ArchiveError, match=None) as e:
        names.parse(text, STATS)
    assert needle in str(e.value)


def test_retention_parsing_and_order():
    assert parse_duration("7d") == 7 * 86400 and parse_duration("all") is None
    assert format_duration(172800) == "2d" and format_duration(None) == "all"
    r = parse_keep(["second=2d", "minute=30d"])
    assert r == Retention(2 * 86400, 30 * 86400, Retention().hour)  # hours keep their bounded default
    assert Retention().hour is not None
    assert parse_keep(["hour=all"]).hour is None
    with pytest.raises(ArchiveError, match="at least as long"):
        parse_keep(["second=all", "minute=1d"])
    with pytest.raises(ArchiveError, match="bad duration"):
        parse_duration("7 days")
    # one grammar for every command: compound, bare seconds, as `--last` reads them
    assert parse_duration("1h30m") == parse_duration("90m") == times.parse_duration("1h30m") == 5400
    assert parse_duration("2d 12h") == 60 * 3600 and parse_duration("90") == 90
    for bad in ("1h30", "h", "1x", "-5m", "1.5h"):
        with pytest.raises(ArchiveError, match="bad duration"):
            parse_duration(bad)


@pytest.mark.parametrize("kind", codec.KINDS)
def test_mangled_records_decode_or_are_refused(kind):
    """Fuzz: valid records with flipped, dropped and inserted bytes. decode() either refuses
    them with CorruptRecord or returns cells that are in range; nothing else escapes."""
    rng = np.random.default_rng(11)
    records = codec.encode(kind, random_cells(rng, 40, kind), 40)
    refused = 0
    for _ in range(1500):
        batch = list(records)
        i = int(rng.integers(0, len(batch)))
        rec = bytearray(batch[i])
        for _ in range(int(rng.integers(1, 4))):
            pos = int(rng.integers(0, len(rec) + 1))
            what = rng.integers(0, 4)
            if what == 3:             # a whole number, often far out of range
                big = int(rng.integers(0, 2**63)) << int(rng.integers(0, 2))
                rec[pos:pos] = varint.encode(np.array([big >> int(rng.integers(0, 63))], np.uint64))
            elif what == 0 and rec:
                rec[min(pos, len(rec) - 1)] ^= 1 << int(rng.integers(0, 8))
            elif what == 1 and rec:
                del rec[min(pos, len(rec) - 1)]
            else:
                rec.insert(pos, int(rng.integers(0, 256)))
        batch[i] = bytes(rec)
        try:
            cells = codec.decode(kind, batch)
        except codec.CorruptRecord:
            refused += 1
            continue
        assert ((cells.row >= 0) & (cells.row < len(batch))).all()
        assert ((cells.bucket >= 0) & (cells.bucket < 1639)).all() and (cells.key >= 0).all()
    assert refused > 100   # the checks do fire
