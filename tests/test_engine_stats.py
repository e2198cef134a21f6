"""Stats socket contract, ARC hit ratio on a re-read working set, and the USDT
probes the engine binary declares."""
import os
import subprocess

from engine_util import engine, engine_binary, nfs_put  # noqa: F401  (fixture)


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
    for group in ("arc", "nfs", "mount", "rpc", "net", "pool"):
        assert all(isinstance(v, (int, float)) for v in s[group].values()), group
    assert len(s["vdev_io"]) == s["pool"]["vdevs"]
    # per vdev, counted before the pool's totals and printed after them: never fewer
    assert sum(v["writes"] for v in s["vdev_io"]) >= s["pool"]["writes"] > 0
    assert sum(v["reads"] for v in s["vdev_io"]) >= s["pool"]["reads"]
    cli = subprocess.run([engine_binary(), "stats", "--socket", str(engine.stats_socket)],
                         capture_output=True, check=True, timeout=10)
    assert b'"version":1' in cli.stdout
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
    for probe in ("nfs_ops", "vdev_io_start", "vdev_io_done"):
        assert f"Name: {probe}" in notes, probe
    assert "Provider: strata" in notes
    assert "Semaphore: 0x0000000000000000" not in notes.split("Name: nfs_ops")[1].split("Name:")[0]
