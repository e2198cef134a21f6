"""The wire layer (bpf/wire.bpf.c on TC clsact) against the real engine: strata-load clients
in their own network namespaces, real TCP through veth pairs, and the engine's own USDT view
(nfs.*) as the peer. Kernel nfsd is not in this VM's kernel, so it cannot be a peer here: the
wire view needs nothing from the server, and on a host with nfsd it applies unchanged
(collectors/STATISTICS.md, "Wire layer")."""
import os
import shutil
import subprocess
import json
import time

import pytest

from collect_util import heatmap_totals
from wire_util import WireEngine, p50, totals, wire_collector, wire_status

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="BPF, TC and network namespaces need root"),
              pytest.mark.skipif(not shutil.which("ip"), reason="--netns needs iproute2's ip")]

NFS_OPS = ["null", "getattr", "setattr", "lookup", "access", "readlink", "read", "write", "create", "mkdir",
           "symlink", "mknod", "remove", "rmdir", "rename", "link", "readdir", "readdirplus", "fsstat", "fsinfo",
           "pathconf", "commit", "mnt", "umnt"]


@pytest.fixture
def engine(tmp_path):
    e = WireEngine(tmp_path)
    yield e
    e.stop()


def per_client_op(collector, prefix):
    """{(client, op): count} from the datasets PREFIX-OP (breakdown client, filter op=OP)."""
    out = {}
    for op in NFS_OPS:
        for client, n in totals(collector, f"{prefix}-{op}").items():
            out[(client, op)] = n
    return out


def test_wire_matches_engine_per_client_and_op(engine):
    """10 clients in network namespaces, mixed load: over the whole run (quiet before and
    after), wire.ops per client and op equals the engine's own nfs.ops exactly, and the
    wire's median latency per op is at or above the engine's (it adds the network stack)."""
    c = wire_collector([engine.nfs_port, engine.mount_port], ["stl*"], "--engine", engine.binary)
    try:
        for op in NFS_OPS:
            c.add(f"w-{op}", "wire.ops", "client", f"op={op}")
            c.add(f"n-{op}", "nfs.ops", "client", f"op={op}")
        c.add("wlat", "wire.latency", "op")
        c.add("nlat", "nfs.latency", "op")
        c.flush_now()
        report = json.loads(subprocess.run(
            engine.load_args("--profile", "mixed", "--setup", "--netns", "--netns-delay", 0.5, "--clients", 10, "--threads", 2,
                             "--files", 8, "--file-size", "256k", "--io-size", "16k", "--duration", 2),
            check=True, capture_output=True, text=True, timeout=120).stdout)
        time.sleep(0.1)  # the engine's probe batches flush within 5 ms of a reply
        c.flush_now()
        c.flush_now()
    finally:
        assert c.stop() == 0
    wire, nfs = per_client_op(c, "w"), per_client_op(c, "n")
    clients = {cl["addr"] for cl in report["clients"]}
    assert len(clients) == 10 and {client for client, _ in nfs} == clients
    assert sum(nfs.values()) > 1000, nfs
    assert wire == nfs
    st = wire_status(c)
    assert st["desyncs"] == 0 and st["unmatched"] == 0 and st["joined"] == 0, st
    wlat, nlat = heatmap_totals(c.data("wlat")), heatmap_totals(c.data("nlat"))
    assert set(wlat) == set(nlat)
    for op in nlat:
        assert p50(wlat[op]) >= p50(nlat[op]), (op, wlat[op], nlat[op])


def client_sent(report):
    """{client: RPCs} and {op: RPCs} strata-load sent: setup (MOUNT included) and run."""
    per_client, per_op = {}, {}
    for cl in report["clients"]:
        ops = dict(cl["ops"])
        for op, n in cl["setup"]["ops"].items():
            ops[op] = ops.get(op, 0) + n
        for op, n in cl["setup"]["mount_ops"].items():
            ops[op] = ops.get(op, 0) + n
        per_client[cl["addr"]] = sum(ops.values())
        for op, n in ops.items():
            per_op[op] = per_op.get(op, 0) + n
    return per_client, {op: n for op, n in per_op.items() if n}


@pytest.fixture
def ganesha():
    from load_util import Ganesha
    why = Ganesha.missing()
    if why:
        pytest.skip(why)
    g = Ganesha()
    g.start()
    yield g
    g.close()


def test_wire_counts_what_clients_sent_to_ganesha(ganesha, tmp_path):
    """A server no one here wrote: nfs-ganesha (FSAL_VFS, NFSv3/TCP) and 4 strata-load
    clients in network namespaces. wire.ops[client] and wire.ops[op] equal what strata-load
    reports it sent, exactly; every call's status word is read."""
    from load_util import load_ok
    c = wire_collector([ganesha.nfsport, ganesha.mountport], ["stl*", "lo"])
    try:
        c.add("clients", "wire.ops", "client")
        c.add("ops", "wire.ops", "op")
        c.add("lat", "wire.latency", "op")
        c.add("status", "wire.ops", "status")
        c.flush_now()
        report = load_ok(*ganesha.args(), "--files", "4", "--file-size", "1m", "--profile", "mixed", "--setup",
                         "--netns", "--netns-delay", "0.5", "--clients", "4", "--threads", "2", "--duration", "2")
        c.flush_now()
        c.flush_now()
    finally:
        assert c.stop() == 0
    per_client, per_op = client_sent(report)
    assert totals(c, "clients") == per_client
    assert totals(c, "ops") == per_op
    # every file created was first looked up and not found (NFS3ERR_NOENT): the status word is read
    assert totals(c, "status") == {"ok": sum(per_op.values()) - per_op["create"], "noent": per_op["create"]}
    lat = heatmap_totals(c.data("lat"))
    assert {op: sum(b.values()) for op, b in lat.items()} == per_op
    st = wire_status(c)
    assert st["desyncs"] == 0 and st["unmatched"] == 0, st
