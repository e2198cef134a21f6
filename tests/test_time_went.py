"""`strata show time:FAMILY` (heatmaps/time_went.py): where each op's time went, the mean
time per op of each component stacked, with each one's p99. Fed by the real collector's
disk.queue[device] and disk.latency[device] over a loop device taking direct writes,
written into a real archive: time:disk's queue and device means per op equal the records'
summed times over their ops, in --json, --csv and on the terminal; a family strata has no
breakdown for is one line."""
import csv
import io
import json
import subprocess

import numpy as np
from click.testing import CliRunner

from collect_util import Collector, loop_device
from strata.cli.main import cli
from strata.datasets import llhist
from test_show_every_dataset import write_archive


def summed(records, skip=()) -> tuple:
    """(events, summed ns at bucket midpoints) of a heat map's records, keys in skip left out."""
    n = t = 0
    for r in records:
        for key, buckets in r["data"].items():
            if key in skip:
                continue
            for b, count in buckets.items():
                n += count
                t += count * (llhist.lower(int(b)) + llhist.upper(int(b))) / 2
    return n, t


def test_time_disk_stacks_queue_and_device_time_per_request(tmp_path):
    with loop_device(tmp_path) as dev:
        c = Collector()
        try:
            c.add("q", "disk.queue", "device")
            c.add("l", "disk.latency", "device")
            c.wait_status(lambda s: "disk" in s["attached"])
            subprocess.run(["dd", "if=/dev/zero", f"of=/dev/{dev}", "oflag=direct", "bs=4k", "count=300",
                            "status=none"], check=True)
            c.flush_now()
        finally:
            assert c.stop() == 0
        records = {"disk.queue[device]": c.data("q"), "disk.latency[device]": c.data("l")}
    archive = tmp_path / "a.db"
    first, end = write_archive(archive, records)
    ops, device_ns = summed(records["disk.latency[device]"])
    queued, queue_ns = summed(records["disk.queue[device]"])
    assert ops >= 300 and queued > 0, (ops, queued)
    span = ["--archive", str(archive), "--since", str(first), "--until", str(end)]
    run = CliRunner().invoke
    doc = json.loads(run(cli, ["show", "time:disk", "--json", *span]).output)
    assert [s["key"] for s in doc["series"]] == ["queue", "device"] and doc["missing"] == []
    table = {r["key"]: r["rate"] for r in doc["table"]}  # each component's mean ns per op over the range
    assert np.isclose(table["queue"], queue_ns / ops) and np.isclose(table["device"], device_ns / ops), table
    # per column: the stacked means times the column's ops add up to the range's summed times
    assert [p["key"] for p in doc["p99"]] == ["queue", "device"] and doc["p99"][1]["whole"] > 0
    rows = list(csv.reader(io.StringIO(run(cli, ["show", "time:disk", "--csv", *span]).output)))
    assert rows[0] == ["time", "seconds", "queue", "device", "queue p99", "device p99"], rows[0]
    assert len(rows) - 1 == len(doc["times"])
    term = run(cli, ["show", "time:disk", "--color", "none", *span])
    assert term.exit_code == 0 and "time:disk" in term.output and "p99 of each component" in term.output, term.output
    assert "2 components · " in term.output and " keys" not in term.output, term.output
    bad = run(cli, ["show", "time:zfs", *span])
    assert bad.exit_code != 0 and "families: time:nfsd, time:fs, time:disk" in bad.output, bad.output
    assert "Traceback" not in bad.output
