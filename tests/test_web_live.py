"""`strata web` live: the real engine serves real libnfs clients (strata-load), the real
collector (`strata collect`) writes the archive, and a real chromium shows each new second
within 2 s of the collector's record, as new columns only (the views are not loaded again);
the web server follows the collector's live feed, and the seconds it streams, and those the
feed holds, are the archive's; then hostile clients (slow ones up to the connection bound,
malformed JSON, path traversal, unbounded ranges) get bounded answers while the collector
stores every second."""
import asyncio
import json
import os
import socket
import subprocess
import threading
import time
import urllib.parse

import numpy as np

from collect_util import Engine, private_copy
from conftest import built, patience
from datasets_util import STRATA, strata
from strata.lab.process import stop
from strata.datasets.archive import Archive
from strata.web import views
from strata.web.connections import MAX_CONNECTIONS
from strata.web.livefeed import LiveFeed
from web_util import browser, http, plots_ready, sse_stream, state_url, stderr_of, wait_js, web_server

DATASETS = ("nfs.latency", "nfs.latency[client]", "nfs.ops[client]")


def newest_second(archive) -> int | None:
    with Archive.open(archive) as a:
        row = a.conn.execute("SELECT MAX(t) FROM records WHERE step = 1 AND dataset = ?",
                             (a.dataset("nfs.latency").id,)).fetchone()
    return row[0]


def streamed_seconds(base, names, columns) -> list:
    """Per view of `names` over the last minute (a column per second): its live geometry and
    {t: column} of what the live stream sent until every view has `columns` columns (or a
    patient deadline: a busy machine may stream one view's second later than another's)."""
    lives = [http(base + "/api/view?" + urllib.parse.urlencode({"name": n, "last": 60}))[1]["live"] for n in names]
    sock = sse_stream(base, f"/api/live?ids={','.join(v['id'] for v in lives)}&after="
                            f"{','.join(str(v['next']) for v in lives)}")
    got, buffer, end = [{} for _ in names], b"", time.time() + patience(columns + 3)
    sock.settimeout(0.2)
    while time.time() < end and min(map(len, got)) < columns:
        try:
            buffer += sock.recv(65536)
        except socket.timeout:
            continue
        *events, buffer = buffer.split(b"\n\n")
        for line in (ln for e in events for ln in e.split(b"\n") if ln.startswith(b"data: ")):
            event = json.loads(line[6:])
            got[event["i"]].update({c["t"]: c for c in event["cols"]})
    sock.close()
    return list(zip(lives, got))


def feed_against_archive(archive, seconds, meanwhile) -> int:
    """Follow the collector's feed in this process for `seconds` (web/livefeed.py, in a thread
    of its own; meanwhile() runs), then read each dataset's seconds held, one by one, against
    the archive's: equal; returns how many."""
    feed = LiveFeed(archive, on_commit=lambda: None, log=lambda _m: None)
    loop = asyncio.new_event_loop()
    task = loop.create_task(feed._run())
    runner = threading.Thread(target=lambda: loop.run_until_complete(asyncio.wait([task])))
    runner.start()
    compared = 0
    try:
        deadline = time.time() + seconds
        meanwhile()
        while not feed.following and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(max(deadline - time.time(), 0))
        with Archive.open(archive) as a:
            assert feed.following and a.identity() == feed.identity
            for info in a.datasets():
                for t in range(feed.since, int(time.time()) - 1):
                    mine, theirs = feed.read(info, t, t + 1, None, a.identity()), a.read(info, t, t + 1, None)
                    assert mine is not None and theirs.present.all(), (info.name, t)
                    for field in ("times", "keys", "buckets", "counts", "values", "present", "collected", "spans"):
                        x, y = getattr(mine, field), getattr(theirs, field)
                        assert (x == y) if isinstance(x, list) else np.array_equal(x, y), (info.name, t, field)
                    compared += 1
    finally:
        loop.call_soon_threadsafe(task.cancel)
        runner.join()
        loop.close()
    return compared


HOSTILE = (                                 # (method, path, body): what each answer may be
    ("POST", "/api/drill", b"{not json"),
    ("POST", "/api/drill", b"[" * 200_000),
    ("POST", "/api/datasets", b'{"action": "create", "name": "nfs.latency[client]"'),
    ("GET", "/static/../../../etc/passwd", None),
    ("GET", "/static/%2e%2e/server.py", None),
    ("GET", "/api/view?name=nfs.latency&since=0&until=99999999999", None),
    ("GET", "/api/view?name=nfs.latency[client]&last=31536000", None),        # a year: from the rollups
    ("GET", "/api/live?ids=x&after=1", None),
)
BOUNDED = {200, 400, 401, 403, 404, 413, 503}


def hostile(base, until, answers):
    """Slow clients up to the connection bound (a header line a second, never a whole
    request), and the HOSTILE requests in a loop, until `until`; answers gets (status, bytes)."""
    port = int(base.rsplit(":", 1)[1])
    slow = []
    for _ in range(MAX_CONNECTIONS):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        slow.append(sock)
    try:
        while time.time() < until:
            for method, path, body in HOSTILE:
                status, answer = http(base + path.replace("[", "%5B").replace("]", "%5D"), raw=body,
                                      method=method, timeout=10)
                answers.append((status, len(str(answer)), path))
            for sock in slow:
                try:
                    sock.sendall(b"X-Slow: 1\r\n")
                except OSError:
                    pass                        # dropped by the server: what it should do
    finally:
        for sock in slow:
            sock.close()


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
            loaded = page.execute_script("return views[0].totals.text")
            # a live column's cells are coloured from its counts as the figure colours a loaded one
            worst, cells = page.execute_script("""const v = views[0], tr = v.div.data[1]; let worst = 0, cells = 0;
                tr.x.slice(0, -1).forEach((_, i) => v.zOf(v.cells.map(row => row[i][2])).forEach((z, r) => {
                  const want = v.zRows[r][i], empty = want === null || want === undefined || Number.isNaN(want);
                  cells += z !== null;
                  worst = Math.max(worst, (z === null) !== empty ? 1 : empty ? 0 : Math.abs(z - want)); }));
                return [worst, cells];""")
            assert cells > 0 and worst < 1e-4, (worst, cells)
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
            # the server follows the collector's feed: what it streams is what the archive stores
            assert "live columns from the seconds the collector" in stderr_of(base), stderr_of(base)
            streamed = []
            held = feed_against_archive(archive, 4, lambda: streamed.extend(
                streamed_seconds(base, ("nfs.latency[client]", "nfs.ops[client]"), 3)))
            assert held >= 3 * len(DATASETS), held
            with Archive.open(archive) as a:
                for name, (live, cols) in zip(("nfs.latency[client]", "nfs.ops[client]"), streamed):
                    ts = sorted(cols)[:-1]                  # the newest may be re-sent as it fills
                    assert ts == list(range(ts[0], ts[-1] + 1)), ts
                    stored, _, _ = views.columns(a, views.ViewSpec.parse({"name": name}), live, ts[0], ts[-1] + 1)
                    assert len(ts) >= 2 and [cols[t] for t in ts] == [c for c in stored if c["t"] in ts], name
            assert page.execute_script("return document.body.dataset.loads") == loads   # never loaded again
            # the heat map's title totals followed its columns: the server's, for the same columns
            now = page.execute_script("const v = views[0]; return {columns: v.totals.columns, text: v.totals.text,"
                                      " title: v.div.layout.title.text, t0: v.times[0], n: v.times.length}")
            status, fresh = http(base + f"/api/view?name=nfs.latency&axis=log&since={now['t0']}"
                                        f"&until={now['t0'] + now['n']}")
            settled = now["n"] - 6                      # the newest columns may still fill
            assert status == 200 and now["columns"][:settled] == fresh["totals"]["columns"][:settled]
            assert now["text"] != loaded and now["text"] in now["title"] and " ops · " in now["text"], (loaded, now)
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

            # hostile clients for 4 s: bounded answers, and the collector stores every second
            first = int(time.time()) + 1
            answers = []
            hostile(base, time.time() + 4, answers)
            last = int(time.time()) - 1
            wait_js(page, f"+document.querySelector('.plot').dataset.last >= {last}", timeout=5,
                    what="the page live after the hostile clients")
        assert answers and all(s in BOUNDED and n < 1_000_000 for s, n, _ in answers), \
            [a for a in answers if a[0] not in BOUNDED or a[1] >= 1_000_000][:5]
        assert {p for s, _, p in answers if s == 200} <= {HOSTILE[6][1]}, answers[:10]   # only the year
        time.sleep(1.5)                                  # the collector's record of `last`
        with Archive.open(archive) as a:
            ds = a.dataset("nfs.ops[client]").id
            stored = {t for (t,) in a.conn.execute("SELECT t FROM records WHERE step = 1 AND dataset = ? AND "
                                                   "t BETWEEN ? AND ?", (ds, first, last))}
            spans = a.conn.execute("SELECT t, seconds, cause FROM spans WHERE t + seconds > ? AND t <= ?",
                                   (first, last)).fetchall()
        assert stored == set(range(first, last + 1)) and not spans, (sorted(set(range(first, last + 1)) - stored),
                                                                      spans)
    finally:
        running = False
        loader.join(timeout=10)
        stop(collect)
        engine.stop()
    assert collect.returncode in (0, -2, -15, 130), collect.stderr.read()
