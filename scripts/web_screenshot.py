#!/usr/bin/env python3
"""The README's screenshot of `strata web` (root): the real engine (a 16 MiB ARC, an L2ARC on
an emulated SSD, vdevs on an emulated HDD) read by 5 strata-load clients, each in its own
network namespace; `strata collect` writing the archive; the live worksheet in chromium with
a rectangle dragged over the L2ARC band and its breakdown by client beside it.
Usage: .venv/bin/python scripts/web_screenshot.py docs/web.png"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from collect_util import private_copy                                                      # noqa: E402
from conftest import built                                                                 # noqa: E402
from datasets_util import STRATA, strata                                                   # noqa: E402
from strata.lab.process import stop                                                    # noqa: E402
from web_util import browser, drag_heatmap, plots_ready, state_url, wait_js, web_server    # noqa: E402

DATASETS = ("nfs.latency", "nfs.latency[client]", "nfs.ops[client]", "nfs.latency[tier]")
WORKSHEET = {"views": [{"name": "nfs.latency"}, {"name": "nfs.latency[tier=l2arc]"}, {"name": "nfs.ops[client]"}],
             "last": 120, "live": True, "axis": "log"}


def engine(folder: Path):
    """(process, nfs port, mount port) of a private engine with the seed's tiers."""
    binary = private_copy(built("bin/strata-engine"), folder)
    subprocess.run([str(binary), "mkpool", str(folder / "p.pool"), "--size", "256m"], check=True, capture_output=True)
    proc = subprocess.Popen([str(binary), "serve", "--pool", str(folder / "p.pool"), "--export",
                             "/export:allow=127.0.0.0/8,allow=10.213.0.0/16,no_root_squash,mode=1777",
                             "--listen", "127.0.0.1:0", "--port-file", str(folder / "port"), "--arc-max", "16M",
                             "--cache", f"{folder / 'l2.img'}:256M", "--vdev-model", "hdd", "--cache-model", "ssd"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while not ((folder / "port").exists() and (folder / "port").read_text().strip()):
        time.sleep(0.05)
    m = re.search(r"nfs=[\d.]+:(\d+) mount=[\d.]+:(\d+)", (folder / "port").read_text())
    return proc, m.group(1), m.group(2)


def main(out: Path):
    with tempfile.TemporaryDirectory() as d:
        d = Path(d)
        archive = str(d / "a.db")
        for name in DATASETS:
            assert strata("datasets", "create", name, "--archive", archive).returncode == 0
        eng, nfs_port, mount_port = engine(d)
        env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
        collect = subprocess.Popen([STRATA, "collect", "--archive", archive, "--engine-pid", str(eng.pid)],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        load = [str(built("bin/strata-load")), "--server", "127.0.0.1", "--nfsport", nfs_port, "--mountport",
                mount_port, "--export", "/export", "--profile", "randread", "--io-size", "8k", "--working-set", "48m",
                "--clients", "5", "--threads", "2", "--json", "-", "--netns"]
        setup = subprocess.run(load + ["--duration", "1", "--setup"], capture_output=True, text=True)
        assert setup.returncode == 0, setup.stderr
        reads = subprocess.Popen(load + ["--duration", "150"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(90)                                   # the L2ARC warms, the map fills
            tiers = json.loads(subprocess.run([STRATA, "breakdown", "nfs.latency[tier]", "--archive", archive,
                                               "--json", "--last", "2m"], capture_output=True, text=True).stdout)
            l2arc = next(r for r in tiers["table"] if r["key"] == "l2arc")
            with web_server(archive) as base, browser(width=1600, height=1250) as page:
                page.get(state_url(base, WORKSHEET))
                plots_ready(page, 3)
                time.sleep(3)
                now = int(time.time())
                drag_heatmap(page, 0, now - 60, now - 15, l2arc["p50"] / 2.5, l2arc["p99"] * 1.2)
                wait_js(page, "document.getElementById('drill-table')")
                print(page.execute_script("return document.getElementById('drill').innerText"))
                from selenium.webdriver.common.action_chains import ActionChains
                ActionChains(page).move_to_element(page.find_element("id", "status")).perform()
                time.sleep(1.5)
                page.save_screenshot(str(out))
        finally:
            stop(reads)
            stop(collect)
            stop(eng)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
