"""`strata web` in a real headless chromium over a real archive: the worksheet draws heat
maps and graphs on one time axis; a dragged rectangle over the L2ARC band gives the same
per-client counts as `strata breakdown --range`; click and shift-click add views; a copied
address (and a saved worksheet, `--open`) reopens the same worksheet; writes need a signed-in
user; hostile requests get bounded one-line answers, and a server without users on loopback
answers only loopback names (DNS rebinding)."""
import base64
import http.client as httpclient
import json
import os
import shlex
import shutil
import socket
import ssl
import subprocess
import time
import urllib.parse

import bcrypt
import numpy as np
import pytest
from selenium.webdriver.support.ui import Select

from datasets_util import strata
from strata.datasets.archive import Archive
from strata.heatmaps.units import format_count, parse_value
from heatmaps_util import T0, build_archive, histogram, seed_latencies
from strata.web.connections import MAX_CONNECTIONS
from web_util import browser, drag_heatmap, http, plots_ready, sse_stream, state_url, wait_js, web_server

CLIENTS = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
SPAN = 300


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    rng = np.random.default_rng(35)
    def per_client(t):
        return {c: histogram(seed_latencies(rng, 40 * (i + 1))) for i, c in enumerate(CLIENTS)}
    return build_archive(tmp_path_factory.mktemp("web") / "a.db", {
        "nfs.latency": lambda t: {"": histogram(seed_latencies(rng, 120))},
        "nfs.latency[client]": per_client,
        "nfs.latency[op]": lambda t: {"read": histogram(seed_latencies(rng, 30)), "write": histogram(seed_latencies(rng, 10))},
        "nfs.ops[client]": lambda t: {c: 40 * (i + 1) for i, c in enumerate(CLIENTS)},
    }, seconds=SPAN)


def worksheet(**more):
    return dict({"views": [{"name": "nfs.latency[client]"}, {"name": "nfs.ops[client]"}], "since": T0,
                 "until": T0 + SPAN, "live": False, "axis": "log", "crop": None, "drag": "drill"}, **more)


def page_state(driver) -> dict:
    query = urllib.parse.urlparse(driver.current_url).query
    return json.loads(urllib.parse.parse_qs(query)["s"][0])


def test_drag_clicks_and_a_copied_address(archive):
    with web_server(archive) as base, browser() as page:
        page.get(state_url(base, worksheet()))
        assert plots_ready(page, 2) == [SPAN, SPAN]           # 1 s columns from the second level
        # counters: stacked areas by default (plot_breakdown's series), lines from the toggle
        stacked = "((document.querySelectorAll('.plot')[1] || {}).data || []).map(t => t.stackgroup || '-').join()"
        assert page.execute_script("return " + stacked) == ",".join(["one"] * len(CLIENTS))
        Select(page.find_element("id", "style")).select_by_value("line")
        wait_js(page, f"document.querySelectorAll('.plot').length === 2 && {stacked} === '{','.join(['-'] * len(CLIENTS))}'",
                what="lines")
        assert page_state(page)["style"] == "line"
        Select(page.find_element("id", "style")).select_by_value("")
        wait_js(page, f"{stacked} === '{','.join(['one'] * len(CLIENTS))}'", what="stacked areas again")
        plots_ready(page, 2)
        # drag over the L2ARC band (128-260 us) from T0+60 to T0+180
        drag_heatmap(page, 0, T0 + 60, T0 + 180, 100_000, 400_000)
        table = wait_js(page, "document.getElementById('drill-table')", what="the drill-down")
        assert page.execute_script("const n = document.querySelector('.plotly-notifier');"        # no zoom toast
                                   " return !n || getComputedStyle(n).display === 'none'")
        shown = {row[0]: int(row[1]) for row in page.execute_script(
            "return Array.from(document.querySelectorAll('#drill-table tr')).slice(1)"
            ".map(r => [r.cells[0].textContent, r.cells[1].textContent])")}
        since, until, text, target = (table.get_attribute(a) for a in ("data-since", "data-until", "data-range",
                                                                       "data-target"))
        lo, hi = (parse_value(v, "ns") for v in text.split(".."))
        assert lo <= 128_000 and 260_000 <= hi < 1_900_000, text          # the band, not DRAM nor disk
        assert abs(int(since) - (T0 + 60)) <= 2 and abs(int(until) - (T0 + 180)) <= 2
        cli = strata("breakdown", target, "--range", text, "--since", since, "--until", until, "--json",
                     "--archive", str(archive))
        assert cli.returncode == 0, cli.stderr
        expected = {r["key"]: r["events"] for r in json.loads(cli.stdout)["table"]}
        assert shown == expected and set(shown) == set(CLIENTS) and min(shown.values()) > 0
        # the same band by another field the archive holds, as `strata breakdown` counts it, then by client again
        Select(page.find_element("id", "drill-by")).select_by_visible_text("op")
        by_op = wait_js(page, "(() => { const t = document.getElementById('drill-table');"
                              " return t && t.dataset.target === 'nfs.latency[op]' && Array.from(t.rows).slice(1)"
                              ".map(r => [r.cells[0].textContent, +r.cells[1].textContent]); })()", what="by op")
        cli = strata("breakdown", "nfs.latency[op]", "--range", text, "--since", since, "--until", until, "--json",
                     "--archive", str(archive))
        assert dict(by_op) == {r["key"]: r["events"] for r in json.loads(cli.stdout)["table"]} and len(by_op) == 2
        assert page_state(page)["band"]["by"] == "op"
        page.back()                                     # Back: by client again
        wait_js(page, "(() => { const t = document.getElementById('drill-table');"
                      " return t && t.dataset.target === 'nfs.latency[client]'; })()", what="by client again")
        plots_ready(page, 2)
        # CSV of the drill-down and of the views, as shown: the graph's per-client rates, the map's events
        drill_csv = page.execute_script("return document.getElementById('drill-csv') !== null")
        graph_csv, heat_csv, on_map = page.execute_script(
            "return [csvText(viewRows(views[1])), csvText(viewRows(views[0])), [...new Set(views[0].div.data[1].customdata)]"
            ".reduce((s, row) => s + row.reduce((a, c) => a + c[2], 0), 0)]")
        graph_rows = [line.split(",") for line in graph_csv.splitlines()]
        rates = {f"{c} (ops/s)": 40.0 * (i + 1) for i, c in enumerate(CLIENTS)}
        assert drill_csv and graph_rows[0][:2] == ["unix", "time (UTC)"] and len(graph_rows) == SPAN + 1
        assert all(dict(zip(graph_rows[0][2:], map(float, r[2:]))) == rates for r in graph_rows[1:]), graph_rows[:2]
        assert sum(int(line.rsplit(",", 1)[1]) for line in heat_csv.splitlines()[1:]) == on_map > 0
        # the band is in the address: Back takes it off the page, Forward asks for it again
        band = page_state(page)["band"]
        assert band["name"] == "nfs.latency[client]" and abs(band["t0"] - (T0 + 60)) <= 2 and band["lo"] < 128_000
        page.back()
        wait_js(page, "!document.getElementById('drill-table')", what="the drill-down gone")
        assert "band" not in page_state(page)
        page.forward()
        wait_js(page, "document.getElementById('drill-table')", what="the drill-down again")
        plots_ready(page, 2)
        # a drag narrower than plotly's 8 px: the column pressed broken down, the y axis kept
        drag_heatmap(page, 0, T0 + 100, T0 + 100, 100_000, 400_000)
        wait_js(page, f"(() => {{ const t = document.getElementById('drill-table');"
                      f" return t && +t.dataset.until - +t.dataset.since === 1; }})()", what="one column's drill-down")
        assert page.execute_script("const v = views[0]; return JSON.stringify(v.div.layout.yaxis.range)"
                                   " === JSON.stringify(v.yrange)")
        # the page's counts read as the files' (units.format_count; an exact tie may round the other way)
        numbers = [0, 0.0004, 0.0123, 2.5, 7, 45.26, 987, 1234, 45_600_000, 999_999]
        assert page.execute_script("return arguments[0].map(formatCount)", numbers) == [format_count(n) for n in numbers]

        # click a key: its own view; shift-click two: one graph comparing them
        keys = page.find_elements("css selector", "#drill-table .key")
        keys[0].click()
        plots_ready(page, 3)
        first = keys[0].text
        assert page_state(page)["views"][2]["name"] == f"nfs.latency[client={first}]"
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys
        drag_heatmap(page, 0, T0 + 60, T0 + 180, 100_000, 400_000)
        wait_js(page, "document.getElementById('drill-table')")
        keys = page.find_elements("css selector", "#drill-table .key")
        for k in keys[1:3]:
            ActionChains(page).key_down(Keys.SHIFT).click(k).key_up(Keys.SHIFT).perform()
        plots_ready(page, 4)
        compared = page_state(page)["views"][3]
        assert compared["name"] == "nfs.latency[client]" and compared["compare"] == [k.text for k in keys[1:3]]
        assert page.execute_script("return document.querySelectorAll('.plot')[3].data.length") == 2

        # a zoom in time is a step Back undoes
        Select(page.find_element("id", "drag")).select_by_value("zoom")
        before, columns = page_state(page), plots_ready(page, 4)
        drag_heatmap(page, 0, T0 + 60, T0 + 180, 100_000, 400_000)
        wait_js(page, "(() => { const p = Array.from(document.querySelectorAll('.plot'));"
                      " return p.length === 4 && p.every(d => +d.dataset.columns && +d.dataset.columns < 200); })()",
                what="the zoomed views")
        assert abs(page_state(page)["since"] - (T0 + 60)) <= 2
        page.back()
        wait_js(page, f"document.querySelectorAll('.plot').length === 4 && +document.querySelector('.plot')"
                      f".dataset.columns === {SPAN}", what="the views before the zoom")
        assert page_state(page) == before and plots_ready(page, 4) == columns
        Select(page.find_element("id", "drag")).select_by_value("drill")
        # a range typed in (the browser's zone, as chosen by default)
        for field, t in (("from", T0 + 30), ("until", T0 + 150)):
            box = page.find_element("id", field)
            box.clear()
            box.send_keys(_local(t))
        page.find_element("id", "range").click()
        wait_js(page, "(() => { const p = Array.from(document.querySelectorAll('.plot'));"
                      " return p.length === 4 && p.every(d => +d.dataset.columns === 120); })()", what="the range typed")
        assert (page_state(page)["since"], page_state(page)["until"]) == (T0 + 30, T0 + 150)
        page.back()
        plots_ready(page, 4)
        assert page_state(page) == dict(before, drag="drill")

        # click a time, over an empty cell (the top of the latency axis): every view's value at
        # that second, with its unit
        top = page.execute_script("const v = views[0]; return Math.pow(10, v.yrange[1] - 0.02) * v.live.scale")
        drag_heatmap(page, 0, T0 + 100, T0 + 100, top, top)     # a click, no drag
        rows = wait_js(page, "document.querySelectorAll('#at-table tr').length >= 4 && "
                             "Array.from(document.querySelectorAll('#at-table tr')).map(r => r.cells[2].textContent)",
                       what="the selected time")
        assert rows[0] == "ops" and "ops/s" in rows[1:], rows
        assert abs(page_state(page)["at"] - (T0 + 100)) <= 1

        # the address reopens the same worksheet in a fresh browser
        link, state = page.current_url, page_state(page)
        columns = plots_ready(page, 4)
    with web_server(archive) as base, browser() as fresh:            # a browser that prefers a dark scheme
        fresh.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme",
                                                                             "value": "dark"}]})
        fresh.get(link.replace(link.split("/?")[0], base))
        assert plots_ready(fresh, 4) == columns
        assert page_state(fresh) == state
        wait_js(fresh, "document.getElementById('drill-table') && document.getElementById('at-table')",
                what="the band and the selected time again")
        assert fresh.execute_script("return [getComputedStyle(document.body).backgroundColor, "
                                    "views.map(v => v.div.layout.paper_bgcolor)]") == ["rgb(23, 24, 28)", ["#17181c"] * 4]


@pytest.fixture
def writable(archive, tmp_path):
    copy = tmp_path / "w.db"
    shutil.copy(archive, copy)
    config = tmp_path / "web.yml"
    config.write_text("basic_auth_users:\n  ann: " + bcrypt.hashpw(b"secret", bcrypt.gensalt(4)).decode() + "\n")
    return copy, str(config)


def test_writes_need_a_signed_in_user(writable):
    copy, config = writable
    with web_server(copy) as base, browser() as page:              # no users: read-only
        page.get(state_url(base, worksheet()))
        plots_ready(page, 2)
        page.find_element("id", "ds-name").send_keys("nfs.ops[op]")
        page.find_element("id", "ds-create").click()
        assert "signed-in user" in wait_js(page, "document.getElementById('message').textContent")
        assert http(base + "/api/datasets", {"action": "suspend", "name": "nfs.ops[client]"})[0] == 403
    with web_server(copy, "--web-config", config) as base:
        assert http(base + "/api/datasets")[0] == 401
        assert http(base + "/api/datasets", {"action": "create", "name": "nfs.ops[op]"})[0] == 401
        assert http(base + "/api/datasets", auth=("ann", "wrong"))[0] == 401
        status, answer = http(base + "/api/datasets", {"action": "create", "name": "nfs.bogus"}, auth=("ann", "secret"))
        assert status == 400 and "\n" not in answer["error"] and "nfs.bogus" in answer["error"]
        with browser(auth=("ann", "secret")) as page:
            page.get(state_url(base, worksheet()))
            plots_ready(page, 2)
            page.find_element("id", "ds-name").send_keys("nfs.ops[op]")
            page.find_element("id", "ds-create").click()
            wait_js(page, "document.querySelector('#ds-table tr[data-name=\"nfs.ops[op]\"]')", what="the new dataset")
            page.execute_script("document.querySelector('#ds-table tr[data-name=\"nfs.ops[client]\"] button').click()")
            wait_js(page, "document.querySelector('#ds-table tr[data-name=\"nfs.ops[client]\"] .state')"
                          ".textContent === 'suspended'", what="the suspension")
            page.find_element("id", "ws-name").send_keys("band")
            page.find_element("id", "ws-save").click()
            wait_js(page, "document.getElementById('message').textContent === 'saved band'")
            saved = page_state(page)
    listed = json.loads(strata("datasets", "list", "--json", "--archive", str(copy)).stdout)
    states = {d["name"]: d["state"] for d in (listed["datasets"] if isinstance(listed, dict) else listed)}
    assert states["nfs.ops[op]"] == "active" and states["nfs.ops[client]"] == "suspended"
    with web_server(copy, "--open", "band") as base, browser() as page:   # a saved worksheet by name
        page.get(base + "/")
        plots_ready(page, 2)
        assert page_state(page)["views"] == saved["views"]
    bad = strata("web", "--archive", str(copy), "--open", "nope", "--listen", "127.0.0.1:0")
    assert bad.returncode != 0 and "no worksheet 'nope'" in bad.stderr and "band" in bad.stderr
    # `datasets verify` knows the worksheets table: a saved one passes, a damaged one is named
    checked = strata("datasets", "verify", str(copy))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    with Archive.open(str(copy), readonly=False) as a:
        a.conn.execute("INSERT INTO worksheets(name, state, saved) VALUES ('torn', '{\"views\": [', 1)")
    checked = strata("datasets", "verify", str(copy))
    assert checked.returncode == 1 and "worksheets: 'torn': a state that is not JSON" in checked.stdout, \
        checked.stdout + checked.stderr


def test_served_over_tls_with_the_exporters_web_config(archive, tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=strata",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem")], check=True, capture_output=True)
    hashed = bcrypt.hashpw(b"secret", bcrypt.gensalt(4)).decode()
    (tmp_path / "web.yml").write_text("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
                                      f"basic_auth_users:\n  ann: '{hashed}'\n")
    with web_server(archive, "--web-config", str(tmp_path / "web.yml")) as base:
        assert base.startswith("https://")
        host, port = base.split("//")[1].split(":")
        trusted = ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))
        for auth, expected in ((None, 401), ("ann:secret", 200)):
            conn = httpclient.HTTPSConnection(host, int(port), context=trusted, timeout=10)
            headers = {"Authorization": "Basic " + base64.b64encode(auth.encode()).decode()} if auth else {}
            conn.request("GET", "/api/datasets", headers=headers)
            assert conn.getresponse().status == expected
    bad = strata("web", "--archive", str(archive), "--web-config", str(tmp_path / "nope.yml"))
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1 and "nope.yml" in bad.stderr


def open_sockets(pid) -> int:
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except FileNotFoundError:
            pass                 # closed while listed
    return n


def raw_get(base, path):
    host, port = base.split("//")[1].split(":")
    conn = httpclient.HTTPConnection(host, int(port), timeout=10)
    conn.request("GET", path)
    r = conn.getresponse()
    return r.status, r.read()


def test_hostile_requests_get_bounded_answers(archive):
    with web_server(archive) as base:
        for path in ("/static/../../../etc/passwd", "/static/..%2f..%2fetc%2fpasswd", "/static/%2e%2e/web_cmd.py",
                     "/../pyproject.toml", "/static/worksheet.js/../../views.py"):
            status, body = raw_get(base, path)
            assert status == 404 and b"root:" not in body and b"import" not in body, (path, status)
        assert raw_get(base, "/static/plotly.min.js")[0] == 200                 # served locally
        status, answer = http(base + "/api/view?name=nfs.latency&since=0&until=99999999999")
        assert status == 400 and "days" in answer["error"]
        status, answer = http(base + f"/api/view?name=nfs.latency&since={T0 - 365 * 86400}&until={T0 + SPAN}")
        assert status == 200 and answer["live"]["level"] == "hour"             # a year: from the rollups
        status, answer = http(base + "/api/drill", raw=b"{not json")
        assert status == 400 and answer == {"error": "the request body is not JSON"}
        status, answer = http(base + "/api/drill", raw=b"[" * 200_000)
        assert status == 413
        status, answer = http(base + "/api/drill", raw=b"[" * 30_000 + b"]" * 30_000)   # within the size bound
        assert status == 400 and answer == {"error": "the request body is nested too deeply"}, (status, answer)
        status, answer = http(base + "/api/worksheets/nope")
        assert status == 400 and "no worksheet 'nope' in a.db" in answer["error"] and "/" not in answer["error"]
        status, answer = http(base + "/api/drill", {"view": {"name": "nfs.latency"}, "x0": "never"})
        assert status == 400 and "\n" not in answer["error"]
        on_axis = [time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t)) for t in (T0, T0 + SPAN)]
        band = {"view": {"name": "nfs.latency"}, "x0": on_axis[0], "x1": on_axis[1], "y0": 0, "y1": "1e400"}
        status, answer = http(base + "/api/drill", band)
        assert status == 400 and answer["error"] == "a drill-down's values must be finite numbers", answer
        status, answer = http(base + "/api/drill", {**band, "y1": 5, "top": 1e308 * 10})
        assert status == 400 and "\n" not in answer["error"], answer
        status, answer = http(base + "/api/view?name=nfs.nothing")
        assert status == 400 and "no dataset nfs.nothing" in answer["error"]
        assert http(base + "/api/live?ids=deadbeef&after=1")[0] == 404
        # no users, on loopback: a page of another name resolved to it (DNS rebinding) reads nothing
        port = base.rsplit(":", 1)[1]
        for name, expected in (("rebound.example", 403), ("localhost", 200), ("127.0.0.1", 200)):
            conn = httpclient.HTTPConnection("127.0.0.1", int(port), timeout=10)
            conn.request("GET", "/api/datasets", headers={"Host": f"{name}:{port}"})
            r = conn.getresponse()
            answer = r.read().decode()
            assert r.status == expected and (expected == 200 or "rebound.example" in answer), (name, r.status, answer)

        slow = []                                  # 500 clients that never finish their request
        for _ in range(500):
            sock = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])))
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
            slow.append(sock)
        try:
            status, answer = http(base + "/api/datasets", timeout=10)
            assert status == 200 and len(answer["datasets"]) == 4               # still answering
            sockets = open_sockets(base.pid)
            assert sockets <= MAX_CONNECTIONS + 8, sockets                        # bounded
        finally:
            for sock in slow:
                sock.close()


def test_live_columns_survive_a_writer_restart(tmp_path):
    """A writer that closes as the last connection deletes the archive's -wal and -shm, the
    next one makes new ones: the open pages (8 of them) keep receiving each new second."""
    path = tmp_path / "live.db"
    with Archive.open(str(path), readonly=False) as a:
        info = a.create("nfs.ops[client]", now=int(time.time()) - 60)

    def write(second):                       # a writer of its own each time: a collector restarting
        with Archive.open(str(path), readonly=False) as a:
            ing = a.ingestor()
            with ing.transaction():
                ing.add(info.id, second, info.kind, {"10.0.0.1": 7})
    write(int(time.time()) - 2)
    with web_server(path) as base:
        assert http(base + "/api/worksheets")[0] == 200     # the server opened and closed the file itself
        status, v = http(base + "/api/view?name=nfs.ops%5Bclient%5D&last=30")
        assert status == 200
        live = f"/api/live?ids={v['live']['id']}&after={v['live']['next'] - 1}"
        pages = [sse_stream(base, live) for _ in range(8)]
        try:
            written = []
            for _ in range(3):
                t = int(time.time())
                write(t)
                written.append(t)
                time.sleep(1.0)
            got = [b"" for _ in pages]
            deadline = time.time() + 5
            while time.time() < deadline and not all(all(f'"t":{t},'.encode() in g for t in written) for g in got):
                for i, sock in enumerate(pages):
                    sock.settimeout(0.1)
                    try:
                        got[i] += sock.recv(65536)
                    except socket.timeout:
                        pass
            for g in got:
                assert all(f'"t":{t},'.encode() in g for t in written), (written, g[-300:])
        finally:
            for sock in pages:
                sock.close()


def test_a_drag_on_a_filtered_view_stays_within_its_key(archive):
    """Dragging over nfs.latency[client=C] breaks down C's events only (as `strata breakdown
    'nfs.latency[client=C]' --range` does), not every client's."""
    band = {"x0": _local(T0 + 60), "x1": _local(T0 + 180), "y0": 100_000, "y1": 400_000}
    with web_server(archive) as base:
        status, whole = http(base + "/api/drill", dict(band, view={"name": "nfs.latency[client]"}))
        assert status == 200, whole
        status, one = http(base + "/api/drill", dict(band, view={"name": f"nfs.latency[client={CLIENTS[1]}]"}))
        assert status == 200, one
    per_client = {r["key"]: r["events"] for r in whole["table"]}
    assert one["target"] == f"nfs.latency[client={CLIENTS[1]}]" and one["events"] == per_client[CLIENTS[1]] > 0
    assert whole["choices"] == ["client", "op"]
    with web_server(archive) as base:
        status, answer = http(base + "/api/drill", dict(band, view={"name": "nfs.latency"}, by="size"))
    assert status == 400 and "no breakdown of nfs.latency by 'size': it has client, op" in answer["error"], answer
    assert [r["events"] for r in one["table"]] == [per_client[CLIENTS[1]]], one["table"]
    # the command the panel prints, as a user would type it: units and local times with their offset
    command = shlex.split(one["command"])
    assert command[:2] == ["strata", "breakdown"] and "--range" in command, one["command"]
    assert command[command.index("--range") + 1] == "100us..400us", one["command"]
    assert command[command.index("--since") + 1] == _local(one["since"], "T") + _offset(one["since"]), command
    cli = strata(*command[1:], "--json", "--archive", str(archive))
    assert cli.returncode == 0 and [r["events"] for r in json.loads(cli.stdout)["table"]] == [one["events"]]


def _local(t: int, sep: str = " ") -> str:
    """A unix second as the page's time axis writes it (local time, ISO)."""
    import datetime as dt
    return dt.datetime.fromtimestamp(t).isoformat(sep=sep)


def _offset(t: int) -> str:
    """The local zone's offset at t as ISO 8601 writes it: '+00:00', '+05:30'."""
    import datetime as dt
    return dt.datetime.fromtimestamp(t).astimezone().isoformat()[-6:]


def test_a_time_view_draws_where_the_time_went(tmp_path):
    """A worksheet view time:disk (views/time_went.py reads it) draws each component's mean
    time per op stacked, named, with its p99 in the hover: the drawn values equal `strata show
    time:disk --json` for the same seconds, column by column, and so do the live path's
    columns (views.columns over the same archive) and the view's CSV."""
    from click.testing import CliRunner

    from strata.cli.main import cli as main_cli
    from strata.web import views
    rng = np.random.default_rng(46)
    seconds = 120
    path = build_archive(tmp_path / "t.db", {
        "disk.queue": lambda t: {"": histogram(rng.integers(2_000, 40_000, 30))},
        "disk.latency": lambda t: None if t % 10 == 3 else {"": histogram(seed_latencies(rng, 30))},
    }, seconds=seconds)
    cli = CliRunner().invoke(main_cli, ["show", "time:disk", "--json", "--since", str(T0), "--until",
                                        str(T0 + seconds), "--archive", str(path)])
    assert cli.exit_code == 0, cli.output
    doc = json.loads(cli.output)
    want = {s["key"]: s["values"] for s in doc["series"]}
    p99 = {p["key"]: p["values"] for p in doc["p99"]}
    with web_server(path) as base, browser() as page:
        page.get(state_url(base, {"views": [{"name": "time:disk"}], "since": T0, "until": T0 + seconds, "live": False}))
        assert plots_ready(page, 1) == [len(doc["times"])]
        drawn = page.execute_script("const v = views[0]; return {scale: v.live.scale, label: v.label, times: v.times,"
                                    " traces: v.div.data.map(t => [t.name, t.stackgroup, Array.from(t.y), t.customdata]),"
                                    " csv: viewRows(v), picker: Array.from(document.querySelectorAll('#dataset-pick option'),"
                                    " o => o.value)}")
    assert "time:disk" in drawn["picker"] and "time:nfsd" not in drawn["picker"]
    assert drawn["times"] == doc["times"]
    assert [t[0] for t in drawn["traces"]] == ["queue", "device"] and {t[1] for t in drawn["traces"]} == {"one"}

    def same(shown, values):
        return len(shown) == len(values) and all((a is None and b is None) or np.isclose(a * drawn["scale"], b)
                                                 for a, b in zip(shown, values))
    for name, _, y, custom in drawn["traces"]:
        assert same(y, want[name]) and same(custom, p99[name]), name
        assert None in y                                  # the seconds without ops are gaps, not zeros
    totals = {name: np.nansum(np.array(y, dtype=float)) * drawn["scale"] for name, _, y, _ in drawn["traces"]}
    assert all(np.isclose(totals[k], np.nansum(np.array(want[k], dtype=float))) for k in want), totals
    unit = drawn["label"]
    assert drawn["csv"][0] == ["unix", "time (UTC)", f"queue ({unit})", f"device ({unit})", f"queue p99 ({unit})",
                               f"device p99 ({unit})"] and len(drawn["csv"]) == len(doc["times"]) + 1
    assert all(same([row[2 + k] for row in drawn["csv"][1:]], want[name] if k < 2 else p99[name])
               for k, name in enumerate(["queue", "device", "queue", "device"]))
    with Archive.open(str(path), readonly=True) as reader:          # the live path's columns
        spec = views.ViewSpec.parse({"name": "time:disk"})
        shown = views.view(reader, spec, T0, T0 + seconds)
        cols, _, refit = views.columns(reader, spec, shown["live"], T0, T0 + seconds)
    assert "2 components · " in shown["figure"]["layout"]["title"]["text"]       # counted as the files count them
    assert not refit and [c["t"] for c in cols] == [t for t, y in zip(doc["times"], want["device"]) if y is not None]
    for k, name in enumerate(shown["live"]["lines"]):
        at = {t: v for t, v in zip(doc["times"], want[name])}
        assert all(np.isclose(c["y"][k] * drawn["scale"], at[c["t"]]) for c in cols), name
