"""Numbers at the edges: slow rates print their digits (never "0"), values and durations
too large for an archive's 64-bit seconds are one line, --since in the future says so."""
import re

import numpy as np
import pytest

from datasets_util import one_line_error, strata
from heatmaps_util import T0, build_archive, histogram
from strata.datasets import retention
from strata.datasets.errors import ArchiveError
from strata.heatmaps import units, value_range
from strata.views import times

SECONDS = 2000   # one op every 1000 s: 0.001 ops/s


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("units") / "a.db"
    return str(build_archive(path, {
        "nfs.latency[client]": lambda t: {"10.0.0.1": histogram([5_000]) if t % 1000 == 0 else {}},
        "nfs.ops[client]": lambda t: {"10.0.0.1": 1 if t % 1000 == 0 else 0},
    }, seconds=SECONDS))


def view(archive, *args):
    p = strata(*args, "--archive", archive, "--last", "1h", "--until", str(T0 + SECONDS),
               env={"NO_COLOR": "1", "COLUMNS": "100"})
    assert p.returncode == 0, p.stderr
    return p.stdout.splitlines()


def test_format_count_keeps_digits_of_slow_rates_in_seven_columns():
    assert units.format_count(0) == "0"
    assert [units.format_count(v) for v in (0.0012, 0.004, 0.0567, 3.2e-10, 0.57, 6480)] == \
        ["0.0012", "0.004", "0.0567", "3.2e-10", "0.57", "6.48k"]
    texts = [units.format_count(v) for v in np.geomspace(1e-10, 1e15, 5000)]
    assert "0" not in texts and max(map(len, texts)) <= 7


def test_slow_rates_print_in_breakdown_and_heat_map(archive):
    lines = view(archive, "breakdown", "nfs.ops[client]")
    assert "· 0.001 ops/s average" in lines[1], lines[1]
    row = next(line for line in lines if "10.0.0.1" in line and "%" in line).split()
    assert row[2:4] == ["2", "0.001"], row
    ticks = [line.index("┤") for line in lines if "┤" in line]
    assert len(set(ticks)) == 1 and len(ticks) > 2, lines
    lines = view(archive, "heatmap", "nfs.latency")
    assert lines[1].startswith("2 ops · 0.001 ops/s average"), lines[1]
    panel = [line for line in lines if "5µs ┤" in line]
    assert panel and panel[0].split()[0] == "0.001", lines
    axis = {line.index(c) for line in lines for c in "┤│└" if c in line}
    assert len(axis) == 1, lines


def test_values_too_large_or_not_finite_are_one_line(archive):
    with pytest.raises(ValueError, match=r"^1e400: too large$"):
        units.parse_value("1e400", "ns")
    with pytest.raises(ValueError, match="1e308s: too large"):
        units.parse_value("1e308s", "ns")
    for text in ("nan", "inf", "-Infinity", "inf ms"):
        with pytest.raises(ValueError, match=f"^{re.escape(text)}: not a finite number$"):
            units.parse_value(text, "ns")
    with pytest.raises(ValueError, match=r"in range '1e400\.\.': 1e400: too large"):
        value_range.parse("1e400..", "ns")
    p = strata("heatmap", "nfs.latency", "--ymin", "nan", "--archive", archive)
    one_line_error(p, "--ymin: nan: not a finite number")


def test_durations_beyond_a_century_are_refused(archive):
    assert retention.parse_duration("5200w") == 5200 * 7 * 86400
    with pytest.raises(ArchiveError, match="longer than 100 years"):
        retention.parse_duration("5300w")
    with pytest.raises(ValueError, match="longer than 100 years"):
        times.parse_duration("99999999999999999999w")
    p = strata("heatmap", "nfs.latency", "--last", "99999999999999999999w", "--archive", archive)
    one_line_error(p, "99999999999999999999w: longer than 100 years")
    assert p.returncode == 2
    p = strata("datasets", "prune", "nfs.ops[client]", "--older-than", "99999999999999999999w",
               "--archive", archive)
    one_line_error(p, "99999999999999999999w: longer than 100 years")
    assert p.returncode == 2


def test_since_in_the_future_says_so_without_an_until(archive):
    p = strata("stream", "nfs.latency", "--since", "2099-01-01", "--archive", archive)
    one_line_error(p, "--since 2099-01-01 is in the future")
    assert "--until" not in p.stderr and p.returncode == 2
    p = strata("heatmap", "nfs.latency", "--since", "2099-01-01", "--until", "2098-01-01", "--archive", archive)
    one_line_error(p, "--since 2099-01-01 is not before --until 2098-01-01")
