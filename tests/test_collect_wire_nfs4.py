"""The wire layer on NFSv4 and on ports found through rpcbind, with real parts: Debian's
nfs-ganesha serving NFSv4.0 to libnfs clients (build/tests/nfs4_ops sends COMPOUNDs of known
main ops; nfs-cat reads a file as libnfs's high-level client does), and ganesha's MOUNT and
NFS ports registered with the local rpcbind, found without naming them. Kernel nfsd is not
in this VM's kernel: it would be seen the same way (catalogue/STATISTICS.md, "Wire layer").
rpcbind is shared by the machine: the datasets filter on this test's ganesha's ports, so a
server someone else registers meanwhile is followed but not counted here."""
import json
import os
import subprocess

import pytest

from conftest import built
from test_collect_wire import client_sent
from load_util import ganesha_running
from wire_util import PINNED, load_followed, totals, wire_collector, wire_status

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="BPF and TC need root")


@pytest.fixture
def ganesha4():
    yield from ganesha_running(cpu=0, protocols=(3, 4))


@pytest.fixture
def ganesha3():
    yield from ganesha_running(cpu=0)


def test_nfs4_compounds_count_as_their_main_op(ganesha4):
    """libnfs NFSv4.0 COMPOUNDs (PUTROOTFH/PUTFH + getattr, read, write, access, lookup)
    count under the NFSv3 op names, version nfs4, exactly as many as the client sent, with
    COMPOUND4res's status; then libnfs's own high-level client (nfs-cat: SETCLIENTID, OPEN,
    READ, CLOSE...) leaves no COMPOUND unnamed."""
    (ganesha4.export / "f").write_bytes(os.urandom(256 << 10))
    server = f"server=127.0.0.1:{ganesha4.nfsport}"
    c = wire_collector([ganesha4.nfsport], ["lo"])
    try:
        c.add("ops", "wire.ops", "op", server)
        c.add("version", "wire.ops", "version", server)
        c.add("status", "wire.ops", "status", server)
        c.flush_now()
        sent = json.loads(subprocess.run(
            [*PINNED, str(built("tests/nfs4_ops")), "127.0.0.1", str(ganesha4.nfsport), "strata", "f", "25"],
            check=True, capture_output=True, text=True, timeout=120).stdout)
        c.flush_now()
        c.flush_now()
        ops = totals(c, "ops")
        c.remove("ops")
        c.remove("version")
        c.remove("status")
        c.add("cat", "wire.ops", "op", server)
        c.flush_now()
        cat = subprocess.run(["nfs-cat", ganesha4.url("f", 4)], capture_output=True, timeout=60)
        assert cat.returncode == 0 and len(cat.stdout) == 256 << 10, cat.stderr
        c.flush_now()
        c.flush_now()
    finally:
        assert c.stop() == 0
    kinds = {k: n for k, n in sent.items() if k not in ("ok", "errors")}
    assert ops == kinds, (ops, sent)
    assert totals(c, "version") == {"nfs4": sum(kinds.values())}
    status = totals(c, "status")
    # the lookups of a name inside a regular file fail (NFS4ERR_NOTDIR, 20 as in NFSv3)
    assert status.get("ok", 0) == sent["ok"] and sum(status.values()) - status.get("ok", 0) == sent["errors"]
    assert status.get("notdir", 0) >= kinds["lookup"] - 1, status
    cat_ops = totals(c, "cat")
    # one open, its reads, one close; setclientid and the lookups around them by their own names
    assert "compound" not in cat_ops and cat_ops.get("read", 0) >= 1, cat_ops
    assert cat_ops.get("open") == 1 and cat_ops.get("close") == 1 and cat_ops.get("setclientid") == 1, cat_ops
    st = wire_status(c)
    assert st["desyncs"] == 0 and st["unmatched"] == 0, st


def test_mount_and_nfs_ports_found_through_rpcbind(ganesha3):
    """No --wire-port: the collector asks the local rpcbind (which ganesha registered with)
    for NFS's and MOUNT's ports, and strata-load's MNT calls count as mnt, every op exactly
    as the clients sent it."""
    ports = {ganesha3.nfsport, ganesha3.mountport}
    c = wire_collector([], ["lo"])
    try:
        for port in sorted(ports):
            c.add(f"ops{port}", "wire.ops", "op", f"server=127.0.0.1:{port}")
        st = c.wait_status(lambda s: "wire" in s and ports <= set(s["wire"]["ports"]), timeout=15)
        assert 2049 in st["wire"]["ports"]
        report = load_followed(c, *ganesha3.args(), "--files", 2, "--file-size", "256k", "--profile", "mixed",
                               "--setup", "--clients", 2, "--duration", 1)
    finally:
        assert c.stop() == 0
    _, per_op = client_sent(report)
    mount_ops = totals(c, f"ops{ganesha3.mountport}")
    assert mount_ops.get("mnt", 0) == per_op["mnt"] == 2, (mount_ops, per_op)
    seen = dict(totals(c, f"ops{ganesha3.nfsport}"))
    for op, n in mount_ops.items():
        seen[op] = seen.get(op, 0) + n
    assert seen == per_op


def test_wire_port_rejects_words_other_than_rpcbind():
    r = subprocess.run([str(built("bin/strata-collect")), "--wire-port", "portmap"], capture_output=True, text=True)
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "rpcbind" in r.stderr
