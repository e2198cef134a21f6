"""`strata heatmap` and `strata breakdown` end to end on real archives written
through the datasets API: drill-down, errors, empty / single-second / one-key /
10,000-key datasets, JSON."""
import datetime
import json

import numpy as np
import pytest

from heatmaps_util import T0, build_archive, histogram, run_strata, seed_latencies

RANGE = ["--since", str(T0), "--until", str(T0 + 600)]
CLIENTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
PLAIN = {"NO_COLOR": "1", "COLUMNS": "100", "LINES": "30"}


def per_client_counts(t):
    """Deterministic per-second latencies: client i sends 10*i ops, all at (i * 100) us."""
    return {c: {_bucket(100_000 * (i + 1)): 10 * (i + 1)} for i, c in enumerate(CLIENTS)}


def _bucket(v):
    from strata.datasets import llhist
    return llhist.bucket(v)


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    rng = np.random.default_rng(7)
    path = tmp_path_factory.mktemp("hm") / "archive.db"
    return build_archive(path, {
        "nfs.latency": lambda t: {"": histogram(seed_latencies(rng, 200))},
        "nfs.latency[client]": per_client_counts,
        "nfs.ops[client]": lambda t: {c: 10 * (i + 1) for i, c in enumerate(CLIENTS)},
        "disk.latency": lambda t: None,                                   # created, never collected
        "nfs.size": lambda t: {"": {_bucket(4096): 5}} if t == T0 + 30 else None,   # a single second
    }, seconds=600)


def strata(archive, *args, env=PLAIN):
    return run_strata(list(args) + ["--archive", str(archive)], env_extra=env)


def one_line_error(proc):
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_heatmap_plain_output(archive):
    p = strata(archive, "heatmap", "nfs.latency", *RANGE, "--percentiles", "50,99")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("nfs.latency ") and "(10m)" in lines[0]
    assert "120k ops" in lines[1] and "200 ops/s average" in lines[1]
    assert "\x1b[" not in p.stdout and "▀" not in p.stdout      # NO_COLOR: plain density ramp
    assert any(ch in p.stdout for ch in "@%#")
    assert all(len(line) <= 100 for line in lines)
    assert "1=p50" in lines[-1] and "2=p99" in lines[-1]


def test_drill_down_by_filter_and_by_key(archive):
    p = strata(archive, "heatmap", "nfs.latency[client=10.0.0.3]", *RANGE)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("nfs.latency[client=10.0.0.3]")
    assert "18k ops" in p.stdout.splitlines()[1]                     # 30 ops/s x 600 s
    q = strata(archive, "heatmap", "nfs.latency[client]", "--key", "10.0.0.1", *RANGE)
    assert q.returncode == 0 and "6k ops" in q.stdout.splitlines()[1]


@pytest.mark.parametrize("args,expect", [
    (["heatmap", "nfs.latency[client=10.0.0.9]"], "keys with data: 10.0.0.1, 10.0.0.2, 10.0.0.3"),
    (["heatmap", "zil.latency"], "datasets here: disk.latency, nfs.latency, nfs.latency[client]"),
    (["heatmap", "nfs.latency", "--ymax", "10parsecs"], "--ymax"),
    (["heatmap", "nfs.latency", "--ymax", "1ms", "--outliers", "99"], "not both"),
    (["heatmap", "nfs.latency", "--since", "yesterday-ish"], "not a time"),
    (["heatmap", "nfs.latency", "--since", "25:00"], "not a time: '25:00' (hour must be in 0..23)"),
    (["heatmap", "nfs.latency", "--log", "--ymin", "5ms", "--ymax", "1ms"], "--ymin 5ms is not below --ymax 1ms"),
    (["heatmap", "nfs.ops[client]"], "is a counter"),
    (["heatmap", "nfs.latency", "--percentiles", "50,abc"], "--percentiles"),
    (["heatmap", "nfs.latency", "--format", "gif"], "gif"),
    (["heatmap", "bad name!"], "bad dataset name"),
    (["heatmap", "time:disk"], "is a graph of each op's time by component: strata show time:disk"),
    (["breakdown", "time:fs"], "strata show time:fs"),
    (["breakdown", "nfs.ops[op=read]", "--by", "op"], "holds only op=read; no breakdown of it is held here "
                                                      "(to collect one: strata datasets create 'nfs.ops[op=read][client]')"),
    (["breakdown", "nfs.ops[client=10.0.0.1]", "--by", "client"], "holds only client=10.0.0.1; no breakdown"),
    (["show", "nfs.latency", "--key", "x"], "nfs.latency has none (its keys: strata breakdown 'nfs.latency' --by client)"),
    (["breakdown", "nfs.ops", "--by", "vdev"], "cannot be broken down by vdev; --by client|op|tier|file"),
    (["breakdown", "nfs.latency", "--by", "client", "--graph", "stacked"], "--graph line"),
    (["breakdown", "nfs.ops", "--by", "op"], "no dataset nfs.ops[op]"),
])
def test_errors_are_one_line(archive, args, expect):
    line = one_line_error(strata(archive, args[0], *RANGE, *args[1:]))
    assert line.startswith("strata: ") or line.startswith("Error") or "Usage" not in line
    assert expect in line


def test_missing_and_empty_archives(tmp_path):
    line = one_line_error(run_strata(["heatmap", "nfs.latency", "--archive", str(tmp_path / "none.db")]))
    assert "none.db" in line
    empty = build_archive(tmp_path / "empty.db", {})
    line = one_line_error(run_strata(["heatmap", "nfs.latency", "--archive", str(empty)]))
    assert "holds no datasets" in line
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not an archive at all" * 100)
    one_line_error(run_strata(["heatmap", "nfs.latency", "--archive", str(junk)]))


def test_empty_dataset_and_single_second(archive):
    p = strata(archive, "heatmap", "disk.latency", *RANGE)
    assert p.returncode == 0, p.stderr
    assert "no I/Os in this range" in p.stdout and "no I/Os to colour" in p.stdout
    p = strata(archive, "heatmap", "nfs.size", "--since", str(T0 + 30), "--until", str(T0 + 31))
    assert p.returncode == 0, p.stderr
    assert "5 ops" in p.stdout.splitlines()[1] and "(1s)" in p.stdout.splitlines()[0]
    assert "@" in p.stdout


def test_default_range_finds_the_newest_data(archive):
    p = strata(archive, "heatmap", "nfs.latency")      # now is years later: shows the last 10 minutes of data
    assert p.returncode == 0, p.stderr
    assert "120k ops" in p.stdout.splitlines()[1]


def test_default_range_starts_no_earlier_than_the_dataset(tmp_path):
    """A run of 90 s: its picture is those 90 s across the width, not 10 minutes mostly empty."""
    path = build_archive(tmp_path / "short.db", {"nfs.latency": lambda t: {"": {_bucket(100_000): 4}}}, seconds=90)
    p = strata(path, "heatmap", "nfs.latency", "--utc")
    assert p.returncode == 0, p.stderr
    assert "(1m30s)" in p.stdout.splitlines()[0] and "360 ops" in p.stdout.splitlines()[1], p.stdout
    p = strata(path, "show", "nfs.latency", "--last", "10m", "--until", str(T0 + 90))
    # a window asked for stays as asked, from the edge of its first column: 8 s columns, and
    # T0 + 90 - 600 lies 2 s past a multiple of 8, so the title counts 2 s more than asked
    assert "(10m2s)" in p.stdout.splitlines()[0], p.stdout


def test_breakdown_counter_json_and_table(archive):
    p = strata(archive, "breakdown", "nfs.ops", "--by", "client", *RANGE, "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert [s["key"] for s in data["series"]] == ["10.0.0.3", "10.0.0.2", "10.0.0.1"]
    assert [r["events"] for r in data["table"]] == [18000, 12000, 6000]
    assert all(v == 30 for v in data["series"][0]["values"])           # ops/s per column
    t = strata(archive, "breakdown", "nfs.ops", "--by", "client", *RANGE)
    assert t.returncode == 0 and "18,000" in t.stdout and "50.0%" in t.stdout
    assert "A 10.0.0.3" in t.stdout                                    # plain legend


def test_breakdown_percentiles_per_key(archive):
    p = strata(archive, "breakdown", "nfs.latency", "--by", "client", "--percentile", "50", *RANGE, "--json")
    data = json.loads(p.stdout)
    p50 = {s["key"]: s["values"][0] for s in data["series"]}
    assert p50["10.0.0.1"] == pytest.approx(105_000) and p50["10.0.0.3"] == pytest.approx(305_000)
    assert data["metric"] == "percentile" and data["unit"] == "ns"


def test_ten_thousand_keys(tmp_path):
    keys = [f"10.{i // 256 % 256}.{i % 256}.{i // 65536}" for i in range(10_000)]
    busy = {k: 1 + (i % 10 == 0) * 50 for i, k in enumerate(keys)}
    path = build_archive(tmp_path / "many.db", {
        "nfs.ops[client]": lambda t: busy,
        "nfs.latency[client]": lambda t: {k: {_bucket(200_000): n} for k, n in busy.items()},
    }, seconds=3)
    rng = ["--since", str(T0), "--until", str(T0 + 3), "--archive", str(path)]
    p = run_strata(["breakdown", "nfs.ops", "--by", "client", "--top", "5", "--json"] + rng)
    data = json.loads(p.stdout)
    assert len(data["series"]) == 6 and data["series"][-1]["key"] == "other"
    assert data["folded_into_other"] == 9_995 and data["keys"] == 10_000
    assert sum(r["events"] for r in data["table"]) == 3 * sum(busy.values())
    t = run_strata(["breakdown", "nfs.latency", "--by", "client", "--top", "5"] + rng, env_extra=PLAIN)
    assert t.returncode == 0 and "other (9,995 keys)" in t.stdout
    h = run_strata(["heatmap", "nfs.latency[client]"] + rng, env_extra=PLAIN)
    assert h.returncode == 0 and "180k ops" in h.stdout and ":00:00" in h.stdout.splitlines()[-2]


def test_until_a_time_of_day_still_to_come_says_it_is_yesterdays():
    from strata.heatmaps.errors import ViewUsageError
    from strata.views import times
    noon = int(datetime.datetime(2026, 6, 1, 12, 0).timestamp())      # local zone, as parse_time reads
    with pytest.raises(ViewUsageError, match=r"--until 13:00 \(13:00 is still to come today, so it is yesterday's\)"):
        times.time_range(None, "11:00", "13:00", now=noon)
    with pytest.raises(ViewUsageError) as past:
        times.time_range(None, "11:30", "11:00", now=noon)
    assert "yesterday" not in str(past.value)
