"""`strata stream`: one line per second per dataset and key, from a past second and
live while records arrive, in text, JSON lines and CSV, with the time zone said."""
import csv
import io
import json
import subprocess
import threading
import time

import numpy as np
import pytest

from heatmaps_util import STRATA, T0, build_archive, histogram, run_strata
from strata.datasets.archive import Archive
from strata.heatmaps import stream_lines


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("stream") / "a.db"
    return build_archive(path, {
        "nfs.latency": lambda t: {"": histogram([10_000] * 98 + [5_000_000] * 2)},
        "nfs.ops[client]": lambda t: {"10.0.0.1": 3, "10.0.0.2": 30} if t % 2 == 0 else {"10.0.0.1": 4},
        "arc.size": lambda t: {"": float(64 << 20)},
    }, seconds=20)


def test_replay_text_names_the_zone(archive):
    p = run_strata(["stream", "nfs.latency", "nfs.ops[client]", "--since", str(T0), "--count", "2", "--utc",
                    "--archive", str(archive)])
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["TIME", "DATASET", "KEY", "OPS/S", "P50", "P99", "P99.9", "DEPTH"]  # VALUE: gauges
    first = [line.split() for line in lines[1:]]
    assert first[0][:4] == ["2025-11-22T08:00:00Z", "nfs.latency", "-", "100"]
    assert first[0][4].endswith("µs") and first[0][5].endswith("ms")            # p50 fast, p99 in the slow band
    assert [row[2:4] for row in first[1:3]] == [["10.0.0.2", "30"], ["10.0.0.1", "3"]]  # busiest key first
    assert first[3][0] == "2025-11-22T08:00:01Z" and len(first) == 5


def test_json_lines_and_csv(archive):
    p = run_strata(["stream", "nfs.ops[client]", "--since", str(T0), "--count", "4", "--json", "--top", "1",
                    "--archive", str(archive)])
    docs = [json.loads(line) for line in p.stdout.splitlines()]
    assert all(d["schema"] == "strata.stream" and d["schema_version"] == 1 for d in docs)
    assert [(d["unix"] - T0, d["key"], d["ops_per_s"]) for d in docs] == \
        [(0, "10.0.0.2", 30), (1, "10.0.0.1", 4), (2, "10.0.0.2", 30), (3, "10.0.0.1", 4)]
    assert docs[0]["time"][-6] in "+-" and docs[0]["time"][-3] == ":"        # local time, with its offset
    p = run_strata(["stream", "nfs.latency", "--since", str(T0), "--count", "3", "--format", "csv",
                    "--archive", str(archive)])
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert len(rows) == 3 and {r["ops_per_s"] for r in rows} == {"100"} and rows[0]["unit"] == "ns"
    p = run_strata(["stream", "arc.size", "--since", str(T0), "--count", "1", "--archive", str(archive)])
    gauge = p.stdout.splitlines()[1].split()
    assert gauge[1:4] == ["arc.size", "-", "-"] and gauge[-1] == "64MiB", p.stdout     # a gauge: its value


def test_a_second_not_collected_is_a_gap_not_zero(tmp_path):
    """No record (collector stopped) prints '-' and null; a record of no events prints 0."""
    path = build_archive(tmp_path / "gap.db", {
        "nfs.ops[client]": lambda t: None if T0 + 2 <= t < T0 + 4 else {"10.0.0.1": 0 if t == T0 + 1 else 5},
    }, seconds=5)
    p = run_strata(["stream", "nfs.ops[client]", "--since", str(T0), "--count", "5", "--json", "--archive", str(path)])
    assert [json.loads(line)["ops_per_s"] for line in p.stdout.splitlines()] == [5, 0, None, None, 5], p.stdout
    p = run_strata(["stream", "nfs.ops[client]", "--since", str(T0 + 2), "--count", "1", "--archive", str(path)])
    assert p.stdout.splitlines()[1].split()[2:4] == ["-", "-"], p.stdout


def test_follows_records_as_they_arrive(tmp_path):
    """A writer stores one record per second at the current time, as the collector does;
    the stream, piped (no terminal), prints each second once it is stored."""
    path = tmp_path / "live.db"
    with Archive.open(str(path), readonly=False) as a:
        a.create("nfs.ops[client]")
    stop = threading.Event()

    def writer():
        with Archive.open(str(path), readonly=False) as a:
            info = a.dataset("nfs.ops[client]")
            ing = a.ingestor()
            while not stop.is_set():
                t = int(time.time())
                with ing.transaction():
                    ing.add(info.id, t, "counter", {"10.0.0.7": t % 100 + 1})
                stop.wait(t + 1 - time.time())
    thread = threading.Thread(target=writer, daemon=True)
    started = int(time.time())
    thread.start()
    time.sleep(2.5)            # the stream starts 2 s back: those seconds are stored by now
    try:
        p = subprocess.run(STRATA + ["stream", "nfs.ops[client]", "--count", "3", "--json", "--archive", str(path)],
                           capture_output=True, text=True, timeout=30)
    finally:
        stop.set()
        thread.join()
    assert p.returncode == 0, p.stderr
    docs = [json.loads(line) for line in p.stdout.splitlines()]
    assert [d["unix"] for d in docs] == list(range(docs[0]["unix"], docs[0]["unix"] + 3))
    assert all(d["key"] == "10.0.0.7" and d["ops_per_s"] == d["unix"] % 100 + 1 for d in docs)
    assert docs[0]["unix"] >= started                    # seconds written while it ran, not history


def test_derived_names_and_bad_input(archive):
    p = run_strata(["stream", "nfs.ops", "--since", str(T0), "--count", "2", "--json", "--archive", str(archive)])
    docs = [json.loads(line) for line in p.stdout.splitlines()]
    assert [(d["dataset"], d["ops_per_s"]) for d in docs] == [("nfs.ops", 33), ("nfs.ops", 4)]   # summed
    assert p.stderr == "strata stream: nfs.ops: summed from nfs.ops[client]\n"     # said once, beside the data
    for args, code in ((["nfs.opz"], 1), (["nfs.ops", "--since", "tomorrowish"], 2)):
        p = run_strata(["stream", *args, "--archive", str(archive)])
        assert p.returncode == code and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_csv_flag_as_readme_says(archive):
    """`--csv` is `--format csv`, as for show, heatmap and breakdown; with --json it is refused."""
    base = ["stream", "nfs.latency", "--since", str(T0), "--count", "2", "--archive", str(archive)]
    p = run_strata([*base, "--csv"])
    assert p.returncode == 0, p.stderr
    assert p.stdout == run_strata([*base, "--format", "csv"]).stdout
    for extra in (["--json"], ["--format", "json"]):
        p = run_strata([*base, "--csv", *extra])
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr


def test_iostat_columns_bytes_per_second_and_depth(tmp_path):
    """iostat -x's rMB/s, wMB/s from disk.size[op] and aqu-sz from disk.queue + disk.latency
    (Little's law), within llhist's 5%; at 80 columns in a local zone a gauge's line fits."""
    path = build_archive(tmp_path / "io.db", {
        "disk.size[op]": lambda t: {"read": histogram([4096] * 100), "write": histogram([65536] * 10)},
        "disk.queue": lambda t: {"": histogram([1_000_000] * 100)},
        "disk.latency": lambda t: {"": histogram([2_000_000] * 100)},
        "arc.size": lambda t: {"": float(64 << 20)}}, seconds=3)
    p = run_strata(["stream", "disk.size[op]", "disk.queue", "disk.latency", "--since", str(T0), "--count", "1",
                    "--json", "--archive", str(path)])
    got = {(d["dataset"], d["key"]): d for d in map(json.loads, p.stdout.splitlines())}
    assert got[("disk.size[op]", "read")]["bytes_per_s"] == pytest.approx(409_600, rel=0.05)
    assert got[("disk.size[op]", "write")]["bytes_per_s"] == pytest.approx(655_360, rel=0.05)
    assert got[("disk.queue", "")]["in_flight"] + got[("disk.latency", "")]["in_flight"] == \
        pytest.approx(0.3, rel=0.05) and got[("disk.queue", "")]["bytes_per_s"] is None
    wide = stream_lines.fit(["disk.size[op]", "disk.queue"], False, 120, False, ["bytes", "in_flight"])
    assert stream_lines.text_header(wide).split()[-2:] == ["BYTES/S", "DEPTH"]
    p = run_strata(["stream", "arc.size", "disk.latency", "--since", str(T0), "--count", "1", "--archive", str(path)],
                   env_extra={"COLUMNS": "80", "TZ": "Asia/Kolkata"})
    lines = p.stdout.splitlines()
    assert p.returncode == 0 and "+05:30" in lines[1] and max(map(len, lines)) <= 80, p.stdout
