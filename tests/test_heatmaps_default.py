"""The first picture: the default latency heat map keeps the seed's bands (DRAM, flash,
disk) on rows of their own whatever a few slow outliers do, at the height of each
output: a 24-line terminal, HTML/PNG (their rows), JSON. bench/heatmap_default.py
measures the candidate defaults; this holds the one chosen (a log axis for latency)."""
import json

import numpy as np
import pytest

from heatmaps_util import T0, bands_apart, build_archive, histogram, run_strata, seed_with_outliers
from strata.heatmaps import plot_heatmap, term_heatmap

SECONDS = 60
RANGE = ["--since", str(T0), "--until", str(T0 + SECONDS)]
TERMINAL = {"NO_COLOR": "1", "COLUMNS": "100", "LINES": "24"}


@pytest.fixture(scope="module", params=[0.0, 0.001], ids=["demo-like", "0.1%-slow"])
def archive(request, tmp_path_factory):
    data = seed_with_outliers(np.random.default_rng(11), SECONDS, 1000, request.param)
    path = tmp_path_factory.mktemp("first") / "archive.db"
    return build_archive(path, {"nfs.latency": lambda t: {"": histogram(data[t - T0])}}, seconds=SECONDS)


def strata(archive, *args):
    p = run_strata(["heatmap", "nfs.latency", *RANGE, "--archive", str(archive), *args], env_extra=TERMINAL)
    assert p.returncode == 0, p.stderr
    return p.stdout


def grid(archive, rows):
    return json.loads(strata(archive, "--json", "--rows", str(rows)))


def test_json_and_html_rows_keep_the_bands_apart(archive):
    doc = json.loads(strata(archive, "--json"))
    assert doc["axis"] == "log" and bands_apart(doc)
    assert bands_apart(grid(archive, plot_heatmap.HTML_CELLS))      # the rows of HTML and PNG


def test_terminal_keeps_the_bands_apart(archive):
    """A 24-line terminal without colour: its rows apart in the JSON grid, and three blocks of
    drawn lines (the bands) below the outliers' in the text itself."""
    _, cells = term_heatmap.geometry(100, 24, "none")
    assert bands_apart(grid(archive, cells))
    _, colour_cells = term_heatmap.geometry(100, 24, "truecolor")
    assert bands_apart(grid(archive, colour_cells))
    text = strata(archive)
    body = [line.split("┤" if "┤" in line else "│", 1)[1] for line in text.splitlines()
            if ("│" in line or "┤" in line) and "─" not in line]
    blocks, inside = 0, False
    for line in body:
        drawn = bool(line.strip())
        blocks += drawn and not inside
        inside = drawn
    assert len(body) == cells and blocks >= 3, text


def test_html_and_png_are_drawn_on_a_log_axis(archive, tmp_path):
    html, png = tmp_path / "map.html", tmp_path / "map.png"
    strata(archive, "--format", "html", "-o", str(html))
    assert "(log scale)" in html.read_text()
    strata(archive, "--format", "png", "-o", str(png))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("sizes,axis", [
    ((4096,) * 249 + (42 << 20,), "log"),      # 4 KiB I/Os and one of 42 MiB: 4 decades apart
    ((4096, 8192, 16384), "linear"),           # within one decade and a half
], ids=["decades", "narrow"])
def test_sizes_get_a_log_axis_where_they_span_decades(tmp_path, sizes, axis):
    """disk.size with 250 I/Os a second: on a linear axis up to 42 MiB every 4 KiB I/O
    lands in the bottom row; the default puts them on rows of their own, --linear keeps
    the linear axis."""
    path = build_archive(tmp_path / "a.db", {"disk.size": lambda t: {"": histogram(list(sizes))}}, seconds=SECONDS)
    run = lambda *a: json.loads(run_strata(["heatmap", "disk.size", *RANGE, "--archive", str(path), "--json", *a],
                                           env_extra=TERMINAL).stdout)
    doc = run()
    assert doc["axis"] == axis
    busy = [r for r, row in enumerate(doc["counts"]) if any(row)]
    assert len(busy) == len(set(histogram(list(sizes))))
    if axis == "log":
        assert busy[0] > 0 and doc["edges"][busy[0]] >= 1024, "the 4 KiB I/Os share the bottom row"
    assert run("--linear")["axis"] == "linear"


@pytest.mark.parametrize("values, axis_range, ytype", [
    ([4e3, 2e5, 3e6], [0, 1e8], "linear"),        # arc, l2arc and pool near 0 on a linear axis to 100 ms
    ([4e3, 2e5, 3e6], [3, 8], "log"),             # decades apart: nothing moves
    ([9.9e7, 9.95e7, 1e3], [0, 1e8], "linear"),   # two at the top: kept under it
])
def test_tier_band_names_stay_apart_inside_the_axis(values, axis_range, ytype):
    at = plot_heatmap.apart(values, axis_range, ytype, 0.045)
    axis = np.log10(at) if ytype == "log" else np.array(at)
    gap = 0.045 * (axis_range[1] - axis_range[0])
    order = np.argsort(values)
    assert np.all(np.diff(axis[order]) >= gap * (1 - 1e-9))              # in the values' order, apart
    assert axis.min() >= axis_range[0] and axis.max() <= axis_range[1]
    if ytype == "log":
        assert np.allclose(at, values)
