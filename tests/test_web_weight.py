"""`strata web` sends less: plotly.js's cartesian bundle (built from the npm registry by
web/web.mk), it and the views' JSON gzipped for a client that takes it (as they were for
one that does not), and a heat map's hover data as counts with each row's bounds once,
which the page puts back into every cell; the page draws heat maps and graphs with it
(at most 8 views: a 9th is refused in words)."""
import base64
import gzip
import json
import urllib.request

import numpy as np

from heatmaps_util import T0, build_archive, histogram, seed_latencies
from strata.web.server import PLOTLY_CARTESIAN, PLOTLY_JS
from web_util import NO_PROXY, browser, plots_ready, state_url, web_server


def fetch(url, gzipped=True) -> tuple:
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if gzipped else {})
    with NO_PROXY.open(req, timeout=20) as r:
        return r.headers, r.read()


def test_assets_and_views_travel_gzipped(tmp_path):
    rng = np.random.default_rng(7)
    path = build_archive(tmp_path / "a.db", {"nfs.latency": lambda t: {"": histogram(seed_latencies(rng, 80))},
                                              "nfs.ops[client]": lambda t: {"10.0.0.1": 5, "10.0.0.2": 9}}, seconds=120)
    with web_server(path) as base:
        assert PLOTLY_JS == PLOTLY_CARTESIAN, "make web/static/plotly-cartesian.min.js (web/web.mk)"
        with open(PLOTLY_JS, "rb") as f:
            plotly = f.read()
        assert b"plotly.js (cartesian - minified) v3." in plotly[:200] and len(plotly) < 1_500_000
        headers, body = fetch(base + "/static/plotly.min.js")
        assert headers["Content-Encoding"] == "gzip" and gzip.decompress(body) == plotly
        assert len(body) < 0.4 * len(plotly), (len(body), len(plotly))
        headers, body = fetch(base + "/static/plotly.min.js", gzipped=False)
        assert "Content-Encoding" not in headers and body == plotly
        view = f"/api/view?name=nfs.latency&since={T0}&until={T0 + 120}"
        headers, body = fetch(base + view)
        assert headers["Content-Encoding"] == "gzip"
        answer = json.loads(gzip.decompress(body))
        assert json.loads(fetch(base + view, gzipped=False)[1])["rows"] == answer["rows"]
        heat = answer["figure"]["data"][1]
        cells = heat["customdata"]
        nrows, ncols = (int(n) for n in cells["shape"].split(","))
        assert ncols == 120 and len(answer["rows"]) == nrows and all(len(r) in (2, 4) for r in answer["rows"])
        counts = np.frombuffer(base64.b64decode(cells["bdata"]), dtype=np.dtype(cells["dtype"]))
        assert counts.size == nrows * ncols and counts.sum() == 80 * 120          # every event, once
        assert len(gzip.decompress(body)) < 10 * len(body)          # sanity: a JSON body, not an empty one
        with browser() as page:                                   # the page puts the bounds back
            page.get(state_url(base, {"views": [{"name": "nfs.latency"}, {"name": "nfs.ops[client]"}], "since": T0,
                                      "until": T0 + 120, "live": False}))
            assert plots_ready(page, 2) == [120, 120]
            assert page.execute_script("return views[1].div.data.map(t => t.name)") == ["10.0.0.2", "10.0.0.1"]
            cell = page.execute_script("const cd = views[0].cells, r = cd.findIndex(row => row[0][2]);"
                                       " return [r, cd[r][0], cd[r].length];")
            r, first, columns = cell
            assert columns == 120 and first[:2] == answer["rows"][r][:2] and first[2] > 0, cell
            # a page follows at most 8 views live: a 9th is refused in words, not dropped in silence
            page.get(state_url(base, {"views": [{"name": "nfs.ops[client]"}] * 9, "since": T0, "until": T0 + 120,
                                      "live": False}))
            assert plots_ready(page, 8) == [120] * 8
            assert "the first 8 are shown" in page.find_element("id", "message").text
            buttons = page.execute_script("return Array.from(document.querySelectorAll('.modebar-btn'))"
                                          ".map(b => b.getAttribute('data-attr') + '=' + b.getAttribute('data-val'))")
            assert buttons and not {"dragmode=pan", "zoom=in", "zoom=out"} & set(buttons), buttons   # no drill by pan
            page.find_element("id", "add-view").click()
            assert "remove one to add another" in page.find_element("id", "message").text
            assert len(page.find_elements("css selector", ".plot")) == 8
