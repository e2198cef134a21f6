"""nfsd.* on the kernel's own NFS server, in a kernel-matrix guest (tests/vm/): Debian's
kernel with its nfsd module, one libnfs client (strata-load) on loopback, and the real
collector (tests/nfsd_guest.py does the guest's part). nfsd.ops by op equals nfsd's own
count per procedure (/proc/net/rpc/nfsd) exactly, and wire.ops on the same requests
where the wire layer loads, whose median latency is at least nfsd's; the collector is
started and asked for nfsd.* before nfsd's modules are loaded (the datasets wait and are
collected once nfsd starts), and strata doctor offers the nfsd view once nfsd runs. The guest starts with the session (tests/vm/jobs.py). KERNELS (as
for tests/test_kernels.py, default "6.1") chooses the kernels."""
import json
import os
import shutil
import time

import pytest

from strata.datasets import llhist
from vm import guest, jobs, kernels, matrix

KERNELS = os.environ.get("KERNELS", "6.1").split()
LOAD_SECONDS = 8


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
@pytest.mark.parametrize("kernel", [k for k in KERNELS if k != "host"])
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
    for name in ("op", "client", "version", "status", "latency", "size"):
        assert adds[name]["type"] == "ack", (name, adds[name])
    assert res["load"]["rc"] == 0, res["load"]
    assert "sunrpc:svc_stats_latency" in res["status"]["probes"], res["status"]

    # nfsd.ops by op: exactly nfsd's own per-procedure counts
    seen = res["seen"]
    assert res["proc3"].get("read", 0) > 50 and res["proc3"].get("write", 0) > 20, res["proc3"]
    assert seen["op"] == res["proc3"], (seen["op"], res["proc3"])
    total = sum(res["proc3"].values())
    # the other breakdowns and the heat maps count the same requests
    assert seen["client"] == {"127.0.0.1": total}, seen["client"]
    assert seen["version"] == {"nfs3": total}, seen["version"]
    assert sum(seen["status"].values()) == total and seen["status"].get("ok", 0) > 0, seen["status"]
    assert seen["latency"] == res["proc3"], seen["latency"]
    assert seen["size"] == res["proc3"], seen["size"]
    # an 8 KiB READ or WRITE: 8 KiB of data and the RPC and NFS headers of call and reply
    for op in ("read", "write"):
        assert 8192 < median(res["heatmaps"]["size"][op]) < 8192 + 512, (op, res["heatmaps"]["size"][op])

    # the wire view, where it loads, on the same requests (MOUNT calls go to mountd, not nfsd)
    if adds["wire"]["type"] == "ack":
        wire = {op: n for op, n in seen["wire"].items() if not op.startswith("mnt") and op != "umnt"}
        assert wire == seen["op"], (wire, seen["op"])
        # the wire's time holds nfsd's (plus the network stack and the wait for a thread)
        for op in ("read", "write"):
            nfsd_p50, wire_p50 = (median(res["heatmaps"][name][op]) for name in ("latency", "wire_latency"))
            assert wire_p50 >= nfsd_p50, (op, wire_p50, nfsd_p50)
    else:
        assert "kernel lacks" in adds["wire"]["message"], adds["wire"]
    measured.parent.mkdir(parents=True, exist_ok=True)
    measured.write_text(json.dumps({"release": r.release, "state": "ok", "measured": int(time.time())}) + "\n")
