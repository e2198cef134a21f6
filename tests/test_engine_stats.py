"""Stats socket contract (counters, and the name/lookup requests that turn object ids
into paths), ARC hit ratio on a re-read working set, and the USDT probes the engine
binary declares."""
import json
import os
import re
import socket
import subprocess

from engine_util import (NFS_PROG, NO_SATTR, RpcClient, create, diropargs, engine, engine_binary,  # noqa: F401
                         lookup, nfs_put, xdr_opaque)


def test_stats_json_contract(engine, tmp_path):
    src = tmp_path / "f"
    src.write_bytes(os.urandom(10_000))
    nfs_put(engine, src, "f")
    s = engine.stats()
    assert s["version"] == 1 and s["pid"] == engine.proc.pid and s["uptime_s"] >= 0
    for key in ("hits", "misses", "mru_hits", "mfu_hits", "mru_ghost_hits", "mfu_ghost_hits",
                "size", "c", "p", "evictions", "hdr_size"):
        assert isinstance(s["arc"][key], int), key
    assert s["nfs"]["write"] >= 1 and s["nfs"]["create"] == 1
    assert s["mount"]["mnt"] >= 1
    assert s["probes"] == {"nfs_ops_hits": 0, "nfs_ops_ns": 0}  # no tracer: nothing fired
    for group in ("arc", "nfs", "mount", "rpc", "net", "pool", "probes"):
        assert all(isinstance(v, (int, float)) for v in s[group].values()), group
    assert len(s["vdev_io"]) == s["pool"]["vdevs"]
    # per vdev, counted before the pool's totals and printed after them: never fewer
    assert sum(v["writes"] for v in s["vdev_io"]) >= s["pool"]["writes"] > 0
    assert sum(v["reads"] for v in s["vdev_io"]) >= s["pool"]["reads"]
    cli = subprocess.run([engine_binary(), "stats", "--socket", str(engine.stats_socket)],
                         capture_output=True, check=True, timeout=10)
    assert b'"version":1' in cli.stdout
    # by pid: the engine serves on --stats-socket PATH, not /run/strata/engine-PID.sock
    cli = subprocess.run([engine_binary(), "stats", "--pid", str(engine.proc.pid)],
                         capture_output=True, timeout=10)
    assert cli.returncode == 0 and json.loads(cli.stdout)["pid"] == engine.proc.pid, cli.stderr
    # a pid that is no engine, and one that is no process, are named as such in one line
    for pid, said in ((os.getpid(), "listens on no stats socket"), (2**22 + 1, "no process")):
        cli = subprocess.run([engine_binary(), "stats", "--pid", str(pid)], capture_output=True, text=True, timeout=10)
        assert cli.returncode == 1 and said in cli.stderr and cli.stderr.count("\n") == 1, cli.stderr
    sock = engine.stats_socket
    assert engine.stop() == 0
    assert not sock.exists()


def test_rereading_a_cached_working_set_hits_the_arc(engine, tmp_path):
    files = []
    for i in range(4):
        p = tmp_path / f"w{i}"
        p.write_bytes(os.urandom(2 * 1024 * 1024))
        nfs_put(engine, p, p.name)
        files.append(p)
    for p in files:  # first pass: warm the ARC
        subprocess.run(["nfs-cat", engine.url(p.name)], capture_output=True, check=True, timeout=60)
    before = engine.stats()["arc"]
    for _ in range(5):
        for p in files:
            out = subprocess.run(["nfs-cat", engine.url(p.name)], capture_output=True, check=True, timeout=60)
            assert out.stdout == p.read_bytes()
    after = engine.stats()["arc"]
    hits, misses = after["hits"] - before["hits"], after["misses"] - before["misses"]
    assert hits > 0
    assert hits / (hits + misses) >= 0.99, (hits, misses)


def test_binary_declares_usdt_probes():
    notes = subprocess.run(["readelf", "-n", engine_binary()], capture_output=True, text=True, check=True).stdout
    declared = set(re.findall(r"Name: (\w+)", notes))
    assert declared == {"nfs_ops", "nfs_keys", "vdev_io_done", "l2arc_read", "l2arc_write", "zil_commit"}, declared
    assert "Provider: strata" in notes
    for probe in ("nfs_ops", "nfs_keys"):
        assert "Semaphore: 0x0000000000000000" not in notes.split(f"Name: {probe}")[1].split("Name:")[0]


def ask(engine, line):
    """One request on the engine's stats socket, its JSON answer."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(str(engine.stats_socket))
    s.sendall(line.encode() + b"\n")
    data = b""
    while chunk := s.recv(65536):
        data += chunk
    s.close()
    return json.loads(data)


def test_name_and_lookup_requests_follow_renames_links_and_removals(engine):
    c = RpcClient(engine.port)
    try:
        root = c.mount("/data")
        assert c.call(NFS_PROG, 9, diropargs(root, "d") + NO_SATTR).u32() == 0  # MKDIR
        d = lookup(c, root, "d")[1]
        f = create(c, d, "f")[1]
        found = ask(engine, "lookup data:/d/f")
        fid = found["id"]
        named = ask(engine, f"name {fid}")
        assert named["export"] == "data" and named["path"] == "/d/f" and named["links"] == 1
        assert named["gen"] == found["gen"] != ask(engine, "lookup data:/d")["gen"]
        assert ask(engine, "name 1")["path"] == "/"

        assert c.call(NFS_PROG, 15, xdr_opaque(f) + diropargs(root, "e")).u32() == 0  # LINK
        assert ask(engine, f"name {fid}")["path"] == "/e"  # the first link breadth-first
        removed = ask(engine, "removed")["removed"]
        assert c.call(NFS_PROG, 12, diropargs(root, "e")).u32() == 0  # REMOVE the link
        assert ask(engine, "removed")["removed"] == removed + 1
        assert ask(engine, f"name {fid}")["path"] == "/d/f"
        assert c.call(NFS_PROG, 14, diropargs(root, "d") + diropargs(root, "d2")).u32() == 0  # RENAME
        assert ask(engine, f"name {fid}")["path"] == "/d2/f"
        assert c.call(NFS_PROG, 12, diropargs(d, "f")).u32() == 0
        gone = ask(engine, f"name {fid}")
        assert "path" not in gone and gone["removed"] == removed + 3
    finally:
        c.close()
    assert ask(engine, "lookup nope:/x") == {"error": "no export named nope"}
    assert ask(engine, "lookup data:/d2/f") == {"error": "no such file in export data"}
    assert "error" in ask(engine, "lookup /d2") and "error" in ask(engine, "name x")
