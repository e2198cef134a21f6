"""`strata web` live views follow the data, in a browser whose time zone is not the
server's: a page opened while the engine is idle (no events, no keys) shows the load
that starts after it, the real engine's events of real libnfs clients as the real
collector stored them (>= 95 % of the load's own count within 3 s of its end), its
client as a new key, and times in the browser's zone."""
import datetime as dt
import os
import subprocess
import time
from zoneinfo import ZoneInfo

from collect_util import Engine, private_copy
from conftest import built, patience
from datasets_util import STRATA, strata
from strata.lab.process import stop
from test_web_live import newest_second
from web_util import browser, plots_ready, state_url, wait_js, web_server

SERVER_ZONE, BROWSER_ZONE = "Asia/Kolkata", "America/New_York"
ON_SCREEN = """return (() => {            // events in the heat map's cells, keys of the graph
  const heat = views[0].div.data[1], graph = views[1].div.data;
  let n = 0;
  new Set(heat.customdata).forEach(row => row.forEach(cell => { n += cell[2] || 0; }));   // sub-rows share their row
  return {events: n, keys: graph.map(t => t.name), title: views[0].div.layout.xaxis2.title.text,
          heading: views[0].div.layout.title.text,
          last: views[0].times[views[0].times.length - 1], lastX: heat.x[heat.x.length - 1], refits: window.strataLive.refits};
})()"""


def test_a_page_opened_idle_follows_the_load_in_another_zone(tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", SERVER_ZONE)               # the server (and collector) in one zone ...
    archive = str(tmp_path / "a.db")
    for name in ("nfs.latency", "nfs.ops[client]"):
        assert strata("datasets", "create", name, "--archive", archive).returncode == 0
    engine = Engine(private_copy(built("bin/strata-engine"), tmp_path), tmp_path, "follow")
    engine.load(duration=1, setup=True, clients=2)      # its files: before anything is collected
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    collect = subprocess.Popen([STRATA, "collect", "--archive", archive, "--engine-pid", str(engine.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.time() + patience(30)
        while newest_second(archive) is None:           # attached: idle seconds are stored
            assert time.time() < deadline and collect.poll() is None
            time.sleep(0.2)
        state = {"views": [{"name": "nfs.latency"}, {"name": "nfs.ops[client]"}], "last": 120, "live": True}
        with web_server(archive) as base, browser() as page:
            page.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": BROWSER_ZONE})   # ... the browser in another
            page.get(state_url(base, state))
            plots_ready(page, 2)
            idle = page.execute_script(ON_SCREEN)
            assert idle["events"] == 0 and idle["keys"] == [], idle
            report = engine.load(4, False, 2, "--rate", "400")
            ended, count = time.time(), report["ops_total"]
            assert count > 1000, report["ops_total"]
            wait_js(page, f"(() => {{ const s = ({ON_SCREEN[7:]}); return s.events >= {0.95 * count} && s.keys.length; }})()",
                    timeout=3 + patience(3), what=f"{count} events and the client's key")
            shown = page.execute_script(ON_SCREEN)
            assert time.time() - ended <= 3 + patience(3)
            assert 0.95 * count <= shown["events"] <= 1.05 * count, (shown["events"], count)
            assert shown["keys"] == ["127.0.0.1"], shown["keys"]
            assert shown["refits"] >= 1 and BROWSER_ZONE in shown["title"], shown
            right = dt.datetime.fromtimestamp(shown["last"] + 1, ZoneInfo(BROWSER_ZONE)).strftime("%H:%M:%S %Z")
            assert f"→ {right} (" in shown["heading"] or f" {right} (" in shown["heading"], shown["heading"]
            edge = dt.datetime.fromtimestamp(shown["last"] + 1, ZoneInfo(BROWSER_ZONE))   # a column's right edge
            assert shown["lastX"] == edge.strftime("%Y-%m-%dT%H:%M:%S"), (shown["lastX"], edge)
    finally:
        stop(collect)
        engine.stop()
