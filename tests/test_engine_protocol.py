"""NFSv3 procedures over a raw ONC-RPC client: namespace operations, stable and
unstable writes with COMMIT verifiers across a restart, stale handles, MKNOD's
honest NOTSUPP and the export boundary."""
import struct

from engine_util import (NFS_PROG, MOUNT_PROG, NO_SATTR, RpcClient, create, diropargs, engine,  # noqa: F401
                         lookup, read, write, xdr_opaque)

def test_namespace_operations(engine):
    c = RpcClient(engine.port)
    root = c.mount("/data")
    st, f = create(c, root, "a")
    assert st == 0
    assert create(c, root, "a")[0] == 17  # GUARDED on an existing name: EXIST
    assert lookup(c, root, "..")[1] == root  # never above the export root
    r = c.call(NFS_PROG, 9, diropargs(root, "d") + NO_SATTR)  # MKDIR
    assert r.u32() == 0 and r.u32() == 1
    d = r.opaque()
    r = c.call(NFS_PROG, 10, diropargs(d, "s") + NO_SATTR + xdr_opaque(b"../a"))  # SYMLINK
    assert r.u32() == 0 and r.u32() == 1
    s = r.opaque()
    r = c.call(NFS_PROG, 5, xdr_opaque(s))  # READLINK
    assert r.u32() == 0 and r.post_op_attr()["type"] == 5 and r.opaque() == b"../a"
    r = c.call(NFS_PROG, 15, xdr_opaque(f) + diropargs(d, "hard"))  # LINK
    assert r.u32() == 0 and r.post_op_attr()["nlink"] == 2
    r = c.call(NFS_PROG, 14, diropargs(root, "a") + diropargs(d, "moved"))  # RENAME
    assert r.u32() == 0
    assert lookup(c, root, "a")[0] == 2 and lookup(c, d, "moved")[1] == f
    r = c.call(NFS_PROG, 13, diropargs(root, "d"))  # RMDIR of a non-empty dir
    assert r.u32() == 66
    r = c.call(NFS_PROG, 11, diropargs(root, "fifo") + struct.pack(">I", 7) + NO_SATTR)  # MKNOD
    assert r.u32() == 10004  # NOTSUPP
    r = c.call(NFS_PROG, 17, xdr_opaque(d) + struct.pack(">Q", 0) + b"\0" * 8 + struct.pack(">II", 4096, 65536))
    assert r.u32() == 0
    r.post_op_attr()
    r.p += 8
    names = []
    while r.u32():
        r.u64()
        names.append(r.opaque().decode())
        r.u64()
        r.post_op_attr()
        if r.u32():
            r.opaque()
    assert sorted(names) == [".", "..", "hard", "moved", "s"]
    for name in ("hard", "moved", "s"):
        assert c.call(NFS_PROG, 12, diropargs(d, name)).u32() == 0  # REMOVE
    assert c.call(NFS_PROG, 1, xdr_opaque(f)).u32() == 70  # GETATTR of a removed file: STALE
    assert c.call(NFS_PROG, 13, diropargs(root, "d")).u32() == 0
    for proc in (18, 19, 20):  # FSSTAT, FSINFO, PATHCONF
        assert c.call(NFS_PROG, proc, xdr_opaque(root)).u32() == 0
    r = c.call(MOUNT_PROG, 5)  # EXPORT
    assert r.u32() == 1 and r.opaque() == b"/data"
    c.close()


def test_unstable_write_commit_and_verifier_changes_on_restart(engine):
    c = RpcClient(engine.port)
    root = c.mount("/data")
    _, f = create(c, root, "u")
    count, committed, verf = write(c, f, 0, b"x" * 5000, 0)
    assert (count, committed) == (5000, 0)
    assert read(c, f, 0, 10000) == (b"x" * 5000, 1)  # served from dirty data
    r = c.call(NFS_PROG, 21, xdr_opaque(f) + struct.pack(">QI", 0, 0))  # COMMIT
    assert r.u32() == 0
    r.wcc()
    assert r.d[r.p:r.p + 8] == verf
    _, committed, _ = write(c, f, 5000, b"y" * 3, 2)
    assert committed == 2  # FILE_SYNC
    c.close()
    assert engine.stop() == 0
    engine.start()
    c = RpcClient(engine.port)
    root = c.mount("/data")
    st, f2 = lookup(c, root, "u")
    assert st == 0 and f2 == f  # handles survive the restart
    assert read(c, f, 0, 10000)[0] == b"x" * 5000 + b"yyy"
    _, _, verf2 = write(c, f, 0, b"z", 0)
    assert verf2 != verf
    c.close()


def test_unknown_export_and_handle_from_another_export(tmp_path):
    from engine_util import Engine, mkpool
    eng = Engine(tmp_path, mkpool(tmp_path), exports=["data", "other:allow=10.9.9.0/24"]).start()
    try:
        c = RpcClient(eng.port)
        r = c.call(MOUNT_PROG, 1, xdr_opaque(b"/nope"))
        assert r.u32() == 2  # MNT3ERR_NOENT
        r = c.call(MOUNT_PROG, 1, xdr_opaque(b"/other"))
        assert r.u32() == 13  # MNT3ERR_ACCES: 127.0.0.1 is not in other's allow-list
        c.close()
    finally:
        assert eng.stop() == 0
