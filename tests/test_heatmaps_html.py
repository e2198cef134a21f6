"""HTML, PNG and SVG output: plotly files sharing one plotly.js per folder (or one
self-contained file) that headless Chromium renders offline (axis titles with units
in the DOM, a non-blank screenshot), and static exports through kaleido with sane
dimensions."""
import struct
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from heatmaps_util import T0, build_archive, histogram, run_strata, seed_latencies
from strata.heatmaps.clock import zone

CHROMIUM = ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"]   # offline


def png_size(path):
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    rng = np.random.default_rng(11)
    path = tmp_path_factory.mktemp("html") / "a.db"
    clients = ["10.0.0.1", "10.0.0.2"]
    return build_archive(path, {
        "nfs.latency[client]": lambda t: {c: histogram(seed_latencies(rng, 60 * (i + 1))) for i, c in enumerate(clients)},
        "nfs.ops[client]": lambda t: {c: 60 * (i + 1) for i, c in enumerate(clients)},
    }, seconds=300)


def strata(archive, *args):
    p = run_strata(list(args) + ["--archive", str(archive), "--since", str(T0), "--until", str(T0 + 300)])
    assert p.returncode == 0, p.stderr
    return p


def chromium(*args, timeout=90):
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(CHROMIUM + [f"--user-data-dir={profile}"] + list(args),
                              capture_output=True, text=True, timeout=timeout)


def test_html_shares_plotly_js_and_renders_offline(archive, tmp_path):
    out = tmp_path / "map.html"
    strata(archive, "heatmap", "nfs.latency[client]", "--log", "--percentiles", "50,99", "-o", str(out))
    strata(archive, "breakdown", "nfs.ops", "--by", "client", "-o", str(tmp_path / "bd.html"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bd.html", "map.html", "plotly.min.js"]
    html = out.read_text().replace("\\u002f", "/")
    assert '<script charset="utf-8" src="plotly.min.js"></script>' in html and "http" not in html.split("<body>")[0]
    assert "latency (log scale)" in html
    assert f"time ({zone()})" in html and "%{customdata[2]:,} ops" in html      # hover: time, range, count
    assert out.stat().st_size < 1_000_000 < (tmp_path / "plotly.min.js").stat().st_size
    shot = tmp_path / "shot.png"                                            # one browser run: DOM and screenshot
    dom = chromium("--virtual-time-budget=10000", "--dump-dom", f"--screenshot={shot}", "--window-size=1200,800",
                   f"file://{out}").stdout
    assert "main-svg" in dom, "plotly did not render"
    assert f"time ({zone()})" in dom and "latency (log scale)" in dom
    assert "100µs" in dom and "p99" in dom                                  # log ticks with units, legend
    assert png_size(shot) == (1200, 800)
    assert shot.stat().st_size > 40_000, "screenshot looks blank"


def test_self_contained_html_is_one_file(archive, tmp_path):
    out = tmp_path / "one.html"
    strata(archive, "heatmap", "nfs.latency[client]", "--self-contained", "-o", str(out))
    assert [p.name for p in tmp_path.iterdir()] == ["one.html"]
    html = out.read_text()
    assert 'src="plotly.min.js"' not in html and out.stat().st_size > 3_000_000


def test_png_and_svg_exports(archive, tmp_path):
    png, svg = tmp_path / "map.png", tmp_path / "map.svg"
    with ThreadPoolExecutor(2) as pool:                  # the two kaleido exports side by side
        runs = [pool.submit(strata, archive, "heatmap", "nfs.latency[client]", "--outliers", "99", "--log",
                            "-o", str(png)),                     # --log: not kaleido's --logistro-*
                pool.submit(strata, archive, "heatmap", "nfs.latency[client]", "--linear", "--format", "svg", "-o",
                            str(svg))]
        for run in runs:
            run.result()
    assert png_size(png) == (2800, 1600) and png.stat().st_size > 100_000
    text = svg.read_text()
    assert text.lstrip().startswith("<svg") and f"time ({zone()})" in text and "latency (ms)" in text


def test_breakdown_html(archive, tmp_path):
    out = tmp_path / "bd.html"
    strata(archive, "breakdown", "nfs.ops", "--by", "client", "--format", "html", "-o", str(out))
    html = out.read_text().replace("\\u002f", "/")
    assert "ops/s" in html and "10.0.0.2" in html and "\"stackgroup\":\"one\"" in html
