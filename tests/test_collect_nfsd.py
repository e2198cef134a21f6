"""nfsd.* on the kernel's own NFS server, in a kernel-matrix guest (tests/vm/): Debian's
kernel with its nfsd module, NFSv3 libnfs clients (strata-load) each in its own network
namespace, one NFSv4.0 libnfs client (tests/nfs4_ops) on loopback, and the real
collector (tests/nfsd_guest.py does the guest's part). Checked against nfsd's own
accounting (/proc/net/rpc/nfsd): nfsd.ops by op equals its per-procedure counts for
NFSv3, its COMPOUND count for NFSv4 and, where nfsd's module BTF lets the main op be
read, its per-op counts (proc4ops); against what each client says it sent, per client
and op; against the wire view on the same requests, per client and op, whose median
latency is at least nfsd's; the export breakdown names each export by its path; the
layer under nfsd (nfsd.io.*) counts one file read or write per READ or WRITE, and with
the page cache dropped the disk layer's reads under it equal the device's sysfs count;
nfsd.queue counts every request nfsd.latency does, and its median is within the wire's;
with readahead off, after drop_caches, READs are nfsd.*[tier] and nfsd.io.*[tier] disk
cold and cache warm, against /proc/diskstats.
The collector is started and asked for nfsd.* before nfsd's modules are loaded (the
datasets wait and are collected once nfsd starts), and strata doctor offers the nfsd
view once nfsd runs. The guest starts with the session (tests/vm/jobs.py). KERNELS (as
for tests/test_kernels.py, default "6.1-security") chooses the kernels; test ids are their releases."""
import json
import os
import shutil
import time

from click.testing import CliRunner

import pytest

from strata.cli.main import cli
from strata.datasets import llhist
from strata.views.time_went import mount_ops
from test_time_went import summed
from test_show_every_dataset import write_archive
from vm import guest, jobs, kernels, matrix

KERNELS = kernels.distinct([k for k in os.environ.get("KERNELS", "6.1-security").split() if k != "host"])
LOAD_SECONDS = 8


def nfs(counts: dict) -> dict:
    """counts ({op: n}) without MOUNT's procedures (mountd answers them, not nfsd)."""
    return {op: n for op, n in counts.items() if not op.startswith("mnt") and op != "umnt"}


def median(counts: dict) -> int:
    """The lower bound of a heat map's median bucket ({bucket: events})."""
    total, seen = sum(counts.values()), 0
    for b in sorted(counts, key=int):
        seen += counts[b]
        if 2 * seen >= total:
            return llhist.lower(int(b))
    raise AssertionError("an empty heat map")


def run_guest(kernel: str):
    folder = kernels.VMDIR / "runs" / f"nfsd-{kernel}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return guest.run(kernel, f"cd {kernels.REPO} && STRATA_GUEST=1 PYTHONPATH=tests .venv/bin/python "
                     f"tests/nfsd_guest.py {folder} {LOAD_SECONDS}", folder, timeout=600)


def start_guest(item):
    kernel = item.callspec.params["kernel"]
    jobs.submit(f"nfsd-{kernel}", run_guest, kernel)


@pytest.mark.timeout(1500)
@pytest.mark.parametrize("kernel", [k for k, _ in KERNELS], ids=[rel for _, rel in KERNELS])
def test_nfsd_ops_equal_nfsds_own_counts_and_the_wire_view(kernel):
    r = jobs.result(f"nfsd-{kernel}", run_guest, kernel)  # started with the session: the guest runs beside the suite
    measured = matrix.RESULTS / "nfsd" / f"{kernel}.json"  # the README's nfsd column, written once all passed
    measured.unlink(missing_ok=True)
    assert r.rc == 0, r.output[-3000:]
    folder = r.folder
    res = json.loads((folder / "nfsd.json").read_text())

    # added before nfsd runs: the nfsd.* datasets wait, saying why (not a missing kernel feature) ...
    nfsd_sets = sorted(name for name, add in res["adds"].items() if name not in ("wire", "wire_latency"))
    waiting = res["waiting"]
    assert sorted(waiting["waiting"]) == nfsd_sets and "nfsd" not in waiting["attached"], waiting
    assert any(e.startswith("nfsd is not running") and "kernel lacks" not in e for e in waiting["errors"]), waiting
    # ... and are collected once it starts, with no restart (the counts below)
    assert res["status"]["waiting"] == [] and "nfsd" in res["status"]["attached"], res["status"]

    # strata doctor, nfsd running: its row, and the nfsd view among kernel nfsd's views here
    checks = {c["name"]: c for c in res["doctor"]["checks"]}
    assert checks["kernel nfsd"]["ok"] and "nfsd.*" in checks["kernel nfsd"]["detail"], checks["kernel nfsd"]
    server = next(s for s in res["doctor"]["servers"] if s["server"] == "kernel nfsd")
    assert server["installed"] and "nfsd" in server["here"], server

    adds = res["adds"]
    for name, reply in adds.items():
        assert reply["type"] == "ack", (name, reply)
    assert res["load"]["rc"] == 0, res["load"]
    assert res["nfs4"]["rc"] == 0, res["nfs4"]
    assert "sunrpc:svc_stats_latency" in res["status"]["probes"], res["status"]
    seen, report, sent4 = res["seen"], res["load"]["report"], res["nfs4"]["sent"]
    module_btf = "nfsd" in res["btf"]  # nfsd's NFSv4 types: the main op, status and export of a COMPOUND

    # NFSv4: every COMPOUND, by main op as the client sent them and as nfsd's per-op counts say
    compounds = res["compounds"]
    assert compounds == sum(sent4[k] for k in ("getattr", "read", "write", "access", "lookup")), (compounds, sent4)
    assert sum(seen["v4op"].values()) == compounds, (seen["v4op"], compounds)
    if module_btf:
        assert seen["v4op"] == {k: sent4[k] for k in ("getattr", "read", "write", "access", "lookup")}, \
            (seen["v4op"], sent4)
        p4 = res["proc4ops"]
        for op in ("read", "write", "access", "getattr"):  # one such op in each compound of that main op
            assert seen["v4op"][op] == p4[op], (op, seen["v4op"], p4)
        assert seen["v4op"]["lookup"] == p4["lookup"] - 1, (seen["v4op"], p4)  # the first compound walks 2 names
        assert seen["v4status"].get("ok", 0) == sent4["ok"], (seen["v4status"], sent4)
        assert sum(seen["v4status"].values()) - seen["v4status"].get("ok", 0) == sent4["errors"], seen["v4status"]
    else:
        assert seen["v4op"] == {"compound": compounds}, seen["v4op"]
        assert seen["v4status"] == {"unread": compounds}, seen["v4status"]

    # NFSv3: nfsd.ops by op is exactly nfsd's own per-procedure count
    v3 = {op: n - seen["v4op"].get(op, 0) for op, n in seen["op"].items() if n != seen["v4op"].get(op, 0)}
    assert res["proc3"].get("read", 0) > 50 and res["proc3"].get("write", 0) > 20, res["proc3"]
    assert v3 == res["proc3"], (v3, res["proc3"])
    total3 = sum(res["proc3"].values())
    # the other breakdowns and the heat maps count the same requests
    assert seen["version"] == {"nfs3": total3, "nfs4": compounds}, seen["version"]
    assert sum(seen["status"].values()) == total3 + compounds and seen["status"].get("ok", 0) > 0, seen["status"]
    assert seen["latency"] == seen["op"] and seen["size"] == seen["op"], (seen["latency"], seen["size"])
    # an 8 KiB READ or WRITE: 8 KiB of data and the RPC and NFS headers of call and reply
    for op in ("read", "write"):
        assert 8192 < median(res["heatmaps"]["size"][op]) < 8192 + 512, (op, res["heatmaps"]["size"][op])

    # the layer under nfsd: one read or write of a file per NFSv3 READ or WRITE, and per NFSv4
    # one that succeeded (those refused in the grace period read nothing)
    for op in ("read", "write"):
        io = seen["io_op"].get(op, 0)
        if module_btf:
            assert io == res["proc3"].get(op, 0) + seen["v4ok"].get(op, 0), (op, io, res["proc3"], seen["v4ok"])
        else:
            assert res["proc3"].get(op, 0) <= io <= res["proc3"].get(op, 0) + sent4[op], (op, io, res["proc3"])
    assert set(seen["io_op"]) == {"read", "write"}, seen["io_op"]
    assert sum(seen["io_latency"].values()) == sum(seen["io_op"].values()), seen["io_latency"]
    # the page cache dropped: nfsd's reads of the files again one per READ, the device's reads
    # under them as many as its sysfs count, and some of nfsd's reads wait as long as the disk
    cold = res["cold"]
    assert cold["load"]["rc"] == 0 and all(a["type"] == "ack" for a in cold["adds"].values()), cold
    assert cold["seen"]["io_op"] == {"read": cold["nfs_reads"]} and cold["nfs_reads"] > 0, cold
    assert cold["seen"]["disk"].get("read", 0) == cold["sysfs_reads"] > 0, (cold["seen"]["disk"], cold["sysfs_reads"])
    disk_p50 = median(cold["heatmaps"]["disk_latency"]["read"])
    waited = sum(n for b, n in cold["heatmaps"]["io_latency"]["read"].items() if llhist.lower(int(b)) >= disk_p50)
    assert waited >= 1, (disk_p50, cold["heatmaps"]["io_latency"]["read"])

    # nfsd.queue beside nfsd.latency: every request's wait for a thread (the load's transports
    # were all queued after the collector attached), within the wire's time of the same requests
    assert seen["queue"] == seen["latency"], (seen["queue"], seen["latency"])
    for op in ("read", "write"):
        queue_p50, wire_p50 = (median(res["heatmaps"][name][op]) for name in ("queue", "wire_latency"))
        assert 0 < queue_p50 <= wire_p50, (op, queue_p50, wire_p50)

    # per client: each NFSv3 client from its own address, its requests per op as it counted them
    clients = res["clients"]
    assert len(clients) == 3 and len(set(clients)) == 3, clients
    by_addr = {c["addr"]: c for c in report["clients"]}
    assert sorted(by_addr) == clients, (sorted(by_addr), clients)
    assert seen["client"] == {**{a: sum(seen[f"op:{a}"].values()) for a in clients}, "127.0.0.1": compounds}, \
        seen["client"]
    for addr in clients:
        c = by_addr[addr]
        sent = {op: c["ops"].get(op, 0) + c["setup"]["ops"].get(op, 0) for op in {*c["ops"], *c["setup"]["ops"]}}
        assert seen[f"op:{addr}"] == {op: n for op, n in sent.items() if n}, (addr, seen[f"op:{addr}"], sent)

    # the export of each request's file handle, by the path nfsd exports it under
    null = res["proc3"].get("null", 0)
    export4 = "/tmp/nfsd-v4" if module_btf else "none"
    want = {"/tmp/nfsd-export": total3 - null, export4: compounds}
    if null:
        want["none"] = want.get("none", 0) + null
    assert seen["export"] == want, (seen["export"], want, res["exports"])

    # the wire view (it loads on every kernel: bounded programs without bpf_loop) on the same
    # requests (MOUNT calls go to mountd, not nfsd)
    wire = nfs(seen["wire"])
    if not module_btf:
        # nfsd.ops keys a COMPOUND "compound" then, where the wire reads its main op: what the
        # wire saw beyond the NFSv3 clients' requests is the NFSv4 client's compounds
        v3 = {}
        for addr in clients:
            for op, n in nfs(seen[f"wire:{addr}"]).items():
                v3[op] = v3.get(op, 0) + n
        v4 = sum(wire.values()) - sum(v3.values())
        wire = {**v3, "compound": v4} if v4 else v3
    assert wire == seen["op"], (seen["wire"], seen["op"])
    for addr in clients:
        assert nfs(seen[f"wire:{addr}"]) == seen[f"op:{addr}"], (addr, seen[f"wire:{addr}"], seen[f"op:{addr}"])
    # the wire's time holds nfsd's (plus the network stack and the wait for a thread)
    heat = res["heatmaps"]
    for op in ("read", "write"):
        nfsd_p50, wire_p50 = (median(heat[name][op]) for name in ("latency", "wire_latency"))
        assert wire_p50 >= nfsd_p50, (op, wire_p50, nfsd_p50)
        for addr in clients:
            nfsd_p50, wire_p50 = (median(heat[f"{name}:{addr}"][op]) for name in ("latency", "wire_latency"))
            assert wire_p50 >= nfsd_p50, (addr, op, wire_p50, nfsd_p50)
    measured.parent.mkdir(parents=True, exist_ok=True)
    measured.write_text(json.dumps({"release": r.release, "state": "ok", "measured": int(time.time())}) + "\n")


@pytest.mark.parametrize("kernel", [k for k, _ in KERNELS], ids=[rel for _, rel in KERNELS])
def test_nfsd_reads_are_tiered_disk_when_cold_and_cache_when_warm(kernel):
    """nfsd.ops[tier] and nfsd.io.ops[tier] (bpf/tier.h) of the READs of tests/nfsd_guest.py's
    tier_passes: readahead off and the page cache dropped, each READ waits for the device
    (disk, and the device reads at least one block per READ); right after, the file cached,
    each is cache and the device reads nothing."""
    r = jobs.result(f"nfsd-{kernel}", run_guest, kernel)
    assert r.rc == 0, r.output[-3000:]
    tier = json.loads((r.folder / "nfsd.json").read_text())["tier"]
    assert all(a["type"] == "ack" for a in tier["adds"].values()), tier["adds"]
    print("nfsd tier passes:", tier["passes"])
    for name, want in (("cold", "disk"), ("warm", "cache")):
        p = tier["passes"][name]
        reads = p["nfs_reads"]
        assert p["rc"] == 0 and reads >= 50, (name, p)
        for stat in ("tier", "io_tier"):
            assert sum(p[stat].values()) == reads and p[stat][want] >= 0.99 * reads, (name, stat, p)
        if want == "disk":
            assert p["device_reads"] >= 0.99 * reads, (name, p)
        else:
            assert p["device_reads"] <= 0.01 * reads, (name, p)


@pytest.mark.parametrize("kernel", [k for k, _ in KERNELS], ids=[rel for _, rel in KERNELS])
def test_time_nfsd_stacks_network_queue_service_and_file_system(kernel, tmp_path):
    """`strata show time:nfsd --json` over the guest's nfsd.latency[op], nfsd.queue[op],
    nfsd.io.latency[op] and wire.latency[op] records in an archive: per NFS request, the queue's
    mean is nfsd.queue's summed time over nfsd's requests, service and file system add up to
    nfsd.latency's, the file system's is nfsd.io.latency's, the disk (no disk dataset) is named
    missing, and where the wire view counted the requests nfsd did (MOUNT's left out) the
    network part makes the stack's sum the wire's mean, within one bucket's width; without the
    wire's busiest second the part is left out, in one line."""
    r = jobs.result(f"nfsd-{kernel}", run_guest, kernel)
    assert r.rc == 0, r.output[-3000:]
    records = json.loads((r.folder / "nfsd.json").read_text())["records"]
    first, end = write_archive(tmp_path / "a.db", records)
    ops, service_ns = summed(records["nfsd.latency[op]"])
    _, queue_ns = summed(records["nfsd.queue[op]"])
    _, io_ns = summed(records["nfsd.io.latency[op]"])
    out = CliRunner().invoke(cli, ["show", "time:nfsd", "--json", "--archive", str(tmp_path / "a.db"),
                                   "--since", str(first), "--until", str(end)])
    doc = json.loads(out.output)
    mean = {row["key"]: row["rate"] for row in doc["table"]}
    wire_ops, wire_ns = summed(records["wire.latency[op]"], skip=mount_ops())
    queued, _ = summed(records["nfsd.queue[op]"])
    print("time:nfsd means per op (ns):", mean, "wire:", wire_ns / wire_ops, wire_ops, "nfsd:", ops, doc["notes"])
    if wire_ops == queued == ops:
        assert list(mean) == ["network", "queue", "service", "file system"] and doc["notes"] == [], doc
        wire_mean = wire_ns / wire_ops
        width = llhist.upper(llhist.bucket(int(wire_mean))) - llhist.lower(llhist.bucket(int(wire_mean)))
        assert mean["network"] > 0 and abs(sum(mean.values()) - wire_mean) <= width, (mean, wire_mean, width)
        # the wire's busiest second left out: the views no longer count the same ops, said in one line
        busiest = max(records["wire.latency[op]"], key=lambda r: summed([r])[0])
        fewer = {**records, "wire.latency[op]": [r for r in records["wire.latency[op]"] if r is not busiest]}
        write_archive(tmp_path / "b.db", fewer)
        out = CliRunner().invoke(cli, ["show", "time:nfsd", "--json", "--archive", str(tmp_path / "b.db"),
                                       "--since", str(first), "--until", str(end)])
        part = json.loads(out.output)
        assert "network" not in [r["key"] for r in part["table"]] and len(part["notes"]) == 1, part
        assert part["notes"][0].startswith("network left out: the views count different"), part["notes"]
    else:
        assert "network" not in mean and doc["notes"][0].startswith("network left out"), doc
    mean.pop("network", None)
    assert list(mean) == ["queue", "service", "file system"] and doc["missing"] == ["disk"], doc["table"]
    assert ops > 1000 and doc["events"] == ops, (ops, doc["events"])
    # (a column whose file reads outlast its requests, split across a second, is capped at them)
    assert mean["queue"] == pytest.approx(queue_ns / ops)
    assert mean["file system"] == pytest.approx(io_ns / ops, rel=0.01), (mean, io_ns / ops)
    assert mean["service"] + mean["file system"] == pytest.approx(service_ns / ops), mean
