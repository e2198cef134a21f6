"""The collector on the real engine (build/bin/strata-engine, over real TCP) with the real
libnfs load generator (build/bin/strata-load): BPF on the engine's USDT probe counts
exactly the operations the clients performed, and follows an engine restart under load;
file keys are the engine's paths, right after renames, and kept in the archive."""
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from collect_util import Collector, Engine, counter_totals, heatmap_totals, private_copy
from conftest import built, load_floor
from datasets_util import STRATA, strata
from engine_util import NFS_PROG, NO_SATTR, RpcClient, create, diropargs, lookup, xdr_opaque
from strata.datasets import llhist
from strata.datasets.archive import Archive


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


@pytest.mark.view("nfs")
def test_nfs_ops_equal_what_libnfs_clients_did(engine_bin, tmp_path):
    """...and the gauges (arc.size) of an engine serving its stats on a socket of its own
    (serve --stats-socket PATH) are read there (strata-collect --stats-socket PATH). Datasets
    without a key (counted per batch, not per operation) hold what the keyed ones hold. A
    second collector with only counts by op and tier (which copy each operation's 4-byte
    counting key, not the operation: bpf/nfs.bpf.c) counts the same."""
    sock = tmp_path / "own-stats.sock"
    engine = Engine(engine_bin, tmp_path, "a", extra=("--stats-socket", str(sock)))
    c = Collector("--engine-pid", engine.pid, "--stats-socket", sock)
    keys_only = Collector("--engine-pid", engine.pid, "--stats-socket", sock)
    try:
        keys_only.add("op", "nfs.ops", "op")
        keys_only.add("tier", "nfs.ops", "tier")
        keys_only.add("all", "nfs.ops")
        c.add("op", "nfs.ops", "op")
        c.add("client", "nfs.ops", "client")
        c.add("lat", "nfs.latency", "op", "op=read")
        c.add("hm", "arc.accesses", "hit/miss")
        c.add("size", "arc.size")
        c.add("all", "nfs.ops")
        c.add("lat_op", "nfs.latency", "op")
        c.add("lat_all", "nfs.latency")
        c.add("records", "arc.accesses")
        c.add("tier", "nfs.ops", "tier")
        c.add("file", "nfs.ops", "file")
        c.add("lat_file", "nfs.latency", "file")
        report = engine.load(1, True, 2, "--files", "64")
        c.flush_now()
        keys_only.flush_now()
    finally:
        assert c.stop() == 0 and keys_only.stop() == 0
        engine.stop()
    did = client_op_counts(report)
    assert did["read"] > load_floor(1000)
    ops = counter_totals(c.data("op"))
    assert counter_totals(c.data("client")) == {"127.0.0.1": sum(ops.values())}
    assert counter_totals(c.data("all")) == {"": sum(ops.values())}
    by_op = {}
    for buckets in heatmap_totals(c.data("lat_op")).values():
        for b, n in buckets.items():
            by_op[b] = by_op.get(b, 0) + n
    assert heatmap_totals(c.data("lat_all")) == {"": by_op}
    # 64 files: a batch holds more keys of a file dataset than its slot may take of the
    # batch's sums (NFS_SUM_PER_SLOT, bpf/nfs.bpf.c), and those go the single operation's way
    files = counter_totals(c.data("file"))
    assert len(files) >= 64 and sum(files.values()) == sum(ops.values())
    by_file = {}
    for buckets in heatmap_totals(c.data("lat_file")).values():
        for b, n in buckets.items():
            by_file[b] = by_file.get(b, 0) + n
    assert by_file == by_op
    assert sum(counter_totals(c.data("tier")).values()) == sum(ops.values())
    assert counter_totals(c.data("records")) == {"": sum(counter_totals(c.data("hm")).values())}
    for name in ("op", "tier", "all"):
        assert counter_totals(keys_only.data(name)) == counter_totals(c.data(name)), name
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
    assert all(s["drops"] == 0 for s in c.statuses() + keys_only.statuses())


def collector_programs(collector_pid, name):
    """bpftool's records of the BPF programs `name` (nfs_keys, nfs_ops) this collector loaded,
    with their kernel BPF statistics; other collectors on the machine have programs of their own."""
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], check=True, capture_output=True,
                                      text=True).stdout)
    ours = program_runs(collector_pid, None, True)
    return [p for p in progs if p.get("name") == name and p.get("id") in ours]


def nfs_program_runs(collector_pid, name):
    """(runs, run ns) so far of the collector's BPF programs `name`."""
    mine = collector_programs(collector_pid, name)
    return sum(p.get("run_cnt", 0) for p in mine), sum(p.get("run_time_ns", 0) for p in mine)


def test_busy_engine_reports_operations_in_batches(engine_bin, tmp_path):
    """Under concurrent load each probe hit carries several operations (the uprobe trap is
    paid per batch, engine/strata_probes.h), and the counts stay exact. Each batch fires
    both probes, nfs_keys for nfs.ops[op] and nfs_ops for nfs.latency[op]."""
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        was = f.read().strip()
    engine = Engine(engine_bin, tmp_path, "batch")
    engine.load(duration=0.5)  # files written before anything is traced
    c = Collector("--engine-pid", engine.pid)
    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        c.add("op", "nfs.ops", "op")
        c.add("lat", "nfs.latency", "op")
        report = engine.load(2, False, 4)
        c.flush_now()  # the last batch fired by the end of its second (engine/strata_probes.h)
        (runs, keys_ns), (whole, ops_ns) = (nfs_program_runs(c.proc.pid, p) for p in ("nfs_keys", "nfs_ops"))
        fired = engine.stats()["probes"]
    finally:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(was)
        assert c.stop() == 0
        engine.stop()
    ops = counter_totals(c.data("op"))
    assert {op: sum(b.values()) for op, b in heatmap_totals(c.data("lat")).items()} == ops
    ops.pop("null", None)
    ops.pop("mnt_null", None)
    assert ops == client_op_counts(report)
    did = sum(ops.values())
    assert 0 < runs and did / runs >= 2, f"{did} operations in {runs} probe hits"
    # the engine's own count of its batches is each program's hits, and its clock across them
    # holds their BPF time
    assert fired["nfs_ops_hits"] == runs == whole, (fired, runs, whole)
    assert fired["nfs_ops_ns"] >= keys_ns + ops_ns and keys_ns > 0 and ops_ns > 0, (fired, keys_ns, ops_ns)


def test_loop_reports_the_workers_batch_while_every_worker_is_busy(engine_bin, tmp_path):
    """The workers' batch is reported when it comes due (15 ms before the end of the
    wall-clock second its first operation ended in, engine/strata_probes.h) even when no
    worker is free to keep its timer: with 2 workers and `inject-delay nfs 2s`, 4 NULL calls
    at once run in two waves; the first wave's batch must fire while the workers are held
    on the second (the event loop fires it, engine/net.c), not when a worker comes free two
    seconds later."""
    with open("/proc/sys/kernel/bpf_stats_enabled") as f:
        was = f.read().strip()
    engine = Engine(engine_bin, tmp_path, "busy", extra=("--workers", "2"))
    c = Collector("--engine-pid", engine.pid)
    replies, fired, done = [], [], threading.Event()

    def call():
        client = RpcClient(int(engine.nfs_port), timeout=30)
        client.call(NFS_PROG, 0)
        replies.append((time.monotonic(), time.time()))
        client.close()

    def watch(ids):
        """The times the collector's nfs_keys program ran (its run count rose)."""
        last = 0
        while not done.is_set():
            runs = sum(program_runs(c.proc.pid, ids))
            if runs > last:
                fired.append(time.monotonic())
                last = runs
            time.sleep(0.005)

    try:
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write("1")
        c.add("op", "nfs.ops", "op")
        subprocess.run([str(engine_bin), "ctl", "--pid", str(engine.pid), "inject-delay", "nfs", "2s"],
                       check=True, capture_output=True, timeout=10)
        watcher = threading.Thread(target=watch, args=(nfs_program_ids(c.proc.pid, "nfs_keys"),))
        watcher.start()
        calls = [threading.Thread(target=call) for _ in range(4)]
        for t in calls:
            t.start()
        for t in calls:
            t.join()
        time.sleep(0.1)  # the second wave's batch, fired by a worker now free
        done.set()
        watcher.join()
    finally:
        done.set()
        with open("/proc/sys/kernel/bpf_stats_enabled", "w") as f:
            f.write(was)
        assert c.stop() == 0
        engine.stop()
    replies.sort()
    (first, first_wall), mono = replies[0], [t for t, _ in replies]
    assert len(replies) == 4 and mono[2] - mono[1] > 1.8, replies  # two waves, 2 s apart
    assert fired and fired[0] >= first - 0.05, (fired, replies)
    # due by the edge of the first reply's second (its operation ended a little before it,
    # so due at that edge or earlier), and reported while both workers still ran the second
    # wave (their next free moment is its replies): half a second of margin for a slow machine
    due = first + 1 - (first_wall + 0.015) % 1
    assert fired[0] < due + 0.5 and fired[0] < mono[2] - 0.5, (fired, replies)


def nfs_program_ids(collector_pid, name):
    """Ids of the BPF programs `name` this collector loaded."""
    return {p["id"] for p in collector_programs(collector_pid, name)}


def program_runs(collector_pid, ids, all_ids=False):
    """Run counts of the collector's BPF programs of the given ids (fdinfo; kernel BPF
    statistics); all_ids: {id: count} of every program it holds."""
    runs = {}
    for fdinfo in Path(f"/proc/{collector_pid}/fdinfo").iterdir():
        try:
            text = fdinfo.read_text()
        except OSError:
            continue
        prog = re.search(r"^prog_id:\s*(\d+)", text, re.M)
        if prog and "prog_type:" in text:
            count = re.search(r"^run_cnt:\s*(\d+)", text, re.M)
            runs[int(prog.group(1))] = int(count.group(1)) if count else 0
    return runs if all_ids else [n for i, n in runs.items() if i in ids]


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


@pytest.mark.view("cache")
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


# --- file keys as paths (engine/names.h, collectors/engine_names.c) -----------------------

def nfs_names(engine, folder=""):
    """Names in a folder of the export, listed by libnfs's nfs-ls (a client of its own)."""
    url = f"nfs://127.0.0.1/export/{folder}?nfsport={engine.nfs_port}&mountport={engine.mount_port}"
    out = subprocess.run(["nfs-ls", url], check=True, capture_output=True, text=True, timeout=60).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def getattrs(client, fh, n):
    for _ in range(n):
        assert client.call(NFS_PROG, 1, xdr_opaque(fh)).u32() == 0


def test_file_keys_of_an_engine_run_are_paths_in_the_export(engine_bin, tmp_path):
    engine = Engine(engine_bin, tmp_path, "a")
    c = Collector("--engine-pid", engine.pid)
    try:
        c.add("ops", "nfs.ops", "file")
        c.add("reads", "nfs.latency", "file", "op=read")
        report = engine.load(duration=1)
        c.flush_now()
        listed = nfs_names(engine)
    finally:
        assert c.stop() == 0
        engine.stop()
    ops, reads = counter_totals(c.data("ops")), heatmap_totals(c.data("reads"))
    assert sum(sum(h.values()) for h in reads.values()) == client_op_counts(report)["read"]
    assert len(reads) >= 2
    for key in set(ops) | set(reads):
        if key in ("export:/", "object:0"):  # the root (LOOKUP, FSINFO...); MOUNT and NULL name no file
            continue
        m = re.fullmatch(r"export:/([^/]+)", key)
        assert m and m.group(1) in listed, (key, sorted(listed))
    assert set(reads) <= set(ops)


def test_a_renamed_file_keeps_its_ops_and_never_lends_its_old_name(engine_bin, tmp_path):
    """X is /a, then renamed to /b while a new file Y takes /a: X's ops show under its new
    name, Y's under /a, and no op of X ever under /a after the rename. A filter by path
    follows the object it named when the dataset was added."""
    engine = Engine(engine_bin, tmp_path, "a")
    client = RpcClient(int(engine.nfs_port))
    c = Collector("--engine-pid", engine.pid)
    try:
        root = client.mount("/export")
        st, x = create(client, root, "a")
        assert st == 0
        c.add("getattr", "nfs.ops", "file", "op=getattr")
        c.add("x_only", "nfs.ops", "-", "op=getattr", "file=export:/a")
        getattrs(client, x, 7)
        c.flush_now()
        before = counter_totals(c.data("getattr"))
        assert before == {"export:/a": 7}, before

        assert client.call(NFS_PROG, 14, diropargs(root, "a") + diropargs(root, "b")).u32() == 0  # RENAME
        st, y = create(client, root, "a")
        assert st == 0 and y != x
        getattrs(client, x, 5)
        getattrs(client, y, 3)
        time.sleep(1.1)  # the next records cover only ops after the rename
        c.flush_now()
        after = counter_totals(c.data("getattr"))
        after = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}
        assert after == {"export:/b": 5, "export:/a": 3}, after

        assert client.call(NFS_PROG, 12, diropargs(root, "b")).u32() == 0  # REMOVE X
        getattrs(client, y, 2)
        c.flush_now()
    finally:
        client.close()
        assert c.stop() == 0
        engine.stop()
    assert counter_totals(c.data("x_only")) == {"": 12}
    final = counter_totals(c.data("getattr"))
    assert final["export:/a"] == 7 + 3 + 2 and final["export:/b"] == 5


def test_an_old_archive_prints_the_names_after_the_engine_and_the_file_are_gone(engine_bin, tmp_path):
    archive = str(tmp_path / "a.db")
    name = "nfs.ops[op=getattr][file]"
    assert strata("datasets", "create", name, "--archive", archive).returncode == 0
    engine = Engine(engine_bin, tmp_path, "a")
    client = RpcClient(int(engine.nfs_port))
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    collect = subprocess.Popen([STRATA, "collect", "--archive", archive, "--engine-pid", str(engine.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        root = client.mount("/export")
        assert client.call(NFS_PROG, 9, diropargs(root, "dir") + NO_SATTR).u32() == 0  # MKDIR
        st, d = lookup(client, root, "dir")
        st, f = create(client, d, "kept.dat")
        assert st == 0
        deadline = time.time() + 20
        while True:  # until the collector has attached and counted some of them
            getattrs(client, f, 10)
            time.sleep(0.5)
            with Archive.open(archive) as a:
                r = a.query(name, int(time.time()) - 60, int(time.time()) + 1)
                if "export:/dir/kept.dat" in r.keys:
                    break
            assert time.time() < deadline and collect.poll() is None, collect.stderr.read() if collect.poll() else ""
        assert client.call(NFS_PROG, 12, diropargs(d, "kept.dat")).u32() == 0  # REMOVE
    finally:
        client.close()
        collect.send_signal(signal.SIGINT)
        collect.wait(timeout=20)
        engine.stop()
    shown = strata("breakdown", name, "--archive", archive, "--json", "--last", "1h")
    assert shown.returncode == 0, shown.stderr
    assert "export:/dir/kept.dat" in shown.stdout
