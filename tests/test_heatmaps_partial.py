"""Rates over partly collected columns, on real archives: events per collected second, at the
second level, from minute and ten-minute rollups (`strata breakdown --json`), across an
outage span, a heat map's average rate, and a gauge's mean over its collected seconds."""
import json

import pytest

from heatmaps_util import T0, build_archive, histogram, run_strata
from strata.datasets.archive import Archive
from strata.heatmaps.breakdown import compute
from strata.heatmaps.rebin import build_grid

OPS = 10   # ops per collected second


def _collected_until(last):
    """A counter collected from T0 for `last` seconds (the collector then stopped)."""
    return lambda t: {"c1": OPS} if t - T0 < last else None


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    # minute 0 whole, minute 1 its first 30 s; ten minutes 1 its first 5 minutes and 30 s
    return build_archive(tmp_path_factory.mktemp("partial") / "a.db", {
        "nfs.ops[client]": _collected_until(90),
        "nfs.ops[op]": _collected_until(930),
        "nfs.latency": lambda t: {"": histogram([200_000] * OPS)} if t - T0 < 90 else None,
        "arc.size": lambda t: {"": 100 if t - T0 < 60 else 400} if t - T0 < 70 else None,
    }, seconds=1200)


def _breakdown(archive, name, seconds):
    return _breakdown_since(archive, name, T0, T0 + seconds)


def _breakdown_since(archive, name, since, until):
    p = run_strata(["breakdown", name, "--since", str(since), "--until", str(until), "--json",
                    "--archive", str(archive)])
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_minute_columns_half_collected(archive):
    data = _breakdown(archive, "nfs.ops[client]", 600 * 60)        # 600 columns of a minute
    assert data["step"] == 60
    values = data["series"][0]["values"]
    assert values[:2] == [OPS, OPS]          # whole minute; half minute (was OPS / 2)
    assert all(v is None for v in values[2:])
    assert data["table"][0]["events"] == 90 * OPS and data["table"][0]["rate"] == OPS   # was 0.025
    shown = run_strata(["breakdown", "nfs.ops[client]", "--since", str(T0), "--until", str(T0 + 36000),
                        "--archive", str(archive)], env_extra={"NO_COLOR": "1", "COLUMNS": "100"})
    assert f"· {OPS} ops/s average" in shown.stdout, shown.stdout   # was 0.025 ops/s


def test_ten_minute_columns_partly_collected(archive):
    data = _breakdown(archive, "nfs.ops[op]", 600 * 600)           # 600 columns of ten minutes
    assert data["step"] == 600
    assert data["series"][0]["values"][:2] == [OPS, OPS]            # 600 s; 330 s of 600
    assert data["table"][0]["rate"] == OPS


def test_second_level_wide_column_and_outage_span(tmp_path):
    path = build_archive(tmp_path / "a.db", {"nfs.ops[client]": lambda t: {"c1": OPS} if t - T0 < 75 else None},
                         seconds=120)
    with Archive.open(str(path), readonly=False) as ar:
        info = ar.dataset("nfs.ops[client]")
        ing = ar.ingestor()
        with ing.transaction():   # an outage collected as one record: seconds 100..109
            ing.add(info.id, T0 + 100, "counter", {"c1": 10 * OPS}, seconds=10)
        qr = ar.query("nfs.ops[client]", T0, T0 + 120, 30)
        b = compute(qr, T0, T0 + 120, max_cols=4)
    assert list(b.series[0]) == [OPS] * 4     # the third and fourth columns were OPS / 2, OPS / 3
    assert b.rows[0].rate == OPS
    assert qr.level == "second" and list(qr.collected) == [30, 30, 15, 10]
    with Archive.open(str(path)) as ar:   # `datasets list`'s RATE: one record of 10 s in the window
        assert ar.rate(ar.dataset("nfs.ops[client]"), now=T0 + 110, window=30) == OPS   # was 10 * OPS


def test_heat_map_average_rate(archive):
    with Archive.open(str(archive)) as ar:
        qr = ar.query("nfs.latency", T0, T0 + 180, 60)
    grid = build_grid(qr, T0, T0 + 180, max_cols=3, ncells=10)
    assert grid.total == 90 * OPS and grid.seconds == 90


def test_gauge_mean_weighs_columns_by_collected_seconds(archive):
    with Archive.open(str(archive)) as ar:
        qr = ar.query("arc.size", T0, T0 + 180, 60)
    b = compute(qr, T0, T0 + 180, max_cols=3)
    assert list(b.series[0][:2]) == [100, 400]
    assert b.rows[0].rate == pytest.approx((100 * 60 + 400 * 10) / 70)   # was 250, the columns' mean


def test_rollup_range_is_named_as_counted(archive):
    """Minute records count whole minutes: a range that starts and ends inside minutes is
    drawn, counted and titled as the whole minutes it read, never as the range asked."""
    with Archive.open(str(archive)) as ar:
        qr = ar.query("nfs.latency", T0 + 30, T0 + 150, 60)
    grid = build_grid(qr, T0 + 30, T0 + 150, max_cols=3, ncells=10)
    assert qr.level == "minute" and grid.span == (T0, T0 + 180)
    assert grid.total == 90 * OPS and grid.seconds == 90
    data = _breakdown_since(archive, "nfs.ops[client]", T0 + 30, T0 + 30 + 599 * 60)
    assert data["step"] == 60 and (data["start"], data["end"]) == (T0, T0 + 600 * 60)
    assert data["table"][0]["events"] == 90 * OPS and data["table"][0]["rate"] == OPS
