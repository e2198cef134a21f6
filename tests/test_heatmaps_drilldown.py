"""Drill-down: `strata breakdown ... --range LO..HI` on an archive of known content,
written through the real ingest path. Per-key counts in a range are checked
against counts the test makes itself from the raw values it generated; ranges
whose ends fall inside a bucket are reported as snapped; bad ranges are one-line
errors. Also: `strata heatmap --json` and the HTML hover's drill-down command."""
import json
import re
import shlex
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from heatmaps_util import T0, build_archive, histogram, run_strata
from strata.heatmaps import clock
from strata.views.times import parse_time
from test_heatmaps_html import chromium

SECONDS = 90
RANGE = ["--since", str(T0), "--until", str(T0 + SECONDS)]
PLAIN = {"NO_COLOR": "1", "COLUMNS": "110", "LINES": "40"}
CLIENTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
DEVICES = ["loop0", "loop1"]
# Sizes on and around bucket edges: 4000 and 4100 are edges, 4096 (4KiB) lies inside [4000, 4100).
SIZES = np.array([512, 3999, 4000, 4096, 4099, 4100, 8192, 64_999, 65_000, 65_536, 66_000, 131_072, 1_000_000])


def latencies(rng, i):
    """Client i: fast DRAM hits, flash reads and, more for higher i, slow disk reads (ns)."""
    return np.concatenate([rng.integers(1_000, 10_000, 20), rng.integers(120_000, 300_000, 10),
                           rng.integers(900_000, 30_000_000, 2 + 3 * i)])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """(archive path, raw values {dataset: {key: {t: values}}})."""
    rng = np.random.default_rng(19)
    raw = {"nfs.latency[client]": {}, "nfs.size[client]": {}, "disk.offset[device]": {}}

    def keep(name, t, values_by_key):
        for key, values in values_by_key.items():
            raw[name].setdefault(key, {})[t] = values
        return {key: histogram(values) for key, values in values_by_key.items()}

    path = tmp_path_factory.mktemp("drill") / "archive.db"
    build_archive(path, {
        "nfs.latency[client]": lambda t: keep("nfs.latency[client]", t, {
            c: latencies(rng, i) for i, c in enumerate(CLIENTS) if (t + i) % 7}),
        "nfs.latency": lambda t: None,
        "nfs.size[client]": lambda t: keep("nfs.size[client]", t, {
            c: rng.choice(SIZES, 5 + i) for i, c in enumerate(CLIENTS)}),
        "disk.offset[device]": lambda t: keep("disk.offset[device]", t, {
            d: rng.integers(0, 4 << 30, 8) for d in DEVICES}),
        "nfs.ops[client]": lambda t: {c: 3 for c in CLIENTS},
    }, seconds=SECONDS)
    return path, raw


def strata(path, *args, env=PLAIN):
    return run_strata(list(args) + ["--archive", str(path)], env_extra=env)


def breakdown_json(path, name, rng):
    p = strata(path, "breakdown", name, "--range", rng, *RANGE, "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def in_range(raw, lo, hi):
    """{key: {t: events with lo <= value < hi}} counted from the raw values."""
    hi = np.inf if hi is None else hi
    return {k: {t: int(((v >= lo) & (v < hi)).sum()) for t, v in per_t.items()} for k, per_t in raw.items()}


def check_counts(out, raw, lo, hi):
    """The JSON of a range breakdown holds, per key, exactly the events counted from raw values."""
    want = in_range(raw, lo, hi)
    assert out["range"]["from"] == lo and out["range"]["to"] == hi
    assert out["step"] == 1 and out["metric"] == "rate"
    table = {r["key"]: r for r in out["table"]}
    assert set(table) == set(raw)
    for key, per_t in want.items():
        assert table[key]["events"] == sum(per_t.values()), key
        everything = sum(len(v) for v in raw[key].values())
        assert table[key]["of_key"] == pytest.approx(100.0 * sum(per_t.values()) / everything)
        series = next(s["values"] for s in out["series"] if s["key"] == key)
        assert [series[t - T0] for t in range(T0, T0 + SECONDS)] == [per_t.get(t, 0) for t in range(T0, T0 + SECONDS)]
    ranked = [r["events"] for r in out["table"]]
    assert ranked == sorted(ranked, reverse=True)
    assert out["events"] == sum(sum(p.values()) for p in want.values())


@pytest.mark.parametrize("text,lo,hi", [
    ("10ms..", 10_000_000, None),
    ("..200us", 0, 200_000),
    ("1ms..5ms", 1_000_000, 5_000_000),
    ("120µs..300us", 120_000, 300_000),
    ("2500000..", 2_500_000, None),                  # a bare number is in ns
])
def test_latency_ranges_count_exactly(data, text, lo, hi):
    path, raw = data
    out = breakdown_json(path, "nfs.latency[client]", text)
    assert out["range"]["snapped"] is False
    check_counts(out, raw["nfs.latency[client]"], lo, hi)


def test_edges_inside_a_bucket_are_snapped_and_printed(data):
    path, raw = data
    out = breakdown_json(path, "nfs.latency[client]", "1.05ms..9.95ms")
    assert out["range"]["snapped"] is True and out["range"]["asked"] == [1_050_000, 9_950_000]
    check_counts(out, raw["nfs.latency[client]"], 1_000_000, 10_000_000)
    p = strata(path, "breakdown", "nfs.latency[client]", "--range", "1.05ms..9.95ms", *RANGE)
    assert p.returncode == 0, p.stderr
    head = p.stdout.splitlines()[0]
    assert "latency 1ms..10ms (snapped from 1.05ms..9.95ms)" in head
    assert "of its ops" in p.stdout
    exact = strata(path, "breakdown", "nfs.latency[client]", "--range", "10ms..", *RANGE)
    assert "latency 10ms..∞  " in exact.stdout.splitlines()[0] and "snapped" not in exact.stdout


@pytest.mark.parametrize("text,lo,hi,snapped", [
    ("64KiB..", 65_000, None, True),                 # 65536 lies in [65000, 66000)
    ("..4k", 0, 4_100, True),                        # 4096 lies in [4000, 4100)
    ("4kB..64kB", 4_000, 64_000, False),             # decimal prefixes: edges already
    ("4000..4100", 4_000, 4_100, False),
])
def test_size_ranges(data, text, lo, hi, snapped):
    path, raw = data
    out = breakdown_json(path, "nfs.size[client]", text)
    assert out["range"]["snapped"] is snapped
    check_counts(out, raw["nfs.size[client]"], lo, hi)


def test_offset_range(data):
    path, raw = data
    out = breakdown_json(path, "disk.offset[device]", "1GiB..2GiB")
    check_counts(out, raw["disk.offset[device]"], 1_000_000_000, 2_200_000_000)   # 1073741824 -> 1.0e9, 2147483648 -> 2.2e9
    assert out["range"]["snapped"] is True


@pytest.mark.parametrize("args,expect", [
    (["nfs.latency[client]", "--range", "10ms..1ms"], "is empty"),
    (["nfs.latency[client]", "--range", "abc.."], "not a value: 'abc'"),
    (["nfs.latency[client]", "--range", ".."], "has no end"),
    (["nfs.latency[client]", "--range", "10ms"], "not a range"),
    (["nfs.latency[client]", "--range", "5ms..5ms"], "is empty"),
    (["nfs.latency[client]", "--range", "1KiB.."], "is not a time"),
    (["nfs.size[client]", "--range", "1ms.."], "is not a size"),
    (["nfs.ops[client]", "--range", "1ms.."], "needs a heat-map statistic"),
])
def test_bad_ranges_are_one_line_errors(data, args, expect):
    path, _ = data
    p = strata(path, "breakdown", *args, *RANGE)
    assert p.returncode != 0 and "Traceback" not in p.stderr and p.stdout == ""
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and expect in lines[0], p.stderr


def test_range_breakdown_html(data, tmp_path):
    path, _ = data
    out = tmp_path / "bd.html"
    p = strata(path, "breakdown", "nfs.latency[client]", "--range", "10ms..", *RANGE, "--format", "html", "-o", str(out))
    assert p.returncode == 0, p.stderr
    html = out.read_text()
    assert "latency 10ms..∞" in html and "of its ops" in html and "\"stackgroup\":\"one\"" in html


def test_heatmap_json_grid(data):
    path, raw = data
    p = strata(path, "heatmap", "nfs.latency[client]", *RANGE, "--log", "--percentiles", "99", "--json")
    assert p.returncode == 0, p.stderr
    grid = json.loads(p.stdout)
    values = raw["nfs.latency[client]"]
    everything = np.concatenate([v for per_t in values.values() for v in per_t.values()])
    assert grid["events"] == len(everything) and grid["below"] == 0 and grid["above"] == 0
    assert grid["times"] == list(range(T0, T0 + SECONDS)) and grid["step"] == 1
    edges = np.array(grid["edges"])
    counts = np.array(grid["counts"])
    assert counts.shape == (len(edges) - 1, SECONDS)
    for t in (0, 13, SECONDS - 1):          # every column, row by row, from the raw values
        column = np.concatenate([per_t[T0 + t] for per_t in values.values() if T0 + t in per_t])
        assert list(counts[:, t]) == list(np.histogram(column, bins=edges)[0])
    per_key = {k["key"]: k for k in grid["per_key"]}
    assert set(per_key) == set(CLIENTS)
    for key, per_t in values.items():
        assert per_key[key]["events"] == sum(len(v) for v in per_t.values())
        cells = np.zeros_like(counts)
        for r, c, n in per_key[key]["cells"]:
            cells[r, c] = n
        first = min(per_t)
        assert list(cells[:, first - T0]) == list(np.histogram(per_t[first], bins=edges)[0])
    assert sum(sum(n for _, _, n in k["cells"]) for k in grid["per_key"]) == counts.sum()
    assert len(grid["percentiles"]["p99"]) == SECONDS


def test_heatmap_json_one_key_and_cropped(data):
    path, raw = data
    p = strata(path, "heatmap", "nfs.latency[client=10.0.0.2]", *RANGE, "--ymax", "1ms", "--json")
    assert p.returncode == 0, p.stderr
    grid = json.loads(p.stdout)
    values = np.concatenate(list(raw["nfs.latency[client]"]["10.0.0.2"].values()))
    assert grid["dataset"] == "nfs.latency[client=10.0.0.2]"
    assert grid["derived"] == "client=10.0.0.2 of nfs.latency[client]"
    assert [k["events"] for k in grid["per_key"]] == [len(values)]
    assert grid["edges"][-1] == 1_000_000
    assert grid["above"] == int((values >= 1_000_000).sum()) and grid["events"] == len(values)


def hover_template(html: str) -> str:
    """The heat map trace's hovertemplate from the plotly JSON in the page."""
    found = re.findall(r'"hovertemplate":"((?:[^"\\]|\\.)*)"', html)
    return json.loads('"' + next(t for t in found if "customdata[2]" in t) + '"')


def hover_in_chromium(html_path, row, col, tmp_path) -> str:
    """The hover label Chromium draws for heat-map cell (row, col): the page is loaded
    headless with a script that hovers the cell through plotly's own Fx.hover."""
    page = tmp_path / "hover.html"
    page.write_text(html_path.read_text().replace("</body>", f"""<script>
window.addEventListener("load", () => setTimeout(() => Plotly.Fx.hover(
    document.querySelector(".plotly-graph-div"), [{{curveNumber: 1, pointNumber: [{row}, {col}]}}], "x2y2"), 300));
</script></body>"""))
    dom = chromium("--virtual-time-budget=10000", "--dump-dom", f"file://{page}").stdout
    layer = dom[dom.index('class="hoverlayer"'):]
    layer = layer[:layer.index("</svg>")]
    return " | ".join(t.strip() for t in re.findall(r">([^<>]+)<", layer) if t.strip())


HOVERED = {"nfs.latency[client]": [], "nfs.size[client]": ["--log"]}


def hover_busiest_cell(path, name, extra, tmp_path):
    """(heat-map JSON grid, row, column, hover label) of the busiest cell of name's heat map."""
    grid = json.loads(strata(path, "heatmap", name, *RANGE, *extra, "--json").stdout)
    counts = np.array(grid["counts"])
    row, col = np.unravel_index(np.argmax(counts), counts.shape)
    out = tmp_path / "map.html"
    p = strata(path, "heatmap", name, *RANGE, *extra, "--format", "html", "-o", str(out))
    assert p.returncode == 0, p.stderr
    return grid, row, col, hover_in_chromium(out, row, col, tmp_path)


@pytest.fixture(scope="module")
def hovered(data, tmp_path_factory):
    """hover_busiest_cell for each of HOVERED, the browsers run side by side."""
    path, _ = data
    with ThreadPoolExecutor(len(HOVERED)) as pool:
        runs = {name: pool.submit(hover_busiest_cell, path, name, extra, tmp_path_factory.mktemp("hover"))
                for name, extra in HOVERED.items()}
        return {name: run.result() for name, run in runs.items()}


@pytest.mark.parametrize("name", HOVERED)
def test_html_hover_command_breaks_its_band_down(data, hovered, name):
    """In a real browser: the hover of the busiest cell shows its count and a command; run,
    the command counts per key exactly what the heat map's row holds for that key."""
    path, _ = data
    grid, row, col, label = hovered[name]
    counts = np.array(grid["counts"])
    assert f"| {counts[row, col]:,} ops |" in label, label
    args = shlex.split(label.split("break down: ")[1].split(" | ")[0])
    assert args[:3] == ["strata", "breakdown", name] and args[-2] == "--range"
    assert args[3:7] == ["--since", clock.typed(T0), "--until", clock.typed(T0 + SECONDS)]
    assert [parse_time(t, 0) for t in args[4:7:2]] == [T0, T0 + SECONDS]   # read back as the same seconds
    drilled = breakdown_json(path, name, args[-1])
    assert drilled["range"]["snapped"] is False, args[-1]
    assert [drilled["range"]["from"], drilled["range"]["to"]] == grid["edges"][row:row + 2]
    band = {k["key"]: sum(n for r, _, n in k["cells"] if r == row) for k in grid["per_key"]}
    assert {r["key"]: r["events"] for r in drilled["table"]} == band and sum(band.values()) > 0


def test_html_hover_names_the_broken_down_dataset(data, tmp_path):
    """A heat map without a breakdown drills into the dataset that has one; one filtered to a
    key stays within it (no finer breakdown here: the key's own events); sizes use kB."""
    path, _ = data
    out = tmp_path / "plain.html"
    p = strata(path, "heatmap", "nfs.latency", *RANGE, "--format", "html", "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert "strata breakdown 'nfs.latency[client]' --since" in hover_template(out.read_text())
    out = tmp_path / "size.html"
    build = strata(path, "heatmap", "nfs.size[client=10.0.0.1]", *RANGE, "--format", "html", "-o", str(out))
    assert build.returncode == 0, build.stderr
    template = hover_template(out.read_text().replace("\\u002f", "/"))
    assert "strata breakdown 'nfs.size[client=10.0.0.1]'" in template and f"--archive {path}" in template
    assert "--range %{customdata[3]:.6~s}B..%{customdata[4]:.6~s}B" in template


def test_value_range_parsing_in_process():
    """The snapping rules on their own: lower ends move down, upper ends up, to bucket edges."""
    from strata.heatmaps import value_range
    r = value_range.parse("4.05ms..", "ns")
    assert (r.lo, r.hi, r.snapped) == (4_000_000, None, True) and r.label() == "4ms..∞"
    r = value_range.parse("..205us", "ns")
    assert (r.lo, r.hi) == (0, 210_000) and r.note() == "0..210µs (snapped from ..205us)"
    r = value_range.parse("7..8", "ns")                       # below 10, every value is its own bucket
    assert (r.lo, r.hi, r.snapped) == (7, 8, False)
    assert list(r.buckets([6, 7, 8])) == [False, True, False]
    r = value_range.parse("1kB..1e30", "bytes")                # past the last bucket: open-ended
    assert (r.lo, r.hi) == (1000, None)
    for bad in ("1ms..1ms", "-1ms..", "1ms...", "..0"):
        with pytest.raises(ValueError):
            value_range.parse(bad, "ns")
    with pytest.raises(ValueError, match="latency, size or offset"):
        value_range.parse("1..", "ops")
