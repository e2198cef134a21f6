"""Every dataset that can be created can be shown: the catalogue walked, one dataset of
every shape (each kind x with and without a breakdown x with and without filters) fed
with real events (the real engine under the libnfs load generator, a loop device's
direct writes, the engine's gauges) through the real collector, then drawn by
`strata show` in every format (the PNGs and SVGs of the process share one Chromium,
heatmaps/export.py). Each shows its data, and the JSON and CSV totals equal the
collector's records."""
import csv
import io
import json
import subprocess

import pytest
from click.testing import CliRunner

from collect_util import Collector, Engine, loop_device, private_copy
from conftest import IN_GUEST, built
from strata.cli.main import cli
from strata.datasets import catalogue, names
from strata.datasets.archive import Archive

SHAPES = ("plain", "breakdown", "filter", "filter+breakdown")
FORMATS = ("term", "html", "png", "svg", "json", "csv")


def served(stat) -> bool:
    """Statistics this fixture feeds: the engine's NFS probe, the block layer, the engine's gauges."""
    return "nfs_ops" in stat.probe or "block:" in stat.probe or stat.kind == "gauge"


def dataset_names(loopdev) -> list:
    """The catalogue's served statistics, each kind's cycled through the shapes until every
    shape of that kind has a dataset (gauges have neither breakdown nor filter)."""
    out = []
    for kind in ("heatmap", "counter", "gauge"):
        stats = [s for s in catalogue.load().statistics if s.kind == kind and served(s)]
        shapes = SHAPES if kind != "gauge" else ("plain",)
        for i in range(max(len(stats), len(shapes))):
            stat, shape = stats[i % len(stats)], shapes[i % len(shapes)]
            flt = ("device", loopdev) if "device" in stat.filters else ("client", "127.0.0.1")
            by = next(b for b in stat.breakdowns if b not in (flt[0], "hit/miss")) if "breakdown" in shape else ""
            out.append(str(names.DatasetName(stat.statistic, (flt,) if "filter" in shape else (), by)))
    return out


def collect(tmp_path, loopdev, wanted) -> dict:
    """{dataset name: its records} from the real collector while the engine serves a load
    and the loop device takes direct writes."""
    engine = Engine(private_copy(built("bin/strata-engine"), tmp_path), tmp_path, "a")
    c = Collector("--engine-pid", engine.pid)
    try:
        for i, name in enumerate(wanted):
            n = names.parse(name)
            c.add(f"d{i}", n.statistic, n.breakdown or "-", *(f"{f}={v}" for f, v in n.filters))
        engine.load(duration=1)
        subprocess.run(["dd", "if=/dev/zero", f"of=/dev/{loopdev}", "oflag=direct", "bs=4k", "count=200",
                        "status=none"], check=True)
        c.flush_now()
    finally:
        assert c.stop() == 0
        engine.stop()
    return {name: c.data(f"d{i}") for i, name in enumerate(wanted)}


def write_archive(path, records) -> tuple:
    """The records in a fresh archive; (first second, end) of the data."""
    times = [r["t"] for recs in records.values() for r in recs]
    first, end = min(times), max(times) + 1
    with Archive.open(str(path), readonly=False) as a:
        ids = {name: a.create(name, now=first, allow_absent_device=True) for name in records}
        ing = a.ingestor()
        with ing.transaction():
            for name, recs in records.items():
                for r in recs:
                    data = r["data"] if ids[name].kind != "heatmap" else \
                        {k: {int(b): n for b, n in v.items()} for k, v in r["data"].items()}
                    ing.add(ids[name].id, r["t"], ids[name].kind, data)
    return first, end


def events(records, kind) -> float:
    if kind == "heatmap":
        return sum(n for r in records for v in r["data"].values() for n in v.values())
    return sum(v for r in records for v in r["data"].values())


@pytest.mark.view("disk")
def test_every_shape_shows_its_data_in_every_format(tmp_path):
    with loop_device(tmp_path) as loopdev:
        wanted = dataset_names(loopdev)
        records = collect(tmp_path, loopdev, wanted)
    kinds = {n: catalogue.load().by_name()[names.parse(n).statistic].kind for n in wanted}
    assert {k for k in kinds.values()} == {"heatmap", "counter", "gauge"}
    archive = tmp_path / "every.db"
    first, end = write_archive(archive, records)
    runner = CliRunner()
    for name in wanted:
        kind = kinds[name]
        assert records[name] and (kind == "gauge" or events(records[name], kind) > 0), \
            f"{name}: the collector recorded nothing"
        common = ["show", name, "--since", str(first), "--until", str(end), "--archive", str(archive)]
        # no images in the kernel matrix's emulated guest, where Chromium exceeds its time
        for fmt in [f for f in FORMATS if not (IN_GUEST and f in ("png", "svg"))]:
            out = tmp_path / f"{wanted.index(name)}.{fmt}"
            args = common + ({"json": ["--json"], "csv": ["--csv"]}.get(fmt, ["--format", fmt])) + \
                (["-o", str(out)] if fmt in ("html", "png", "svg") else ["--color", "none"])
            r = runner.invoke(cli, args, env={"COLUMNS": "120", "LINES": "40"})
            assert r.exit_code == 0, (name, fmt, r.output)
            if fmt == "json":
                check_json(name, kind, json.loads(r.output), records[name])
            elif fmt == "csv":
                check_csv(name, kind, r.output, records[name])
            elif fmt == "term":
                assert r.output.startswith(name) and ("no " not in r.output.splitlines()[1]), r.output
            else:
                head = out.read_bytes()[:200].lstrip()
                assert out.stat().st_size > 1000 and head.startswith(
                    {"html": b"<html", "png": b"\x89PNG", "svg": b"<svg"}[fmt]), (name, fmt, head[:40])


def check_json(name, kind, doc, records):
    if kind == "heatmap":
        assert doc["events"] == events(records, kind) and doc["events"] > 0, name
    elif kind == "counter":
        assert doc["events"] == events(records, kind), name
    else:
        seen = [v for s in doc["series"] for v in s["values"] if v is not None]
        assert sorted(seen) == sorted(v for r in records for v in r["data"].values()), name


def check_csv(name, kind, text, records):
    rows = list(csv.DictReader(io.StringIO(text)))
    if kind == "heatmap":
        assert sum(int(r["count"]) for r in rows) == events(records, kind), name
    elif kind == "counter":
        total = sum(float(v) * int(r["seconds"]) for r in rows for k, v in r.items()
                    if k not in ("time", "seconds") and v)
        assert round(total) == events(records, kind), name
    else:
        seen = [float(v) for r in rows for k, v in r.items() if k not in ("time", "seconds") and v]
        assert sorted(seen) == pytest.approx(sorted(v for r in records for v in r["data"].values())), name
