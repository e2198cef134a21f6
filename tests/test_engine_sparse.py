"""Sparse files over raw ONC RPC against the real engine: memory follows the
records written, never the offset a client chose; the maximum file size
(16 TiB) is enforced with NFS3ERR_FBIG for WRITE and for SETATTR growth; a
sparse file survives a restart."""
import struct

import pytest

from engine_util import (NFS_PROG, Engine, RpcClient, create, engine, mkpool, read, rss_bytes,  # noqa: F401
                         write_status, xdr_opaque)

FBIG = 27
MAX_FILE_SIZE = 1 << 44
RSS_BUDGET = 64 << 20


def setattr_size(c, fh, size):
    sattr = struct.pack(">IIIIQII", 0, 0, 0, 1, size, 0, 0)
    return c.call(NFS_PROG, 2, xdr_opaque(fh) + sattr + struct.pack(">I", 0)).u32()


def getattr_size(c, fh):
    r = c.call(NFS_PROG, 1, xdr_opaque(fh))
    assert r.u32() == 0
    return r.fattr()["size"]


def commit(c, fh):
    return c.call(NFS_PROG, 21, xdr_opaque(fh) + struct.pack(">QI", 0, 0)).u32()


@pytest.fixture(params=["4k", "128k"])
def engine_rs(request, tmp_path):
    """An engine whose export has records of the given size."""
    eng = Engine(tmp_path, mkpool(tmp_path, nvdevs=1, size="64M"),
                 exports=[f"data:mode=1777,recordsize={request.param}"]).start()
    yield eng
    assert eng.stop() == 0


def test_one_byte_writes_at_huge_offsets_cost_no_memory(engine_rs):
    engine = engine_rs
    c = RpcClient(engine.port)
    root = c.mount("/data")
    _, f = create(c, root, "sparse")
    rss0 = rss_bytes(engine.proc.pid)
    assert write_status(c, f, 1 << 40, b"A") == 0
    assert write_status(c, f, (1 << 44) - 1, b"B") == 0  # the last byte a file may hold
    assert write_status(c, f, (1 << 63) - 1, b"C") == FBIG
    assert write_status(c, f, MAX_FILE_SIZE, b"D") == FBIG
    assert write_status(c, f, MAX_FILE_SIZE - 2, b"EFG") == FBIG  # ends one past the limit
    assert commit(c, f) == 0  # synced: the block pointers are in the metadata
    assert getattr_size(c, f) == MAX_FILE_SIZE
    assert read(c, f, 1 << 40, 1) == (b"A", 0)
    assert read(c, f, (1 << 40) - 4096, 4096) == (b"\0" * 4096, 0)  # a hole reads as zeros
    assert read(c, f, MAX_FILE_SIZE - 1, 100) == (b"B", 1)
    grown = rss_bytes(engine.proc.pid) - rss0
    assert grown < RSS_BUDGET, f"RSS grew {grown >> 20} MiB"
    c.close()


def test_setattr_growth_past_the_limit_is_fbig(engine):
    c = RpcClient(engine.port)
    root = c.mount("/data")
    _, f = create(c, root, "grown")
    rss0 = rss_bytes(engine.proc.pid)
    assert setattr_size(c, f, MAX_FILE_SIZE + 1) == FBIG
    assert setattr_size(c, f, (1 << 64) - 1) == FBIG
    assert getattr_size(c, f) == 0
    assert setattr_size(c, f, MAX_FILE_SIZE) == 0
    assert read(c, f, MAX_FILE_SIZE - 8, 8) == (b"\0" * 8, 1)
    assert setattr_size(c, f, 10) == 0
    assert rss_bytes(engine.proc.pid) - rss0 < RSS_BUDGET
    r = c.call(NFS_PROG, 19, xdr_opaque(root))  # FSINFO reports the limit
    assert r.u32() == 0
    r.post_op_attr()
    r.p += 28
    assert r.u64() == MAX_FILE_SIZE
    c.close()


def test_sparse_file_survives_a_restart(engine):
    c = RpcClient(engine.port)
    root = c.mount("/data")
    _, f = create(c, root, "far")
    for off in (0, 1 << 30, 1 << 40):
        assert write_status(c, f, off, b"rec@%d" % off, stable=2) == 0
    assert setattr_size(c, f, (1 << 40) + 3) == 0  # cuts the last record short
    c.close()
    assert engine.stop() == 0
    engine.start()
    rss0 = rss_bytes(engine.proc.pid)
    c = RpcClient(engine.port)
    c.mount("/data")
    assert read(c, f, 0, 6) == (b"rec@0\0", 0)
    assert read(c, f, 1 << 30, 14) == (b"rec@1073741824", 0)
    assert read(c, f, 1 << 40, 100) == (b"rec", 1)
    assert rss_bytes(engine.proc.pid) - rss0 < RSS_BUDGET
    c.close()
