"""File handles are authenticated (a MAC keyed by the pool's secret, kept in
the pool labels; random generations): handles built from a guessed object
id, with a byte flipped, or from another pool are refused with BADHANDLE or
STALE and never give data; real handles survive a restart."""
import struct

from engine_util import (NFS_PROG, Engine, RpcClient, create, engine, lookup, mkpool, read,  # noqa: F401
                         write, xdr_opaque)

BADHANDLE, STALE = 10001, 70
REFUSED = (BADHANDLE, STALE)
SECRET = b"top secret\n"


def getattr_status(c, fh):
    return c.call(NFS_PROG, 1, xdr_opaque(fh)).u32()


def read_status(c, fh):
    r = c.call(NFS_PROG, 6, xdr_opaque(fh) + struct.pack(">QI", 0, 4096))
    st = r.u32()
    if st == 0:
        r.post_op_attr()
        r.u32(), r.u32()
        assert SECRET not in r.opaque()
    return st


def fields(fh):
    """(magic, dataset id, object id, generation) of the engine's 32-byte handle."""
    assert len(fh) == 32
    return struct.unpack(">IIQQ", fh[:24])


def test_forged_and_altered_handles_are_refused(engine):
    c = RpcClient(engine.port)
    root = c.mount("/data")
    _, f = create(c, root, "secret")
    write(c, f, 0, SECRET, 2)
    magic, dsid, objid, gen = fields(f)
    assert gen != objid  # generations are random, not the object id
    _, g = create(c, root, "other")
    assert fields(g)[3] != gen + 1
    # guessed: the right magic, dataset and object id, generation = id (the old scheme)
    for guess_gen in (objid, gen + 1, 0):
        guessed = struct.pack(">IIQQ", magic, dsid, objid, guess_gen) + f[24:]
        assert getattr_status(c, guessed) in REFUSED
        assert read_status(c, guessed) in REFUSED
    # a real handle with its MAC, re-pointed at a neighbour object
    assert read_status(c, struct.pack(">IIQQ", magic, dsid, objid + 1, gen) + f[24:]) in REFUSED
    # every single flipped byte
    for i in range(len(f)):
        flipped = f[:i] + bytes([f[i] ^ 0x01]) + f[i + 1:]
        assert read_status(c, flipped) in REFUSED, f"byte {i} flipped"
    # cut short or padded
    assert getattr_status(c, f[:24]) == BADHANDLE
    assert getattr_status(c, f + b"\0" * 4) == BADHANDLE
    assert read(c, f, 0, 100) == (SECRET, 1)  # the real one still works
    c.close()


def test_handle_from_another_pool_is_refused(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    ea = Engine(a, mkpool(a, nvdevs=1, size="64M")).start()
    eb = Engine(b, mkpool(b, nvdevs=1, size="64M")).start()
    try:
        ca, cb = RpcClient(ea.port), RpcClient(eb.port)
        ra, rb = ca.mount("/data"), cb.mount("/data")
        _, fa = create(ca, ra, "secret")
        write(ca, fa, 0, SECRET, 2)
        _, fb = create(cb, rb, "secret")  # the same object id and dataset in pool b
        assert fields(fa)[1:3] == fields(fb)[1:3]
        assert getattr_status(cb, fa) == BADHANDLE
        assert read_status(cb, fa) == BADHANDLE
        assert getattr_status(cb, ra) == BADHANDLE  # even the export root
        ca.close()
        cb.close()
    finally:
        assert ea.stop() == 0
        assert eb.stop() == 0


def test_handles_survive_a_restart(engine):
    c = RpcClient(engine.port)
    root = c.mount("/data")
    _, f = create(c, root, "kept")
    write(c, f, 0, SECRET, 2)
    c.close()
    assert engine.stop() == 0
    engine.start()
    c = RpcClient(engine.port)
    assert c.mount("/data") == root
    assert lookup(c, root, "kept") == (0, f)
    assert read(c, f, 0, 100) == (SECRET, 1)
    c.close()


def test_pool_without_a_secret_gets_one_on_first_serve(tmp_path):
    """A pool labelled before labels held a secret (simulated by zeroing the
    label's secret and its checksum: bytes 112..160 of each vdev, the layout
    in engine/pool.c) keeps its files; serve creates a secret, says so, and
    handles issued before are refused."""
    pool = mkpool(tmp_path, nvdevs=2, size="64M")
    eng = Engine(tmp_path, pool).start()
    c = RpcClient(eng.port)
    root = c.mount("/data")
    _, f = create(c, root, "old")
    write(c, f, 0, SECRET, 2)
    c.close()
    assert eng.stop() == 0
    for vdev in pool.split(","):
        with open(vdev, "r+b") as v:
            v.seek(112)
            v.write(b"\0" * 48)
    eng.start()
    assert "created the pool's handle secret" in (tmp_path / "engine.err").read_text()
    c = RpcClient(eng.port)
    root2 = c.mount("/data")
    assert getattr_status(c, f) in REFUSED and getattr_status(c, root) in REFUSED
    st, f2 = lookup(c, root2, "old")
    assert st == 0 and read(c, f2, 0, 100) == (SECRET, 1)
    c.close()
    assert eng.stop() == 0
    eng.start()  # the new secret and generations are kept
    c = RpcClient(eng.port)
    assert c.mount("/data") == root2
    assert read(c, f2, 0, 100) == (SECRET, 1)
    c.close()
    assert eng.stop() == 0
    assert (tmp_path / "engine.err").read_text().count("created the pool's handle secret") == 1
