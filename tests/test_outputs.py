"""Outputs that do what they say: the format follows -o's extension, contradictory
flags and unwritable paths are one line, JSON carries its schema and no float noise,
the raw llhist buckets add up, CSV for heat maps and breakdowns."""
import csv
import io
import json

import numpy as np
import pytest

from heatmaps_util import T0, build_archive, histogram, run_strata, seed_latencies

RANGE = ["--since", str(T0), "--until", str(T0 + 120)]
CLIENTS = ["10.0.0.1", "10.0.0.2"]


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    rng = np.random.default_rng(3)
    path = tmp_path_factory.mktemp("out") / "a.db"
    return build_archive(path, {
        "nfs.latency[client]": lambda t: {c: histogram(seed_latencies(rng, 50 * (i + 1))) for i, c in enumerate(CLIENTS)},
        "nfs.ops[client]": lambda t: {c: 5 * (i + 1) for i, c in enumerate(CLIENTS)},
    }, seconds=120)


def strata(archive, *args):
    return run_strata(list(args) + ["--archive", str(archive)] + RANGE, env_extra={"NO_COLOR": "1"})


def one_line_error(p, code):
    assert p.returncode == code, (p.returncode, p.stderr)
    assert "Traceback" not in p.stderr and "Errno" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    return p.stderr.strip()


def test_extension_picks_the_format(archive, tmp_path):
    out = tmp_path / "map.JSON"
    p = strata(archive, "heatmap", "nfs.latency[client]", "-o", str(out))
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "strata.heatmap" and doc["schema_version"] == 1
    out = tmp_path / "ops.csv"
    p = strata(archive, "breakdown", "nfs.ops[client]", "-o", str(out))
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(out.read_text())))
    assert rows[0] == ["time", "seconds", "10.0.0.2", "10.0.0.1"] and rows[1][2:] == ["10", "5"]
    assert len(rows) == 121


@pytest.mark.parametrize("name", ["map.json", "map.csv", "map.html", "map.txt"])
def test_every_file_written_is_said_once_on_stderr(archive, tmp_path, name):
    out = tmp_path / name
    p = strata(archive, "heatmap", "nfs.latency[client]", "-o", str(out))
    assert p.returncode == 0 and out.stat().st_size > 0, p.stderr
    assert p.stdout == "" and p.stderr == f"wrote {out}\n", (p.stdout, p.stderr)


@pytest.mark.parametrize("args, expect", [
    (["--json", "--format", "html"], "give --json or --format html, not both"),
    (["--format", "html", "-o", "x.png"], "-o x.png names a PNG file but --format html"),
    (["--json", "-o", "x.csv"], "-o x.csv names a CSV file but --format json"),
    (["--json", "--csv"], "give --json or --csv, not both"),
    (["--format", "csv", "--raw"], "--raw adds the llhist buckets to --json"),
    (["-o", "x.pdf"], "-o x.pdf: .pdf is not a format strata writes"),
    (["--csv", "--percentiles", "50,99"], "--percentiles draws lines on a picture"),
])
def test_contradictory_flags_are_usage_errors(archive, args, expect):
    assert expect in one_line_error(strata(archive, "heatmap", "nfs.latency[client]", *args), 2)


@pytest.mark.parametrize("args", [["heatmap", "nfs.latency[client]", "--ymax", "1e400"],
                                  ["heatmap", "nfs.latency[client]", "--ymin", "1e400"],
                                  ["breakdown", "nfs.latency[client]", "--range", "1e400.."]])
def test_a_value_too_large_is_one_line(archive, args):
    assert "too large" in one_line_error(strata(archive, *args), 2)


def test_unwritable_output_is_one_line(archive):
    line = one_line_error(strata(archive, "heatmap", "nfs.latency[client]", "-o", "/nonexistent/x.html"), 1)
    assert line == "strata: cannot write /nonexistent/x.html: there is no directory /nonexistent"
    line = one_line_error(strata(archive, "breakdown", "nfs.ops[client]", "-o", "/nonexistent/t.csv"), 1)
    assert "there is no directory /nonexistent" in line


def test_json_numbers_and_raw_buckets(archive):
    p = strata(archive, "breakdown", "nfs.latency[client]", "--json")
    assert p.returncode == 0, p.stderr
    floats = []
    doc = json.loads(p.stdout, parse_float=lambda s: floats.append(s) or float(s))
    assert doc["schema"] == "strata.breakdown" and doc["schema_version"] == 1
    assert floats and all(len(f.lstrip("-").replace(".", "").strip("0")) <= 12 for f in floats), floats
    p = strata(archive, "heatmap", "nfs.latency[client]", "--json", "--raw", "--rows", "4", "--key", "10.0.0.2")
    doc = json.loads(p.stdout)
    raw = doc["raw"]
    assert len(raw["columns"]) == len(doc["times"])
    assert sum(c for col in raw["columns"] for _, c in col) == doc["events"] == 100 * 120
    ids = {b["bucket"]: b for b in raw["buckets"]}
    assert all(ids[b]["lo"] < ids[b]["hi"] for col in raw["columns"] for b, _ in col)
    assert min(b["lo"] for b in raw["buckets"]) >= 1000 and max(b["hi"] for b in raw["buckets"]) <= 10_000_000


def test_heatmap_csv_cells_sum_to_the_events(archive):
    p = strata(archive, "heatmap", "nfs.latency[client]", "--format", "csv", "--rows", "8")
    rows = list(csv.DictReader(io.StringIO(p.stdout)))
    assert sum(int(r["count"]) for r in rows) == 150 * 120
    assert all(int(r["low"]) < int(r["high"]) for r in rows)
    p = strata(archive, "breakdown", "nfs.latency[client]", "--csv", "--table")
    table = list(csv.DictReader(io.StringIO(p.stdout)))
    assert [r["key"] for r in table] == ["10.0.0.2", "10.0.0.1"] and table[0]["events"] == "12000"


def test_a_second_not_collected_is_empty_a_quiet_one_zero(tmp_path):
    """No record (before the collector started) is a gap: empty in CSV, null in JSON, as
    `strata stream` prints it; a collected second without events is 0."""
    path = build_archive(tmp_path / "gap.db", {"nfs.ops[client]": lambda t: (
        None if t < T0 + 3 else {} if t < T0 + 6 else {"10.0.0.1": 4})}, seconds=10)
    args = ["show", "nfs.ops[client]", "--archive", str(path), "--since", str(T0), "--until", str(T0 + 10)]
    p = run_strata(args + ["--csv"])
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout)))
    assert rows[0] == ["time", "seconds", "10.0.0.1"]
    assert [r[2] for r in rows[1:]] == [""] * 3 + ["0"] * 3 + ["4"] * 4
    out = tmp_path / "gap.csv"
    assert run_strata(args + ["-o", str(out)]).returncode == 0 and out.read_text() == p.stdout
    doc = json.loads(run_strata(args + ["--json"]).stdout)
    assert doc["series"][0]["values"] == [None] * 3 + [0] * 3 + [4] * 4


def test_top_zero_is_every_key(tmp_path):
    keys = [f"10.0.{i // 250}.{i % 250 + 1}" for i in range(60)]
    path = build_archive(tmp_path / "many.db", {"nfs.ops[client]": lambda t: {k: i + 1 for i, k in enumerate(keys)}},
                         seconds=5)
    p = run_strata(["breakdown", "nfs.ops[client]", "--top", "0", "--json", "--archive", str(path),
                    "--since", str(T0), "--until", str(T0 + 5)])
    doc = json.loads(p.stdout)
    assert len(doc["table"]) == 60 and doc["folded_into_other"] == 0
    assert sum(r["events"] for r in doc["table"]) == 5 * sum(range(1, 61))


def test_times_name_their_zone(archive):
    paris = {"TZ": "Europe/Paris", "NO_COLOR": "1"}
    local = run_strata(["heatmap", "nfs.latency[client]", "--archive", str(archive), *RANGE], env_extra=paris)
    utc = run_strata(["heatmap", "nfs.latency[client]", "--archive", str(archive), *RANGE, "--utc"], env_extra=paris)
    assert "2025-11-22 09:00:00 → 09:02:00 CET (2m)" in local.stdout.splitlines()[0]
    assert "2025-11-22 08:00:00 → 08:02:00 UTC (2m)" in utc.stdout.splitlines()[0]
    listed = run_strata(["datasets", "list", "--archive", str(archive)], env_extra=paris).stdout
    assert "+01:00" in listed.splitlines()[1]


def test_breakdown_marks_outages_as_the_heat_map_does(tmp_path):
    """A 41 s record (events held through a stall) is named in every breakdown view."""
    from strata.datasets.archive import Archive
    path = tmp_path / "held.db"
    with Archive.open(str(path), readonly=False) as a:
        info = a.create("nfs.ops[client]", now=T0)
        ing = a.ingestor()
        with ing.transaction():
            for t in range(T0, T0 + 10):
                ing.add(info.id, t, "counter", {"10.0.0.1": 5})
            ing.add(info.id, T0 + 10, "counter", {"10.0.0.1": 205}, seconds=41, cause="stall")
    args = ["breakdown", "nfs.ops[client]", "--archive", str(path), "--since", str(T0), "--until", str(T0 + 60)]
    term = run_strata(args, env_extra={"NO_COLOR": "1", "TZ": "UTC"})
    assert term.returncode == 0, term.stderr
    assert "outage 08:00:10–08:00:51 (41s, the collector stalled)" in term.stdout.splitlines()[2]
    doc = json.loads(run_strata(args + ["--json"]).stdout)
    assert doc["spans"] == [{"start": T0 + 10, "end": T0 + 51, "cause": "stall"}]
    html = tmp_path / "held.html"
    assert run_strata(args + ["-o", str(html)]).returncode == 0
    text = html.read_text()
    assert "the collector stalled" in text and '"type":"rect"' in text
