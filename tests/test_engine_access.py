"""Who may do what, over raw ONC RPC with AUTH_SYS credentials: in a sticky
(1777) directory another user can neither REMOVE my file nor RENAME it away
or RENAME theirs over it; export roots are created 0755 unless an export
sets mode=, and a mode= given later changes an existing root."""
import struct

from engine_util import (NFS_PROG, Engine, RpcClient, auth_sys, diropargs, lookup, mkpool,  # noqa: F401
                         xdr_opaque)

ACCES = 13
ALICE, BOB = auth_sys(uid=1000, gid=1000), auth_sys(uid=2000, gid=2000)


def create_as(c, cred, dirfh, name):
    r = c.call(NFS_PROG, 8, diropargs(dirfh, name) + struct.pack(">I", 1) + b"\0" * 24, cred=cred)
    assert r.u32() == 0 and r.u32() == 1
    return r.opaque()


def mkdir_as(c, cred, dirfh, name, mode):
    sattr = struct.pack(">III", 1, mode, 0) + b"\0" * 20
    r = c.call(NFS_PROG, 9, diropargs(dirfh, name) + sattr, cred=cred)
    assert r.u32() == 0 and r.u32() == 1
    return r.opaque()


def rename_as(c, cred, fromdir, fromname, todir, toname):
    return c.call(NFS_PROG, 14, diropargs(fromdir, fromname) + diropargs(todir, toname), cred=cred).u32()


def remove_as(c, cred, dirfh, name):
    return c.call(NFS_PROG, 12, diropargs(dirfh, name), cred=cred).u32()


def mode_of(c, fh):
    r = c.call(NFS_PROG, 1, xdr_opaque(fh))
    assert r.u32() == 0
    f = r.fattr()
    return f["mode"] & 0o7777, f["uid"]


def serve(tmp_path, pool, *exports):
    return Engine(tmp_path, pool, exports=list(exports)).start()


def test_sticky_directory_refuses_another_users_rename(tmp_path):
    eng = serve(tmp_path, mkpool(tmp_path, nvdevs=1, size="64M"), "data:mode=1777")
    try:
        c = RpcClient(eng.port)
        root = c.mount("/data")
        assert mode_of(c, root) == (0o1777, 0)
        mine = create_as(c, ALICE, root, "alice.txt")
        create_as(c, BOB, root, "bob.txt")
        assert remove_as(c, BOB, root, "alice.txt") == ACCES
        assert rename_as(c, BOB, root, "alice.txt", root, "taken") == ACCES  # source: not Bob's
        assert rename_as(c, BOB, root, "bob.txt", root, "alice.txt") == ACCES  # target: not Bob's
        sub = mkdir_as(c, BOB, root, "bobdir", 0o777)
        assert rename_as(c, BOB, root, "alice.txt", sub, "taken") == ACCES  # away into his directory
        assert lookup(c, root, "alice.txt") == (0, mine)
        assert rename_as(c, BOB, root, "bob.txt", root, "bob2.txt") == 0  # his own file
        assert rename_as(c, ALICE, root, "alice.txt", root, "alice2.txt") == 0
        assert rename_as(c, ALICE, root, "alice2.txt", root, "bob2.txt") == ACCES  # over Bob's
        # the same moves in a plain 0777 directory are allowed
        create_as(c, ALICE, sub, "a")
        create_as(c, BOB, sub, "b")
        assert rename_as(c, BOB, sub, "a", sub, "moved") == 0
        assert rename_as(c, ALICE, sub, "b", sub, "moved") == 0
        c.close()
    finally:
        assert eng.stop() == 0


def test_export_roots_are_0755_unless_mode_is_given(tmp_path):
    pool = mkpool(tmp_path, nvdevs=1, size="64M")
    eng = serve(tmp_path, pool, "data", "shared:mode=1777")
    try:
        c = RpcClient(eng.port)
        data, shared = c.mount("/data"), c.mount("/shared")
        assert mode_of(c, data) == (0o755, 0)
        assert mode_of(c, shared) == (0o1777, 0)
        r = c.call(NFS_PROG, 8, diropargs(data, "x") + struct.pack(">I", 1) + b"\0" * 24, cred=ALICE)
        assert r.u32() == ACCES
        create_as(c, ALICE, shared, "x")
        c.close()
    finally:
        assert eng.stop() == 0
    eng = serve(tmp_path, pool, "data:mode=0700", "shared")  # later: set one, keep the other
    try:
        c = RpcClient(eng.port)
        assert mode_of(c, c.mount("/data")) == (0o700, 0)
        assert mode_of(c, c.mount("/shared")) == (0o1777, 0)
        c.close()
    finally:
        assert eng.stop() == 0
