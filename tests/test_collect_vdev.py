"""The vdev layer (bpf/vdev.bpf.c on the engine's strata:vdev_io_done probe): exact counts,
buckets and filters from the probe fixture; and on the real engine, its pool on two loop
devices, with the HDD latency model and real libnfs clients, vdev.latency shows the model's
disk band where disk.latency of the same loop devices shows the loop devices' own time, and
vdev.ops counts exactly the vdev I/Os the engine counted."""
import contextlib
import tempfile
import time

from collect_util import Collector, Engine, Fixture, counter_totals, heatmap_totals, loop_device, private_copy
import pytest

from conftest import built
from strata.datasets import llhist

MS = 1_000_000


def quiet_vdev_io(engine, settle=1.5, timeout=60):
    """The engine's per-vdev I/O counters once they have not moved for `settle` seconds
    (its txg syncs done)."""
    last, since, deadline = None, time.monotonic(), time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = engine.stats()["vdev_io"]
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= settle:
            return now
        time.sleep(0.25)
    raise AssertionError(f"the engine's vdev I/O did not settle within {timeout}s")


def median(buckets: dict) -> int:
    """Lower edge of the bucket holding the median event."""
    half, seen = sum(buckets.values()) / 2, 0
    for b in sorted(buckets):
        seen += buckets[b]
        if seen >= half:
            return llhist.lower(b)
    return 0


@pytest.mark.view("vdev")
def test_vdev_counts_buckets_and_filters_are_exact(tmp_path):
    fixture = Fixture(private_copy(built("tests/strata-probe-fixture"), tmp_path))
    c = Collector("--engine-pid", fixture.pid)
    try:
        c.add("ops", "vdev.ops", "vdev")
        c.add("lat", "vdev.latency", "op", "vdev=1")
        c.add("size", "vdev.size", "vdev", "op=write")
        assert fixture.semaphore("vdev_io_done") == 1
        assert fixture.ask("vdev 0 0 7 5000 131072") == 7     # vdev 0: 7 reads of 5 ms
        assert fixture.ask("vdev 1 1 3 300 8192") == 3        # vdev 1: 3 writes of 300 us
        assert fixture.ask("vdev 1 2 2 12000 0") == 2         # vdev 1: 2 flushes of 12 ms
        c.flush_now()
        for ident in ("ops", "lat", "size"):
            c.remove(ident)
        assert fixture.semaphore("vdev_io_done") == 0           # suspended: the probe costs nothing
    finally:
        assert c.stop() == 0
        fixture.stop()
    assert counter_totals(c.data("ops")) == {"0": 7, "1": 5}
    assert heatmap_totals(c.data("lat")) == {"write": {llhist.bucket(300_000): 3},
                                             "flush": {llhist.bucket(12_000_000): 2}}
    assert heatmap_totals(c.data("size")) == {"1": {llhist.bucket(8192): 3}}


def test_vdev_latency_shows_the_hdd_model_and_counts_match_the_engine(tmp_path):
    engine_bin = private_copy(built("bin/strata-engine"), tmp_path)
    with contextlib.ExitStack() as stack:
        devs = [stack.enter_context(loop_device(stack.enter_context(tempfile.TemporaryDirectory(dir="/dev/shm"))))
                for _ in range(2)]
        engine = Engine(engine_bin, tmp_path, "v", ["--vdev-model", "hdd", "--arc-max", "4M",
                                                    "--sync-interval", "1s"], vdevs=[f"/dev/{d}" for d in devs])
        stack.callback(engine.stop)
        c = Collector("--engine-pid", engine.pid)
        try:
            c.add("ops", "vdev.ops", "vdev")
            c.add("byop", "vdev.ops", "op")
            c.add("lat", "vdev.latency", "op")
            c.add("size", "vdev.size", "vdev", "op=read")
            for i, d in enumerate(devs):
                c.add(f"disk{i}", "disk.latency", "op", f"device={d}")
            c.wait_status(lambda s: {"vdev", "disk"} <= set(s["attached"]))
            before = quiet_vdev_io(engine)
            engine.load(2, True, 2, "--working-set", "24m")   # ARC 4M: reads go to the pool
            after = quiet_vdev_io(engine)
            c.flush_now()
        finally:
            assert c.stop() == 0
    done = [{k: a[k] - b[k] for k in a} for a, b in zip(after, before)]
    by_vdev = counter_totals(c.data("ops"))
    assert by_vdev == {str(i): sum(d.values()) for i, d in enumerate(done) if sum(d.values())}
    by_op = counter_totals(c.data("byop"))
    assert by_op == {op: n for op, n in (("read", sum(d["reads"] for d in done)),
                                         ("write", sum(d["writes"] for d in done)),
                                         ("flush", sum(d["flushes"] for d in done))) if n}
    assert by_op["read"] > 50 and by_op["write"] > 0

    vdev_reads = heatmap_totals(c.data("lat"))["read"]
    disk_reads = {}
    for i in range(len(devs)):
        for b, n in heatmap_totals(c.data(f"disk{i}")).get("read", {}).items():
            disk_reads[b] = disk_reads.get(b, 0) + n
    assert sum(vdev_reads.values()) == by_op["read"]
    # random 128K reads on the modelled spindle: settle + seek + rotation, mostly 2-10 ms
    assert 1 * MS <= median(vdev_reads) <= 20 * MS, vdev_reads
    # the same reads on the loop devices below: their own time, far below the model's band
    # (the block layer may merge two adjacent reads into one request)
    assert sum(disk_reads.values()) >= 0.9 * by_op["read"], (sum(disk_reads.values()), by_op["read"])
    assert median(disk_reads) <= median(vdev_reads) / 4, (disk_reads, vdev_reads)
    sizes = heatmap_totals(c.data("size"))
    assert sum(n for key in sizes.values() for n in key.values()) == by_op["read"]
