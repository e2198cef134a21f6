"""`strata web` live: the real engine serves real libnfs clients (strata-load), the real
collector (`strata collect`) writes the archive, and a real chromium shows each new second
within 2 s of the collector's record, as new columns only (the views are not loaded again)."""
import os
import subprocess
import threading
import time

from collect_util import Engine, private_copy
from conftest import built, patience
from datasets_util import STRATA, strata
from strata.lab.process import stop
from strata.datasets.archive import Archive
from web_util import browser, plots_ready, state_url, wait_js, web_server

DATASETS = ("nfs.latency", "nfs.latency[client]", "nfs.ops[client]")


def newest_second(archive) -> int | None:
    with Archive.open(archive) as a:
        row = a.conn.execute("SELECT MAX(t) FROM records WHERE step = 1 AND dataset = ?",
                             (a.dataset("nfs.latency").id,)).fetchone()
    return row[0]


def test_new_seconds_reach_the_page_within_2s(tmp_path):
    archive = str(tmp_path / "a.db")
    for name in DATASETS:
        assert strata("datasets", "create", name, "--archive", archive).returncode == 0
    engine = Engine(private_copy(built("bin/strata-engine"), tmp_path), tmp_path, "web")
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    collect = subprocess.Popen([STRATA, "collect", "--archive", archive, "--engine-pid", str(engine.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    running = True

    def load():
        while running:
            engine.load(duration=3, setup=False, clients=3)
    engine.load(duration=1, setup=True, clients=3)
    loader = threading.Thread(target=load, daemon=True)
    loader.start()
    try:
        deadline = time.time() + patience(30)
        while newest_second(archive) is None:          # the collector attached and wrote
            assert time.time() < deadline and collect.poll() is None, collect.stderr.read() if collect.poll() else ""
            time.sleep(0.2)
        state = {"views": [{"name": n} for n in DATASETS], "last": 60, "live": True, "axis": "log"}
        with web_server(archive) as base, browser() as page:
            page.get(state_url(base, state))
            plots_ready(page, 3)
            loads = page.execute_script("return document.body.dataset.loads")
            delays, seen = [], set()
            end = time.time() + 8
            while time.time() < end:                     # each second the collector writes ...
                t = newest_second(archive)
                if t is not None and t not in seen:
                    seen.add(t)
                    written = time.time()
                    shown = wait_js(page, f"Array.from(document.querySelectorAll('.plot'))"
                                          f".every(p => +p.dataset.last >= {t})", timeout=5,
                                    what=f"second {t} on every view")
                    delays.append(time.time() - written)  # ... is on every view within 2 s
                time.sleep(0.05)
            assert len(delays) >= 4 and max(delays) <= 2.0, delays
            assert page.execute_script("return document.body.dataset.loads") == loads   # never loaded again
            sizes = page.execute_script("return window.strataLive")
            assert sizes["messages"] >= 3 * 4 and sizes["largest"] < 8000, sizes       # columns, not maps
            # pause: the page stops moving; live again: it catches up
            page.find_element("id", "live").click()
            wait_js(page, "document.getElementById('status').textContent === 'paused'")
            plots_ready(page, 3)
            frozen = page.execute_script("return document.querySelector('.plot').dataset.last")
            time.sleep(2.2)
            assert page.execute_script("return document.querySelector('.plot').dataset.last") == frozen
            page.find_element("id", "live").click()
            wait_js(page, f"+document.querySelector('.plot').dataset.last > {frozen}", what="catching up")
    finally:
        running = False
        loader.join(timeout=10)
        stop(collect)
        engine.stop()
    assert collect.returncode in (0, -2, -15, 130), collect.stderr.read()
