"""The pictures' layout as headless Chromium draws them at the PNG's size (the plotly.js that
kaleido runs): the heat map's side-panel rate labels clear of the time axis's labels (whose
first one sits on the map's left edge), every row of a breakdown's top-N table inside the
picture, and the PNG as tall as the figure that holds them; tier band names apart at the
PNG's height and at the web page's."""
import json
import struct
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio

from heatmaps_util import T0, counter_result, heatmap_result, seed_latencies
from strata.heatmaps import export, figures, plot_breakdown, plot_heatmap
from strata.web.views import VIEW_HEIGHT

SECONDS = 300
CHROMIUM = ["/usr/bin/chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>"]   # offline

# per figure: the text boxes of the side panel's and the time axis's tick labels, of the tier
# band names, of the table's key column, and the bottom of the plotting area, in page pixels
MEASURE = """
Promise.all(FIGS.map((f, i) => Plotly.newPlot("f" + i, f.data, f.layout, {staticPlot: true}))).then(() => {
  const box = t => { const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.right, r.top, r.bottom]; };
  const out = FIGS.map((f, i) => {
    const gd = document.getElementById("f" + i), s = gd._fullLayout._size;
    const all = (el, sel) => el ? Array.from(el.querySelectorAll(sel)).map(box) : [];
    return {panel: all(gd, "g.xtick text"), time: all(gd, "g.x2tick text"), names: all(gd, "g.textpoint text"),
            keys: all(gd.querySelectorAll("g.y-column")[1], "text"),
            bottom: gd.getBoundingClientRect().top + s.t + s.h};
  });
  const pre = document.createElement("pre"); pre.id = "out"; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""


def heat_map(weight: int):
    """The seed's three bands at 20 x weight ops/s."""
    rng = np.random.default_rng(5)
    qr = heatmap_result({"": [(t, v, weight) for t in range(SECONDS) for v in seed_latencies(rng, 20)]}, SECONDS,
                        name="nfs.latency")
    grid = figures.build(qr, T0, T0 + SECONDS, figures.View(),
                         max_cols=plot_heatmap.HTML_MAX_COLS, ncells=plot_heatmap.HTML_CELLS)
    return plot_heatmap.figure(grid)


def tier_map(axis: str, height: int):
    """A map broken down by tier, arc, none and l2arc close on a linear axis, arc and none on
    a log one, drawn `height` pixels high (the files' 800, the web page's VIEW_HEIGHT)."""
    rng = np.random.default_rng(3)
    tiers = {"arc": (2_000, 6_000, 30), "none": (1_500, 4_000, 5), "l2arc": (100_000, 200_000, 10),
             "disk": (2_000_000, 8_000_000, 3)}
    qr = heatmap_result({k: [(t, int(v), 1) for t in range(SECONDS) for v in rng.integers(lo, hi, n)]
                         for k, (lo, hi, n) in tiers.items()}, SECONDS, name="nfs.latency[tier]")
    qr.breakdown = "tier"
    grid = figures.build(qr, T0, T0 + SECONDS, figures.View(axis=axis),
                         max_cols=plot_heatmap.HTML_MAX_COLS, ncells=plot_heatmap.HTML_CELLS)
    fig = go.Figure(plot_heatmap.figure_json(grid, height=height))
    fig.layout.height = height
    return fig


def breakdown(nkeys: int, top: int):
    qr = counter_result({f"10.0.0.{i}": np.full(SECONDS, 60 * i) for i in range(1, nkeys + 1)}, SECONDS)
    b = figures.build(qr, T0, T0 + SECONDS, figures.View(top=top, by="client"),
                      max_cols=plot_breakdown.BREAKDOWN_MAX_COLS)
    return plot_breakdown.figure(b)


def drawn(figs: list, folder) -> list:
    """What Chromium measured of each figure, drawn at the PNG's width and height."""
    js = export.plotly_js_beside(str(folder / "page.html"))
    divs = "".join(f'<div id="f{i}" style="width:{export.IMAGE_SIZE[0]}px;'
                   f'height:{f.layout.height or export.IMAGE_SIZE[1]}px"></div>' for i, f in enumerate(figs))
    page = folder / "page.html"
    page.write_text(f'<html><head><script src="{js.name}"></script></head><body style="margin:0">{divs}<script>'
                    f'const FIGS = [{",".join(pio.to_json(f) for f in figs)}];{MEASURE}</script></body></html>')
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run(CHROMIUM + [f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom",
                                         f"file://{page}"], capture_output=True, text=True, timeout=90).stdout
    assert '<pre id="out">' in dom, "plotly did not draw the figures"
    return json.loads(dom.split('<pre id="out">')[1].split("</pre>")[0].replace("&amp;", "&"))


def overlap(a, b) -> bool:
    return a[1] < b[2] and b[1] < a[2] and a[3] < b[4] and b[3] < a[4]


def png_height(path) -> int:
    return struct.unpack(">II", path.read_bytes()[16:24])[1]


def test_labels_clear_and_table_rows_inside(tmp_path):
    figs = [heat_map(1), heat_map(200), breakdown(14, 10), breakdown(14, 13)] + [
        tier_map("linear", export.IMAGE_SIZE[1]), tier_map("linear", VIEW_HEIGHT), tier_map("log", VIEW_HEIGHT)]
    with ThreadPoolExecutor(1) as pool:                    # the PNG beside the browser's run
        png = pool.submit(export.write_image, figs[3], str(tmp_path / "table.png"), "png")
        seen = drawn(figs, tmp_path)
        png.result()
    for fig in seen[:2]:
        assert len(fig["panel"]) >= 2 and fig["time"][0][0].startswith(time.strftime("%H:%M:%S", time.localtime(T0)))
        clashes = [(a[0], b[0]) for i, a in enumerate(fig["panel"]) for b in fig["panel"][i + 1:] + fig["time"]
                   if overlap(a, b)]
        assert not clashes, f"side panel labels over each other or the time axis's: {clashes}"
    for fig, keys in zip(seen[2:4], ([f"10.0.0.{i}" for i in range(14, 4, -1)] + ["other (4 keys)"],
                                    [f"10.0.0.{i}" for i in range(14, 1, -1)] + ["other (1 key)"])):
        shown = [k[0] for k in fig["keys"] if k[4] <= fig["bottom"]]   # the header among them
        assert [k for k in shown if k != "client"] == keys and "client" in shown, f"table rows inside: {shown}"
    for fig in seen[4:]:
        assert sorted(n[0].strip() for n in fig["names"]) == ["arc", "disk", "l2arc", "none"]
        clashes = [(a[0], b[0]) for i, a in enumerate(fig["names"]) for b in fig["names"][i + 1:] if overlap(a, b)]
        assert not clashes, f"tier band names over each other: {clashes}"
    assert png_height(tmp_path / "table.png") == 2 * figs[3].layout.height > 2 * export.IMAGE_SIZE[1]
