"""The demo's cache-sizes picture (demos/pictures.py) on a real archive: its time axis is
in the zone the other figures use, named as they name it, local or UTC under --utc."""
import json
import os
import subprocess
import sys

from datasets_util import data_line
from strata.datasets.archive import Archive
from strata.collect.collector import Collector

T0 = 1_700_000_000          # 2023-11-14 22:13:20 UTC, 2023-11-15 03:43:20 in India

FIGURE = """
import json, sys
from strata.datasets.archive import Archive
from strata.demos import pictures
from strata.heatmaps import clock
if sys.argv[2] == "utc":
    clock.use_utc()          # what --utc does (cli/main.py)
with Archive.open(sys.argv[1]) as archive:
    fig = pictures._cache_figure(archive, %d, %d)
print(json.dumps({"title": fig.layout.xaxis.title.text, "x0": str(fig.data[0].x[0])}))
"""


def test_cache_sizes_axis_is_in_the_figures_zone(tmp_path):
    path = tmp_path / "a.db"
    with Archive.open(path, readonly=False) as a:
        arc = a.create("arc.size", now=T0)
        a.create("l2arc.size", now=T0)          # no data: the demo without an L2ARC
        c = Collector(a, command=[], log=lambda m: None)
        c.kinds = {arc.id: "gauge"}
        c.handle([data_line(arc.id, t, "gauge", {"": float(2**30)}) for t in range(T0, T0 + 60)])
    env = {**os.environ, "TZ": "Asia/Kolkata"}
    seen = {}
    for zone in ("local", "utc"):
        proc = subprocess.run([sys.executable, "-c", FIGURE % (T0, T0 + 60), str(path), zone],
                              capture_output=True, text=True, env=env, timeout=60)
        assert proc.returncode == 0, proc.stderr
        seen[zone] = json.loads(proc.stdout)
    assert seen["local"] == {"title": "time (IST)", "x0": "2023-11-15 03:43:20"}
    assert seen["utc"] == {"title": "time (UTC)", "x0": "2023-11-14 22:13:20"}
