"""Disk layer, real BPF on real block tracepoints: disk.ops against the kernel's own
/sys/block stats, disk.latency against Debian's libbpf-tools biolatency, and datasets
coming and going without disturbing the others."""
import json
import re
import signal
import subprocess
from pathlib import Path

import pytest

from collect_util import (Collector, Fixture, block_stat, counter_totals, disk_settled, heatmap_totals,
                          loop_device, private_copy, process_links, short_by_op)
from conftest import IN_GUEST, built
from strata.datasets import llhist


@pytest.fixture
def loopdev(tmp_path):
    with loop_device(tmp_path) as dev:
        yield dev


def dd(dev, direction, count, bs="4k", flags=""):
    io = ["if=/dev/zero", f"of=/dev/{dev}", "oflag=direct" + flags] if direction == "write" else \
        [f"if=/dev/{dev}", "of=/dev/null", "iflag=direct"]
    subprocess.run(["dd", *io, f"bs={bs}", f"count={count}", "status=none"], check=True)


def recursion_misses(prefix):
    """Runs of the loaded BPF programs named prefix* the kernel skipped as recursive."""
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "--json"], capture_output=True,
                                      text=True, check=True).stdout)
    return sum(p.get("recursion_misses", 0) for p in progs if p.get("name", "").startswith(prefix))


@pytest.mark.view("disk")
def test_disk_ops_match_sysfs_while_other_datasets_come_and_go(loopdev, tmp_path):
    """disk.ops adds up to /sys/block exactly: each request counted by its op, or as op
    "missed" when the kernel did not run the completion program for it (6.18 skips one
    in 30,000 to 90,000 on a loop device; found when the request is issued again)."""
    fixture = Fixture(private_copy(built("tests/strata-probe-fixture"), tmp_path))
    c = Collector("--engine-pid", fixture.pid)
    try:
        c.add("byop", "disk.ops", "op", f"device={loopdev}")
        c.add("bydev", "disk.ops", "device", f"device={loopdev}")
        c.add("lat", "disk.latency", "-", f"device={loopdev}")
        c.wait_status(lambda s: "disk" in s["attached"])
        before = block_stat(loopdev)
        dd(loopdev, "write", 300)
        for round_ in range(3):  # another layer's dataset on and off, disk I/O throughout
            c.add(f"nfs{round_}", "nfs.ops", "op")
            assert fixture.semaphore("nfs_keys") == 1
            dd(loopdev, "read", 200)
            c.remove(f"nfs{round_}")
            assert fixture.semaphore("nfs_keys") == 0
            dd(loopdev, "write", 50)
        # a disk dataset on and off: the others keep counting
        c.add("size", "disk.size", "op", f"device={loopdev}")
        dd(loopdev, "read", 100, bs="16k")
        c.remove("size")
        after = block_stat(loopdev)
        kernel, counted = disk_settled(c, loopdev, before, "byop")
        misses = recursion_misses("disk_complete")
    finally:
        assert c.stop() == 0
        fixture.stop()
    print(f"disk.ops exactness: kernel {kernel}, counted {counted}, recursion misses {misses}")
    assert {k: after[k] - before[k] for k in before} == {"read": 700, "write": 450, "discard": 0, "flush": 0}
    missed = counted.get("missed", 0)
    short = short_by_op(kernel, counted)
    assert min(short.values()) >= 0 and sum(short.values()) == missed, \
        f"kernel {kernel}, counted {counted}, runs the kernel skipped (recursion) {misses}"
    assert counter_totals(c.data("bydev")) == {loopdev: sum(kernel.values())}
    assert sum(heatmap_totals(c.data("lat"))[""].values()) == sum(kernel.values()) - missed
    assert all(s["drops"] == 0 for s in c.statuses()), c.statuses()[-1]


def test_disk_sync_writes_count_the_flushes_the_device_did(loopdev):
    """O_SYNC writes: the flush requests match /sys/block exactly. The kernel's stats also
    count, per preflush, a zero-length write that the block layer completes itself without
    issuing it to the device; disk.ops counts requests the device served, so it has the
    data writes only. disk.offset has the data writes alone: a flush has no offset."""
    c = Collector()
    try:
        c.add("byop", "disk.ops", "op", f"device={loopdev}")
        c.add("off", "disk.offset", "op", f"device={loopdev}")
        c.wait_status(lambda s: "disk" in s["attached"])
        before = block_stat(loopdev)
        dd(loopdev, "write", 50, flags=",sync")
        after = block_stat(loopdev)
        c.flush_now()
    finally:
        assert c.stop() == 0
    ours = counter_totals(c.data("byop"))
    assert ours.get("flush", 0) == after["flush"] - before["flush"] > 0
    assert ours.get("write", 0) + ours.get("sync", 0) == 50
    assert after["write"] - before["write"] >= 50
    offsets = heatmap_totals(c.data("off"))
    assert "flush" not in offsets and sum(sum(b.values()) for b in offsets.values()) == 50
    assert max(max(b) for b in offsets.values()) <= llhist.bucket(50 * 4096)


def read_ticks(dev):
    """/sys/block/DEV/stat: completed reads, and the ms they took (each request's completion
    minus its start_time_ns, summed by the kernel)."""
    f = [int(x) for x in Path(f"/sys/block/{dev}/stat").read_text().split()]
    return f[0], f[3]


def bucket_ns(buckets):
    """The sum of a heat map's values, each taken at its bucket's middle (within 5 %)."""
    return sum((llhist.lower(b) + llhist.upper(b)) / 2 * n for b, n in buckets.items())


@pytest.mark.view("disk")
def test_disk_queue_and_latency_add_up_to_the_kernels_request_time(tmp_path):
    """mq-deadline on a loop device, 1024 direct reads, 256 in flight where its driver takes 128:
    the others wait in the scheduler. Each request's disk.queue (start_time_ns to issue) and
    disk.latency (issue to completion) add up to the time the kernel sums in read ticks, so
    their totals match /sys/block/DEV/stat's within the buckets' resolution, and every read
    has a queue time. (How much of it is queue depends on how far the submitter outruns the
    device: 40 % of the time on this host's two CPUs, 1 % in a one-CPU guest.)"""
    with loop_device(tmp_path, size_mb=32, filled=True) as dev:
        Path(f"/sys/block/{dev}/queue/scheduler").write_text("mq-deadline")
        c = Collector()
        try:
            c.add("queue", "disk.queue", "-", f"device={dev}", "op=read")
            c.add("lat", "disk.latency", "-", f"device={dev}", "op=read")
            c.wait_status(lambda s: "disk" in s["attached"])
            reads0, ms0 = read_ticks(dev)
            subprocess.run(["fio", "--name=queued", f"--filename=/dev/{dev}", "--rw=randread", "--bs=4k",
                            "--direct=1", "--ioengine=libaio", "--iodepth=256", "--io_size=4M",
                            "--size=32M", "--output-format=terse"], check=True, capture_output=True)
            reads1, ms1 = read_ticks(dev)
            c.flush_now()
        finally:
            assert c.stop() == 0
    queue, lat = heatmap_totals(c.data("queue")).get("", {}), heatmap_totals(c.data("lat")).get("", {})
    counted, kernel_ms = sum(lat.values()), ms1 - ms0
    queue_ns, device_ns = bucket_ns(queue), bucket_ns(lat)
    print(f"reads {reads1 - reads0}, counted {counted}; queue {queue_ns / 1e6:.0f} ms + device "
          f"{device_ns / 1e6:.0f} ms against the kernel's {kernel_ms} ms")
    assert reads1 - reads0 > 500 and abs(counted - (reads1 - reads0)) <= 0.01 * (reads1 - reads0)
    assert sum(queue.values()) == counted and sum(n for b, n in queue.items() if b > 0) == counted
    # within the buckets' resolution, and 10 us a request for where the tracepoints read the
    # clock against where the kernel does; the kernel reads it last, after the completion
    # tracepoint and the bios' end_io, which the one-CPU emulated guest runs several times
    # slower (a request took 84 us there, and the kernel's sum ran 29 us a request past ours
    # on a busy host): so below the kernel's by up to 10 us a request, 50 in the guest (still
    # less than the queue's part there, were it lost)
    ours, after_completion = (queue_ns + device_ns) / 1e6, (0.05 if IN_GUEST else 0.01) * counted
    assert 0.95 * kernel_ms - after_completion <= ours <= 1.05 * kernel_ms + 0.01 * counted, (ours, kernel_ms)


BIOLAT_LINE = re.compile(r"^\s*(\d+)\s*->\s*(\d+)\s*:\s*(\d+)")


def biolatency_slots(text):
    """{slot: count} from biolatency's usecs histogram (slot k holds [2^k, 2^(k+1)) us; 0 holds 0..1)."""
    slots = {}
    for line in text.splitlines():
        m = BIOLAT_LINE.match(line)
        if m:
            low = int(m.group(1))
            slots[0 if low == 0 else low.bit_length() - 1] = int(m.group(3))
    return slots


def llhist_to_log2_us(buckets):
    """Regroups llhist ns buckets into biolatency's log2 microsecond slots.

    biolatency files a request under slot log2(ns // 1000). An llhist bucket [lo, hi) ns whose
    values all land in one slot moves there whole (every bucket below 100 us: their edges are
    whole microseconds and the slot edges 2, 4, ... 64 us are bucket edges). A bucket that
    straddles a slot edge (e.g. [120, 130) us around 128 us) is apportioned by the fraction of its
    range on each side, assuming values spread evenly inside it: that share is the only estimate,
    and it is bounded by the straddling buckets' counts."""
    slots = {}
    for b, n in buckets.items():
        lo, hi = llhist.lower(b), llhist.upper(b)
        edge = lo
        while edge < hi:
            us = edge // 1000
            slot = 0 if us < 2 else us.bit_length() - 1
            slot_end = (2 ** (slot + 1)) * 1000  # first ns of the next slot
            part_end = min(hi, slot_end)
            slots[slot] = slots.get(slot, 0.0) + n * (part_end - edge) / (hi - lo)
            edge = part_end
    return slots


def test_disk_latency_matches_biolatency(tmp_path):
    """Both tools time the same requests at the same two tracepoints. Programs on one
    tracepoint run in attach order, so each tool's measured interval holds some of the other's
    run time: biolatency attaches first, which leaves ours holding (its completion program -
    its issue program), a fraction of a microsecond. The loop device is backed by a filled
    file so reads reach the real disk (tens of microseconds and more), where that offset
    rarely moves a request across a log2 slot edge."""
    with loop_device(tmp_path, size_mb=32, filled=True) as loopdev:
        ours, theirs = collect_with_biolatency(loopdev)
    print("log2-us slots, strata:", {k: round(v, 1) for k, v in sorted(ours.items())}, "biolatency:", theirs)
    total_theirs, total_ours = sum(theirs.values()), sum(ours.values())
    assert total_theirs > 500, theirs
    assert abs(total_ours - total_theirs) <= 0.01 * total_theirs
    for slot in set(theirs) | set(ours):
        assert abs(ours.get(slot, 0) - theirs.get(slot, 0)) <= 0.02 * total_theirs, (slot, ours, theirs)


def collect_with_biolatency(loopdev):
    """disk.latency of loopdev and biolatency -d loopdev over one fio random-read run."""
    # stdbuf: biolatency's "Tracing..." line (printed once attached) must not sit in a buffer
    peer = subprocess.Popen(["stdbuf", "-oL", "biolatency", "-d", loopdev], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    c = Collector()
    try:
        assert "Tracing" in peer.stdout.readline()
        c.add("lat", "disk.latency", "-", f"device={loopdev}")
        c.wait_status(lambda s: "disk" in s["attached"])
        subprocess.run(["fio", "--name=cross", f"--filename=/dev/{loopdev}", "--rw=randread", "--bs=4k",
                        "--direct=1", "--ioengine=psync", "--runtime=2", "--time_based", "--size=32M",
                        "--output-format=terse"], check=True, capture_output=True)
        peer.send_signal(signal.SIGINT)
        peer_out = peer.communicate(timeout=20)[0]
        c.flush_now()
    finally:
        peer.kill()
        assert c.stop() == 0
    return llhist_to_log2_us(heatmap_totals(c.data("lat")).get("", {})), biolatency_slots(peer_out)


def test_disk_size_offset_and_key_names(loopdev):
    c = Collector()
    try:
        c.add("size", "disk.size", "op", f"device={loopdev}")
        c.add("off", "disk.offset", "device", f"device={loopdev}", "op=read")
        c.wait_status(lambda s: "disk" in s["attached"])
        subprocess.run(["dd", f"if=/dev/{loopdev}", "of=/dev/null", "iflag=direct", "bs=64k", "skip=100",
                        "count=1", "status=none"], check=True)
        c.flush_now()
    finally:
        assert c.stop() == 0
    size = heatmap_totals(c.data("size"))
    assert size == {"read": {llhist.bucket(65536): 1}}
    off = heatmap_totals(c.data("off"))
    assert off == {loopdev: {llhist.bucket(100 * 65536): 1}}


def test_removing_the_last_disk_dataset_detaches_the_tracepoints(loopdev):
    """Three links while a disk dataset is collected: issue, complete, and requeue (the
    status lists the two the statistics name); none once the last one is removed."""
    c = Collector()
    try:
        c.add("a", "disk.ops", "-")
        c.add("b", "disk.latency", "device")
        assert "block:block_rq_issue" in c.wait_status()["probes"]
        assert len(process_links(c.proc.pid)) == 3
        c.remove("a")
        assert "disk" in c.wait_status()["attached"]
        assert len(process_links(c.proc.pid)) == 3
        c.remove("b")
        status = c.wait_status()
        assert status["attached"] == [] and status["probes"] == []
        assert process_links(c.proc.pid) == []
    finally:
        assert c.stop() == 0
