"""NFS and cache layers through the engine's USDT probes, fired by the probe test fixture
(build/tests/strata-probe-fixture: the real probe notes and semaphores of
engine/strata_probes.h in a tiny program whose every hit is known), with real BPF in the
kernel. The real engine with real NFS clients is in test_collect_engine.py."""
import os
import re
import struct
import subprocess
import time

import pytest

from collect_util import Collector, Fixture, counter_totals, heatmap_totals, private_copy
from conftest import REPO, built
from strata.datasets import llhist

NFS_READ, NFS_WRITE, NFS_GETATTR, NFS_LOOKUP = 6, 7, 1, 3
TIER_ARC, TIER_L2ARC, TIER_POOL, TIER_ZIL, TIER_DIRTY = 1, 2, 4, 8, 16


@pytest.fixture
def fixture_bin(tmp_path):
    return private_copy(built("tests/strata-probe-fixture"), tmp_path)


@pytest.fixture
def fixture(fixture_bin):
    f = Fixture(fixture_bin, "--stats-socket")
    yield f
    f.stop()


def test_nfs_counts_latency_tiers_and_arc_outcomes_are_exact(fixture):
    """Every dataset shape counts each operation once; the first batch (one hit of R
    operations) is read in three chunks (STRATA_NFS_CHUNK, engine/strata_probes.h)."""
    R = 600
    c = Collector("--engine-pid", fixture.pid)
    try:
        c.add("ops_op", "nfs.ops", "op")
        c.add("ops_client", "nfs.ops", "client")
        c.add("ops_tier", "nfs.ops", "tier")
        c.add("lat_op", "nfs.latency", "op")
        c.add("size", "nfs.size", "-", "op=read")
        c.add("reads_by_client", "nfs.ops", "client", "op=read", "tier=pool")
        c.add("arc", "arc.accesses", "hit/miss")
        c.add("file", "nfs.ops", "file", "client=10.0.0.3")
        c.add("all", "nfs.ops")  # without key nor filter: counted per batch
        c.add("records", "arc.accesses")
        c.add("size_all", "nfs.size")
        fired = [
            fixture.nfs(R, NFS_READ, "10.0.0.3", latency_us=3000, tiers=TIER_ARC | TIER_POOL, hits=1, misses=2,
                        size=8192, file=42),
            fixture.nfs(25, NFS_READ, "10.0.0.4", latency_us=150, tiers=TIER_ARC | TIER_L2ARC, hits=2,
                        misses=1, size=4096, file=43),
            fixture.nfs(30, NFS_WRITE, "10.0.0.4", latency_us=200, tiers=TIER_ZIL | TIER_DIRTY, size=4096),
            fixture.nfs(15, NFS_GETATTR, "fd00::7", latency_us=5, tiers=TIER_DIRTY, hits=1),
            fixture.nfs(2, 1, "127.0.0.1", tiers=0, mount=True),
            fixture.nfs(3, 0, "127.0.0.1", tiers=0),
        ]
        assert fired == [R, 25, 30, 15, 2, 3]
        c.flush_now()
    finally:
        assert c.stop() == 0
    assert counter_totals(c.data("ops_op")) == {"read": R + 25, "write": 30, "getattr": 15, "mnt": 2, "null": 3}
    assert counter_totals(c.data("ops_client")) == {"10.0.0.3": R, "10.0.0.4": 55, "fd00::7": 15, "127.0.0.1": 5}
    assert counter_totals(c.data("ops_tier")) == {"pool": R, "l2arc": 25, "zil": 30, "arc": 15, "none": 5}
    assert counter_totals(c.data("reads_by_client")) == {"10.0.0.3": R}
    assert counter_totals(c.data("file")) == {"object:42": R}  # the fixture names no objects
    assert counter_totals(c.data("arc")) == {"hit": R + 50 + 15, "miss": 2 * R + 25}
    assert heatmap_totals(c.data("size")) == {"": {llhist.bucket(8192): R, llhist.bucket(4096): 25}}
    assert counter_totals(c.data("all")) == {"": R + 75}
    assert counter_totals(c.data("records")) == {"": 3 * R + 75 + 15}
    assert heatmap_totals(c.data("size_all")) == {"": {llhist.bucket(8192): R, llhist.bucket(4096): 55, 0: 20}}
    lat = heatmap_totals(c.data("lat_op"))
    assert sum(lat["read"].values()) == R + 25 and sum(lat["write"].values()) == 30
    # the fixture backdates start_ns by the latency: no op can be measured faster than that,
    # and none should take 50 ms more on an idle probe path
    for op, floor_us in (("write", 200), ("getattr", 5)):
        for b in lat[op]:
            assert llhist.upper(b) > floor_us * 1000 and llhist.lower(b) < floor_us * 1000 + 50_000_000
    assert min(lat["read"]) >= llhist.bucket(150_000)
    assert all(s["drops"] == 0 for s in c.statuses())


def test_keys_a_later_dataset_breaks_down_by_are_each_operations_own(fixture):
    """The program fills only the keys some dataset uses: datasets by client, tier and file
    added while one by op alone ran get each operation's own keys from their first hit on."""
    c = Collector("--engine-pid", fixture.pid)
    try:
        c.add("ops_op", "nfs.ops", "op")
        assert fixture.nfs(20, NFS_READ, "10.0.0.3", tiers=TIER_POOL, file=42) == 20
        c.add("ops_client", "nfs.ops", "client")
        c.add("ops_tier", "nfs.ops", "tier", "client=fd00::7")
        c.add("ops_file", "nfs.ops", "file")
        fired = [fixture.nfs(30, NFS_WRITE, "10.0.0.4", tiers=TIER_ZIL, file=43),
                 fixture.nfs(5, NFS_GETATTR, "fd00::7", tiers=TIER_ARC, file=44)]
        assert fired == [30, 5]
        c.flush_now()
    finally:
        assert c.stop() == 0
    assert counter_totals(c.data("ops_op")) == {"read": 20, "write": 30, "getattr": 5}
    assert counter_totals(c.data("ops_client")) == {"10.0.0.4": 30, "fd00::7": 5}
    assert counter_totals(c.data("ops_tier")) == {"arc": 5}
    assert counter_totals(c.data("ops_file")) == {"object:43": 30, "object:44": 5}


def test_cache_probes_l2arc_and_zil_latency(fixture):
    c = Collector("--engine-pid", fixture.pid)
    try:
        c.add("l2", "l2arc.latency", "op")
        c.add("zil", "zil.latency", "-")
        assert fixture.ask("tier l2arc_read 12 250") == 12
        assert fixture.ask("tier l2arc_write 4 900") == 4
        assert fixture.ask("tier zil_commit 7 120") == 7
        c.flush_now()
    finally:
        assert c.stop() == 0
    l2 = heatmap_totals(c.data("l2"))
    assert {k: sum(v.values()) for k, v in l2.items()} == {"read": 12, "write": 4}
    assert min(l2["read"]) >= llhist.bucket(250_000)
    assert sum(heatmap_totals(c.data("zil"))[""].values()) == 7


def test_key_overflow_goes_to_other_and_is_reported(fixture):
    c = Collector("--engine-pid", fixture.pid, "--max-keys", "3")
    try:
        c.add("cl", "nfs.ops", "client")
        for i in range(6):
            assert fixture.nfs(2, NFS_READ, f"10.1.0.{i}") == 2
        c.flush_now()
        status = c.wait_status()
    finally:
        assert c.stop() == 0
    totals = counter_totals(c.data("cl"))
    assert totals.pop("other") == 6
    assert len(totals) == 3 and sum(totals.values()) == 6
    assert status["overflows"] == {"cl": 6}


def fire_each_client(fixture, clients, count, latency_us):
    """fixture.nfs once per client, the requests written before the replies are read."""
    for ip in clients:
        fixture.proc.stdin.write(f"nfs {count} {NFS_READ} {ip} {latency_us} 1 0 0 0 0\n")
    fixture.proc.stdin.flush()
    assert [fixture.proc.stdout.readline().split()[1] for _ in clients] == [str(count)] * len(clients)


def test_more_chunks_than_the_table_holds_and_a_slot_taken_again_count_exactly(fixture):
    """3 x 600 chunks, past the 512 of each CPU's table (bpf/aggregate.h): the keys that
    collide live in the hash map, and every hit is counted once; a dataset removed and
    added again (a new slot generation) takes the table entries of the old one back,
    counting from zero."""
    clients = [f"10.2.{i // 250}.{i % 250 + 1}" for i in range(600)]
    c = Collector("--engine-pid", fixture.pid)
    try:
        c.add("ops", "nfs.ops", "client")
        c.add("lat", "nfs.latency", "client")
        fire_each_client(fixture, clients, 2, 3000)
        fire_each_client(fixture, clients, 1, 150)
        c.remove("lat")
        fire_each_client(fixture, clients, 1, 3000)
        c.add("lat", "nfs.latency", "client")
        fire_each_client(fixture, clients, 3, 150)
        c.flush_now()
    finally:
        assert c.stop() == 0
    assert counter_totals(c.data("ops")) == {ip: 7 for ip in clients}
    lat = heatmap_totals(c.data("lat"))
    # 3 hits before the removal, 3 after adding again (none of the one in between)
    assert {ip: sum(buckets.values()) for ip, buckets in lat.items()} == {ip: 6 for ip in clients}
    assert min(min(buckets) for buckets in lat.values()) >= llhist.bucket(150_000)
    assert all(s["drops"] == 0 for s in c.statuses())


def test_gauges_from_the_engine_stats_socket(fixture):
    c = Collector("--engine-pid", fixture.pid)
    try:
        c.add("size", "arc.size")
        c.add("c", "arc.c")
        c.flush_now()
    finally:
        assert c.stop() == 0
    assert c.data("size")[-1]["kind"] == "gauge"
    # a second whose sample timed out (a loaded host) has no value and is reported, never a wrong one
    for name, value in (("size", 1048576), ("c", 2097152)):
        sampled = [r["data"][""] for r in c.data(name) if "" in r["data"]]
        assert sampled and set(sampled) == {value}, c.data(name)
        assert len(sampled) == len(c.data(name)) or any("stats socket" in e or "gauges" in e
                                                for s in c.statuses() for e in s["errors"]), c.data(name)


def test_removing_a_dataset_detaches_only_what_it_alone_used(fixture):
    """Each dataset holds the probes it reads: nfs.ops[op] strata:nfs_keys (the operations'
    counting keys), nfs.latency strata:nfs_ops (the operations whole), zil.latency its own."""
    c = Collector("--engine-pid", fixture.pid)
    try:
        assert fixture.semaphore("nfs_ops") == 0 and fixture.semaphore("nfs_keys") == 0
        c.add("a", "nfs.ops", "op")
        assert fixture.semaphore("nfs_keys") == 1 and fixture.semaphore("nfs_ops") == 0
        c.add("b", "nfs.latency", "client")
        c.add("z", "zil.latency")
        assert fixture.semaphore("nfs_ops") == 1 and fixture.semaphore("zil_commit") == 1
        assert fixture.semaphore("l2arc_read") == 0  # nobody asked for it: not attached
        assert fixture.nfs(10, NFS_READ) == 10
        c.remove("a")
        assert fixture.semaphore("nfs_keys") == 0 and fixture.semaphore("nfs_ops") == 1  # b still needs it
        assert fixture.nfs(5, NFS_READ) == 5
        c.remove("b")
        assert fixture.semaphore("nfs_ops") == 0
        assert fixture.semaphore("zil_commit") == 1
        assert fixture.nfs(7, NFS_READ) == 0  # the engine's probe now costs one branch
        c.add("a", "nfs.ops", "op")  # re-enabled: counts from zero, only new ops
        assert fixture.nfs(3, NFS_READ) == 3
        c.flush_now()
    finally:
        assert c.stop() == 0
    assert sum(sum(v.values()) for v in heatmap_totals(c.data("b")).values()) == 15
    # "a" was removed and re-added: its records after re-adding carry only the 3 new ops
    assert counter_totals(c.data("a")) == {"read": 13}


def test_operations_put_keys_only_count_for_the_keys_readers_alone(fixture):
    """A batch whose first operations were put while no one read strata:nfs_ops (their keys
    alone, as the engine puts them): the readers of keys count all of them, the readers of
    whole operations only those put whole, from inside a chunk (STRATA_NFS_CHUNK 256) on."""
    c = Collector("--engine-pid", fixture.pid)
    try:
        c.add("ops", "nfs.ops", "op")
        c.add("all", "nfs.ops")
        c.add("lat", "nfs.latency", "op")
        c.add("clients", "nfs.ops", "client")
        assert fixture.nfs(700, NFS_READ, "10.0.0.7", latency_us=50, keys_only=300) == 700
        assert fixture.nfs(40, NFS_READ, "10.0.0.7", latency_us=50, keys_only=40) == 40   # none whole
        c.flush_now()
    finally:
        assert c.stop() == 0
    assert counter_totals(c.data("ops")) == {"read": 740} and counter_totals(c.data("all")) == {"": 740}
    assert counter_totals(c.data("clients")) == {"10.0.0.7": 400}
    assert heatmap_totals(c.data("lat")) == {"read": {llhist.bucket(50_000): 400}}


def test_the_record_of_the_interval_an_add_came_in_is_marked_partial(fixture):
    """The intervals that began before the dataset counted are marked (strata collect stores
    none of them): the one its add came in, and the next ones while their reads come late
    (a loaded machine); then the records are whole."""
    c = Collector("--engine-pid", fixture.pid)
    try:
        before = time.time()
        c.add("p", "nfs.ops", "op")
        after = time.time()
        c.wait_status(lambda s: s["t"] >= int(after) + 3)
    finally:
        assert c.stop() == 0
    records = [r for r in c.data("p") if r["t"] <= int(after) + 3]
    marked = [r["t"] for r in records if r.get("partial")]
    assert records[0]["t"] == int(before) and marked == [r["t"] for r in records[:len(marked)]], records
    assert set(marked) >= {int(before), int(after)} and len(marked) < len(records), records


def test_engine_restart_by_pid_is_followed(fixture_bin):
    first = Fixture(fixture_bin)
    c = Collector("--engine-pid", first.pid)
    try:
        c.add("ops", "nfs.ops", "-")
        assert first.nfs(5, NFS_READ) == 5
        first.stop()
        second = Fixture(fixture_bin)
        try:
            started = time.monotonic()
            c.wait_status(lambda s: s["engine_pid"] == second.pid and "nfs" in s["attached"], timeout=3)
            while second.semaphore("nfs_keys") == 0:
                assert time.monotonic() - started < 2.0, "not re-attached within 2 s"
                time.sleep(0.05)
            assert second.nfs(8, NFS_READ) == 8
            c.flush_now()
        finally:
            second.stop()
    finally:
        assert c.stop() == 0
    assert counter_totals(c.data("ops")) == {"": 13}


def test_engine_by_path_covers_processes_started_later(fixture_bin):
    c = Collector("--engine", fixture_bin)
    late = None
    try:
        c.add("ops", "nfs.ops", "client")
        late = Fixture(fixture_bin)  # started after attaching: the kernel sets its semaphore
        assert late.semaphore("nfs_ops") == 1
        assert late.nfs(9, NFS_GETATTR, "10.9.9.9") == 9
        c.flush_now()
    finally:
        if late:
            late.stop()
        assert c.stop() == 0
    assert counter_totals(c.data("ops")) == {"10.9.9.9": 9}


def test_control_errors_are_one_json_line_each(fixture_bin):
    c = Collector("--engine", fixture_bin)
    try:
        assert c.send("add x nfs.bogus -")["message"].startswith("unknown statistic")
        assert "no breakdown" in c.send("add x nfs.ops device")["message"]
        assert "cannot be filtered" in c.send("add x disk.ops - client=1.2.3.4")["message"]
        assert "not a valid op" in c.send("add x nfs.ops - op=frobnicate")["message"]
        assert c.send("remove nothere")["type"] == "error"
        assert c.send("launch")["type"] == "error"
        c.add("x", "nfs.ops")
        assert "already" in c.send("add x nfs.ops -")["message"]
        assert c.send("quit") == {"v": 1, "type": "ack", "id": "", "ok": True}
        assert c.proc.wait(timeout=10) == 0
    finally:
        c.stop()
    assert c.data("x")  # the last interval is flushed on quit


def test_an_engine_of_another_probe_layout_is_refused(fixture_bin):
    """An engine built with other probe structs (another revision, as `strata check ab
    --a-rev` runs) is refused in one line rather than read wrong: the fixture with its
    layout note's number changed, and with the note gone."""
    layout = int(re.search(r"#define STRATA_PROBE_LAYOUT\s+(\d+)", (REPO / "engine/strata_probes.h").read_text())[1])
    note = struct.pack("<III8sI", 7, 4, 0x5354, b"strata", layout)
    image = fixture_bin.read_bytes()
    assert image.count(note) == 1
    refusals = []
    for name, patched, said in (("other", struct.pack("<III8sI", 7, 4, 0x5354, b"strata", layout + 98),
                                 f"has probe layout {layout + 98}, this collector reads layout {layout}"),
                                ("none", struct.pack("<III8sI", 7, 4, 0x5355, b"strata", layout),
                                 "declares no probe layout")):
        binary = fixture_bin.with_name(f"engine-{name}")
        binary.write_bytes(image.replace(note, patched))
        c = Collector("--engine", binary)
        try:
            for statistic in ("nfs.ops", "vdev.latency"):
                reply = c.send(f"add x {statistic} -")
                assert reply["type"] == "error" and said in reply["message"], reply
                refusals.append(reply["message"])
        finally:
            c.stop()
    assert all("\n" not in m and "same revision" in m for m in refusals), refusals
    c = Collector("--engine", fixture_bin)  # the fixture as built: the same layout
    try:
        c.add("x", "nfs.ops")
    finally:
        c.stop()


def test_catalogue_reports_support_per_statistic(fixture_bin):
    import json
    out = subprocess.run([str(built("bin/strata-collect")), "--catalogue", "--engine", str(fixture_bin)],
                         check=True, capture_output=True, text=True).stdout
    cat = {s["name"]: s for s in json.loads(out)["statistics"]}
    assert set(cat) >= {"nfs.ops", "nfs.latency", "nfs.size", "arc.accesses", "l2arc.latency", "zil.latency",
                        "disk.ops", "disk.latency", "disk.size", "disk.offset", "arc.size", "l2arc.size"}
    assert cat["nfs.latency"]["kind"] == "heatmap" and cat["nfs.latency"]["unit"] == "ns"
    assert cat["arc.accesses"]["breakdowns"][0] == "op" and "hit/miss" in cat["arc.accesses"]["breakdowns"]
    # every statistic but nfsd.* and nfsd.io.*, which wait for the kernel's nfsd (not loaded on
    # this host; tests/test_collect_nfsd.py runs it in a guest)
    nfsd = {name: s for name, s in cat.items() if s["layer"] in ("nfsd", "nfsd_io")}
    assert set(nfsd) == {"nfsd.ops", "nfsd.latency", "nfsd.size", "nfsd.queue", "nfsd.io.ops", "nfsd.io.latency",
                         "nfsd.io.size"}
    assert all(s["supported"] for name, s in cat.items() if name not in nfsd), \
        [s for s in cat.values() if not s["supported"]]
    if not os.path.exists("/sys/module/nfsd"):
        assert all(not s["supported"] and s["reason"].startswith("nfsd is not running") for s in nfsd.values()), nfsd
    out = subprocess.run([str(built("bin/strata-collect")), "--catalogue", "--engine", "/bin/true"],
                         check=True, capture_output=True, text=True).stdout
    cat = {s["name"]: s for s in json.loads(out)["statistics"]}
    assert not cat["zil.latency"]["supported"] and "declares no probe layout" in cat["zil.latency"]["reason"]
    assert cat["disk.ops"]["supported"]


@pytest.mark.skipif(os.path.exists("/sys/module/nfsd"), reason="nfsd runs on this host: nothing to wait for "
                    "(tests/test_collect_nfsd.py covers the wait in a guest that starts nfsd)")
def test_nfsd_dataset_waits_for_nfsd_while_others_collect():
    c = Collector("--interval", "1")
    try:
        c.add("n", "nfsd.ops", "op")
        c.add("d", "disk.ops", "device")
        status = c.wait_status(lambda s: s["waiting"] == ["n"] and "disk" in s["attached"])
        assert "nfsd" not in status["attached"], status
        assert any(e.startswith("nfsd is not running") and e.endswith("waiting for it to start")
                   for e in status["errors"]), status
        assert "n" not in status["overflows"], status
        c.remove("n")
        assert c.wait_status()["waiting"] == []
    finally:
        assert c.stop() == 0
    assert c.data("n") and all(r["data"] == {} for r in c.data("n"))
    assert c.data("d")


def test_without_privileges_one_line_and_exit_77():
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all",
                        str(built("bin/strata-collect"))], input="", capture_output=True, text=True,
                       cwd="/", env={"PATH": os.environ["PATH"]})
    assert r.returncode == 77
    assert len(r.stderr.splitlines()) == 1 and "CAP_BPF" in r.stderr
