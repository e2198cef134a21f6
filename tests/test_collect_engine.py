"""The collector on the real engine (build/bin/strata-engine, over real TCP) with the real
libnfs load generator (build/bin/strata-load): BPF on the engine's USDT probe counts
exactly the operations the clients performed, and follows an engine restart under load."""
import json
import re
import subprocess
import time
from pathlib import Path

import pytest

from collect_util import Collector, Engine, counter_totals, heatmap_totals, private_copy
from conftest import built
from strata.datasets import llhist


@pytest.fixture
def engine_bin(tmp_path):
    return private_copy(built("bin/strata-engine"), tmp_path)


def client_op_counts(report):
    """Every operation the load generator's clients performed, setup included."""
    totals = {}
    for client in report["clients"]:
        for part in (client["ops"], client.get("setup", {}).get("ops", {}),
                     client.get("setup", {}).get("mount_ops", {})):
            for op, n in part.items():
                totals[op] = totals.get(op, 0) + n
    return totals


def test_nfs_ops_equal_what_libnfs_clients_did(engine_bin, tmp_path):
    engine = Engine(engine_bin, tmp_path, "a")
    c = Collector("--engine-pid", engine.pid)
    try:
        c.add("op", "nfs.ops", "op")
        c.add("client", "nfs.ops", "client")
        c.add("lat", "nfs.latency", "op", "op=read")
        c.add("hm", "arc.accesses", "hit/miss")
        c.add("size", "arc.size")
        report = engine.load(duration=1)
        c.flush_now()
    finally:
        assert c.stop() == 0
        engine.stop()
    did = client_op_counts(report)
    assert did["read"] > 1000
    ops = counter_totals(c.data("op"))
    assert counter_totals(c.data("client")) == {"127.0.0.1": sum(ops.values())}
    ops.pop("null", None)  # libnfs may ping with NULL when connecting: not in strata-load's counts
    ops.pop("mnt_null", None)
    assert ops == did
    # the server's view of an op lies inside the client's: no bucket starts above the slowest
    slowest = report["latency_ns"]["read"]["max"]
    lat = heatmap_totals(c.data("lat"))["read"]
    assert sum(lat.values()) == did["read"]
    assert max(llhist.lower(b) for b in lat) <= slowest
    assert sum(counter_totals(c.data("hm")).values()) > 0
    assert any(r["data"].get("", 0) > 0 for r in c.data("size"))
    assert all(s["drops"] == 0 for s in c.statuses())


def nfs_ops_program_runs(collector_pid):
    """Runs so far of the nfs_ops BPF program this collector loaded (kernel BPF statistics);
    other collectors on the machine have nfs_ops programs of their own."""
    ours = set()
    for fdinfo in Path(f"/proc/{collector_pid}/fdinfo").iterdir():
        try:
            ours.update(int(m) for m in re.findall(r"^prog_id:\s*(\d+)", fdinfo.read_text(), re.M))
        except OSError:
            continue
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], check=True, capture_output=True,
                                      text=True).stdout)
    return sum(p.get("run_cnt", 0) for p in progs if p.get("name") == "nfs_ops" and p.get("id") in ours)


def test_busy_engine_reports_operations_in_batches(engine_bin, tmp_path):
    """Under concurrent load each probe hit carries several operations (the uprobe trap is
    paid per batch, engine/strata_probes.h), and the counts stay exact."""
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        was = f.read().strip()
    engine = Engine(engine_bin, tmp_path, "batch")
    engine.load(duration=0.5)  # files written before anything is traced
    c = Collector("--engine-pid", engine.pid)
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        c.add("op", "nfs.ops", "op")
        report = engine.load(2, False, 4)
        c.flush_now()
        runs = nfs_ops_program_runs(c.proc.pid)
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(was)
        assert c.stop() == 0
        engine.stop()
    ops = counter_totals(c.data("op"))
    ops.pop("null", None)
    ops.pop("mnt_null", None)
    assert ops == client_op_counts(report)
    did = sum(ops.values())
    assert 0 < runs and did / runs >= 2, f"{did} operations in {runs} probe hits"


def test_engine_restart_under_load_is_followed_within_2s(engine_bin, tmp_path):
    first = Engine(engine_bin, tmp_path, "b")
    c = Collector("--engine-pid", first.pid)
    try:
        c.add("op", "nfs.ops", "op")
        before = first.load(duration=1)
        first.stop()
        second = Engine(engine_bin, tmp_path, "b")  # same pool, new process
        try:
            started = time.monotonic()
            status = c.wait_status(lambda s: s["engine_pid"] == second.pid and "nfs" in s["attached"],
                                   timeout=3)
            assert time.monotonic() - started <= 2.0, status
            after = second.load(duration=1, setup=False)
            c.flush_now()
        finally:
            second.stop()
    finally:
        assert c.stop() == 0
    assert counter_totals(c.data("op"))["read"] == before["ops"]["read"] + after["ops"]["read"]
    seconds = [r["t"] for r in c.data("op")]
    assert seconds == sorted(seconds) and len(seconds) == len(set(seconds))


def test_l2arc_and_zil_latency_from_the_real_engine(engine_bin, tmp_path):
    """The engine's own tier probes: every ZIL commit is one zil.latency event, FILE_SYNC
    writes land in nfs.latency[op=write][tier=zil], and L2ARC device reads feed l2arc.latency."""
    engine = Engine(engine_bin, tmp_path, "t", ["--arc-max", "4M", "--cache", f"{tmp_path}/cache:64M",
                                               "--log", f"{tmp_path}/slog:128M", "--sync-interval", "60s"])
    c = Collector("--engine-pid", engine.pid)
    try:
        c.add("zil", "zil.latency")
        c.add("l2", "l2arc.latency")
        engine.load(1, True, 2, "--working-set", "16m")                     # ARC 4M: the rest to L2
        time.sleep(2.5)                                                     # two feeds
        engine.load(2, False, 2, "--working-set", "16m")
        before = engine.stats()["zil"]["zil_commit_count"]
        c.add("tier", "nfs.latency", "tier", "op=write")                    # the stable writes only
        report = engine.load(1, False, 2, "--profile", "write", "--stable", "file_sync", "--io-size", "4k",
                             "--working-set", "16m")
        c.flush_now()
        stats = engine.stats()
    finally:
        assert c.stop() == 0
        engine.stop()
    commits = sum(sum(b.values()) for b in heatmap_totals(c.data("zil")).values())
    assert commits == stats["zil"]["zil_commit_count"] > before
    tiers = {k: sum(b.values()) for k, b in heatmap_totals(c.data("tier")).items()}
    assert sum(tiers.values()) == report["ops"]["write"]
    # the deepest tier counts: a partial-record write that first read the record from the
    # L2ARC or the pool is filed there, the rest under the log
    assert tiers["zil"] >= 0.9 * report["ops"]["write"]
    assert stats["l2arc"]["l2_hits"] > 0
    assert sum(sum(b.values()) for b in heatmap_totals(c.data("l2")).values()) >= stats["l2arc"]["l2_hits"]
