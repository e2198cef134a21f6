"""The one catalogue (catalogue/statistics.def): the JSON the Python package reads, the
tables of STATISTICS.md and what `strata-collect --catalogue` reports are the same; the
compiled C and the Python validation both follow the pinned vectors; and `datasets
create` refuses a wrong filter value at once, naming the valid ones."""
import ast
import json
import os
import re
import subprocess

import pytest

from conftest import REPO, built
from datasets_util import strata
from strata.datasets import catalogue
from strata.datasets.errors import ArchiveError

VECTORS = json.loads((REPO / "tests" / "vectors" / "catalogue.json").read_text())
PACKAGE_JSON = REPO / "datasets" / "catalogue.json"
HOST_FIELDS = ("engine", "supported", "reason")


def without_host(doc: dict) -> dict:
    doc = {k: v for k, v in doc.items() if k not in HOST_FIELDS}
    doc["statistics"] = [{k: v for k, v in s.items() if k not in HOST_FIELDS} for s in doc["statistics"]]
    return doc


def test_package_json_is_what_statistics_def_compiles_to():
    out = subprocess.run([str(built("tools/strata-catalogue")), "json"], capture_output=True, text=True, check=True)
    assert out.stdout == PACKAGE_JSON.read_text(), "datasets/catalogue.json is stale: run `make`"


def test_statistics_md_tables_are_what_statistics_def_compiles_to():
    out = subprocess.run([str(built("tools/strata-catalogue")), "markdown"], capture_output=True, text=True,
                         check=True)
    text = (REPO / "catalogue" / "STATISTICS.md").read_text()
    m = re.search(r"<!-- catalogue begin[^\n]*-->\n(.*)<!-- catalogue end -->", text, re.S)
    assert m and m.group(1) == out.stdout, "catalogue/STATISTICS.md is stale: run `make`"
    assert "| `nfs.latency` | ns | heatmap |" in out.stdout


def test_collector_reports_the_catalogue_python_uses():
    out = subprocess.run([str(built("bin/strata-collect")), "--catalogue"], capture_output=True, text=True,
                         timeout=30)
    assert out.returncode == 0, out.stderr
    reported = json.loads(out.stdout)
    assert without_host(reported) == json.loads(PACKAGE_JSON.read_text())
    assert all("supported" in s for s in reported["statistics"])
    merged = catalogue.with_support(out.stdout)
    assert [s.statistic for s in merged] == [s.statistic for s in catalogue.load().statistics]
    assert all(s.supported in (True, False) for s in merged)


def test_a_collector_built_from_another_catalogue_is_refused():
    doc = json.loads(PACKAGE_JSON.read_text())
    doc["keysets"][0]["keys"].append({"text": "reed", "value": 99})
    with pytest.raises(ArchiveError, match="another statistics catalogue"):
        catalogue.with_support(json.dumps(doc))


def test_python_catalogue_follows_the_pinned_statistics():
    pinned = {(s["statistic"], s["kind"], s["unit"], s["layer"]) for s in VECTORS["statistics"]}
    ours = {(s.statistic, s.kind, s.unit, s.layer) for s in catalogue.load().statistics}
    assert ours == pinned


@pytest.mark.parametrize("case", VECTORS["keys"], ids=lambda c: f"{c['statistic']}[{c['field']}={c['text']}]")
def test_python_validation_follows_the_pinned_keys(case):
    stat = catalogue.by_name()[case["statistic"]]
    if case["key"] is None:
        with pytest.raises(ArchiveError):
            catalogue.check_value(stat, case["field"], case["text"])
    else:
        catalogue.check_value(stat, case["field"], case["text"])
        cat = catalogue.load()   # a key set's text: the parsed catalogue keeps the key value the vector pins
        kind = stat.ops if cat.dimensions.get(case["field"]) == "op" else cat.dimensions.get(case["field"])
        if kind in cat.keysets:
            key = bytes.fromhex(case["key"])
            assert cat.key_values[kind][case["text"]] == int.from_bytes(key[:4], "little") and not any(key[4:])


def test_compiled_catalogue_follows_the_pinned_vectors():
    out = subprocess.run([str(built("tests/catalogue_test")), str(REPO / "tests" / "vectors" / "catalogue.json")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert f"{len(VECTORS['statistics'])} statistics, {len(VECTORS['keys'])} key cases, 0 failed" in out.stdout


def test_unrecorded_ops_name_an_op_of_the_statistic_and_a_counter_that_counts_it():
    doc = json.loads(PACKAGE_JSON.read_text())
    stats = {s["name"]: s for s in doc["statistics"]}
    keysets = {k["name"]: [t["text"] for t in k["keys"]] for k in doc["keysets"]}
    rows = {(name, op, u["counted_by"]) for name, s in stats.items() for op, u in s["unrecorded"].items()}
    assert {("disk.offset", "flush", "disk.ops"), ("disk.latency", "missed", "disk.ops")} <= rows
    for name, op, counted_by in rows:
        stat, counter = stats[name], stats.get(counted_by)
        assert "op" in stat["filters"] and op in keysets[stat["ops"]], (name, op)
        assert counter and counter["kind"] == "counter" and counter["ops"] == stat["ops"], (name, counted_by)
        assert op not in counter["unrecorded"] and stat["unrecorded"][op]["why"], (name, op)
        with pytest.raises(ArchiveError, match=rf"^{re.escape(name)} records no op {op}: .+; "
                                               rf"{re.escape(counted_by)}\[op={op}\] counts them$"):
            catalogue.check_value(catalogue.by_name()[name], "op", op)
        catalogue.check_value(catalogue.by_name()[counted_by], "op", op)


@pytest.mark.parametrize("row,error", [
    ("STAT_UNRECORDED(DISK_SIZE, DISK, FLUSH, DISK_OPS, \"x\")", None),
    ("STAT_UNRECORDED(DISK_SIZE, DISK, FLUSHED, DISK_OPS, \"x\")", "AGG_DISK_FLUSHED"),
    ("STAT_UNRECORDED(DISK_SIZES, DISK, FLUSH, DISK_OPS, \"x\")", "DISK_SIZES"),
    ("STAT_UNRECORDED(NFS_SIZE, DISK, FLUSH, DISK_OPS, \"x\")", "NFS_SIZE has no op of key set DISK"),
    ("STAT_UNRECORDED(DISK_SIZE, DISK, FLUSH, DISK_LATENCY, \"x\")", "DISK_LATENCY is not a counter of key set DISK"),
    ("STAT_UNRECORDED(DISK_SIZE, DISK, FLUSH, NFS_OPS, \"x\")", "NFS_OPS is not a counter of key set DISK"),
])
def test_a_statistics_def_unrecorded_row_naming_what_is_not_there_does_not_compile(tmp_path, row, error):
    """collectors/catalogue.c checks each STAT_UNRECORDED row at compile time (a copy of
    statistics.def with one more row, found before catalogue/)."""
    text = (REPO / "catalogue" / "statistics.def").read_text()
    anchor = "#undef STAT_DISK_MISSED_WHY\n"
    assert anchor in text
    (tmp_path / "statistics.def").write_text(text.replace(anchor, anchor + row + "\n"))
    p = subprocess.run([os.environ.get("CC", "gcc"), "-fsyntax-only", "-std=gnu11", "-D_GNU_SOURCE", f"-I{tmp_path}",
                        "-Ibpf", "-Icatalogue", "-Ilib", "-Icollectors", "collectors/catalogue.c"],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
    if error is None:
        assert p.returncode == 0, p.stderr
    else:
        assert p.returncode != 0 and error in p.stderr, p.stderr


@pytest.mark.parametrize("name,needle", [
    ("nfs.ops[op=reed]", "nfs.ops has no op 'reed'; did you mean read, renew or rename?"),
    ("nfs.latency[tier=flash]", "valid: none, arc, l2arc, pool, zil"),
    ("disk.ops[op=getattr]", "valid: read, write, sync, flush, discard, other"),
    ("l2arc.latency[op=commit]", "valid: read, write"),
    ("nfs.latency[client=10.0.0.300][op]", "client '10.0.0.300' is not an IPv4 or IPv6 address"),
    ("nfs.ops[file=-3]", "file '-3' is not EXPORT:/path or object:ID"),
    ("disk.ops[device=nope0]", "this host has no block device 'nope0'; valid devices: "),
])
def test_create_refuses_a_wrong_value_naming_the_valid_ones(tmp_path, name, needle):
    p = strata("datasets", "create", name, "--archive", str(tmp_path / "a.db"))
    lines = p.stderr.strip().splitlines()
    assert p.returncode != 0 and len(lines) == 1 and lines[0].startswith("strata: "), p.stderr
    assert needle in lines[0], lines[0]
    if "device" in name:
        assert all(d in lines[0] for d in os.listdir("/sys/class/block"))
    assert not (tmp_path / "a.db").exists()       # refused before the archive is made


def test_create_takes_a_device_that_will_appear_later_when_asked(tmp_path):
    a = ["--archive", str(tmp_path / "a.db")]
    p = strata("datasets", "create", "disk.ops[device=nope0][op]", "--allow-absent-device", *a)
    assert p.returncode == 0 and "created disk.ops[device=nope0][op]" in p.stdout, p.stderr
    present = sorted(os.listdir("/sys/class/block"))[0]
    p = strata("datasets", "create", f"disk.latency[device={present}]", *a)
    assert p.returncode == 0, p.stderr


def test_creating_a_dataset_starts_no_program(tmp_path):
    """A stand-in strata-collect first in every place strata looks for it records any start."""
    bindir, marker = tmp_path / "bin", tmp_path / "started"
    bindir.mkdir()
    fake = bindir / "strata-collect"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    fake.chmod(0o755)
    env = {"STRATA_BIN_DIR": str(bindir), "PATH": f"{bindir}:{os.environ['PATH']}"}
    p = strata("datasets", "create", "nfs.ops[op=read][client]", "--archive", str(tmp_path / "a.db"), env=env)
    assert p.returncode == 0, p.stderr
    assert not marker.exists()


@pytest.mark.parametrize("folder", ["datasets", "heatmaps"])
def test_lower_layers_never_import_cli(folder):
    for path in (REPO / folder).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                target = ("." * node.level) + (node.module or "")
                assert not re.match(r"(strata\.cli|\.\.cli)\b", target), f"{path.name} imports {target}"
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("strata.cli") for a in node.names), path.name
