"""Helpers for the `strata web` tests: the server as a child process on a free port, and
Debian's chromium driven through chromium-driver (selenium), with the page's own probes."""
import base64
import contextlib
import json
import os
import re
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from datasets_util import STRATA

NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Base(str):
    """The server's base URL, with the pid of the `strata web` process and its stderr (a file)."""
    pid: int
    errors: object


def stderr_of(base: Base) -> str:
    """What the server said on stderr so far."""
    base.errors.flush()
    base.errors.seek(0)
    return base.errors.read()


@contextlib.contextmanager
def web_server(archive, *args, command=(STRATA,)):
    """`strata web --archive A --listen 127.0.0.1:0 ARGS` (no --archive when A is None; command:
    another build's `strata`); yields its base URL (a Base), its stderr readable by stderr_of()."""
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    errors = tempfile.TemporaryFile("w+")           # a pipe nobody drains would stall the server
    where = ["--archive", str(archive)] if archive is not None else []
    proc = subprocess.Popen([*command, "web", *where, "--listen", "127.0.0.1:0", *args],
                            stdout=subprocess.PIPE, stderr=errors, text=True, env=env)
    try:
        line = proc.stdout.readline()
        m = re.search(r"(https?://[^/ ]+/)", line)
        if not m:
            proc.wait(timeout=10)
            errors.seek(0)
        assert m, f"strata web did not start: {line}{errors.read()}"
        base = Base(m.group(1).rstrip("/"))
        base.pid, base.errors = proc.pid, errors
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        errors.close()


def http(url, body=None, auth=None, method=None, raw=None, timeout=20, headers=None):
    """(status, parsed JSON or text) of one request; body is sent as JSON, raw as bytes, with
    the Origin the page's own requests carry (headers: others, or None to leave one out)."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        parts = urllib.parse.urlsplit(url)
        sent = {"Content-Type": "application/json", "Origin": f"{parts.scheme}://{parts.netloc}", **(headers or {})}
        for name, value in sent.items():
            if value is not None:
                req.add_header(name, value)
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode())
    try:
        with NO_PROXY.open(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text)
    except ValueError:
        return status, text


def sse_stream(base, path):
    """A socket reading the server-sent events of `path` (headers sent; read with recv)."""
    host, port = base.split("//")[1].split(":")
    sock = socket.create_connection((host, int(port)), timeout=5)
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n".encode())
    return sock


def sse_columns(sock, seconds: float, done) -> dict:
    """{t: column} of the events read from sock for at most `seconds`, until done(columns)
    (a column re-sent as it fills keeps its last version)."""
    buffer, columns, deadline = b"", {}, time.time() + seconds
    sock.settimeout(0.2)
    while time.time() < deadline and not done(columns):
        try:
            buffer += sock.recv(65536)
        except socket.timeout:
            continue
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            for line in event.split(b"\n"):
                if line.startswith(b"data: "):
                    for col in json.loads(line[6:])["cols"]:
                        columns[col["t"]] = col
    return columns


def state_url(base, state: dict) -> str:
    return base + "/?s=" + urllib.parse.quote(json.dumps(state))


@contextlib.contextmanager
def browser(auth=None, width=1500, height=1100):
    """Headless chromium; with auth=(user, password) every request carries basic auth."""
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for a in ("--headless", "--no-sandbox", "--disable-gpu", "--no-proxy-server", f"--window-size={width},{height}",
              "--disable-background-networking", "--disable-component-update", "--disable-sync"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    try:
        if auth:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            driver.execute_cdp_cmd("Network.enable", {})
            driver.execute_cdp_cmd("Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Basic {token}"}})
        yield driver
    finally:
        driver.quit()


def wait_js(driver, script, timeout=20, what="the page"):
    """The first truthy value of a JS expression (polled)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = driver.execute_script("return " + script)
        if value:
            return value
        time.sleep(0.1)
    message = driver.execute_script("return document.getElementById('message').textContent")
    raise AssertionError(f"timed out waiting for {what}: {script}; message: {message}")


def plots_ready(driver, n):
    """Waits until n views are drawn; their column counts."""
    return wait_js(driver, f"(() => {{ const p = Array.from(document.querySelectorAll('.plot'));"
                           f" return p.length === {n} && p.every(d => d.dataset.columns) && p.map(d => +d.dataset.columns); }})()",
                   what=f"{n} views")


def drag_heatmap(driver, index, t0, t1, lo, hi):
    """Drags a rectangle on view `index`'s heat map from (t0, lo) to (t1, hi): unix seconds and
    values in the dataset's unit (ns, bytes); pixels from plotly's own axes."""
    from selenium.webdriver.common.action_chains import ActionChains
    pts = driver.execute_script("""
        const gd = document.querySelectorAll('.plot')[arguments[0]], L = gd._fullLayout;
        const iso = t => { const d = new Date(t * 1000), p = n => String(n).padStart(2, '0');
          return `${d.getFullYear()}-${p(d.getMonth()+1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`; };
        const x = L.xaxis2, y = L.yaxis, box = gd.getBoundingClientRect();
        const scale = views[arguments[0]].live.scale;          // the axis shows value / scale
        const yl = v => views[arguments[0]].live.axis === 'log' ? Math.log10(v / scale) : v / scale;
        const px = t => x._offset + x.l2p(x.d2l(iso(t))) - box.width / 2;
        const py = v => y._offset + y.l2p(yl(v)) - box.height / 2;
        return [px(arguments[1]), py(arguments[3]), px(arguments[2]), py(arguments[4])];
    """, index, t0, t1, lo, hi)
    plot = driver.find_elements("css selector", ".plot")[index]
    chain = ActionChains(driver, duration=50)
    chain.move_to_element_with_offset(plot, int(pts[0]), int(pts[1])).click_and_hold()
    chain.move_by_offset(int((pts[2] - pts[0]) / 2), int((pts[3] - pts[1]) / 2))
    chain.move_by_offset(int(pts[2] - pts[0]) - int((pts[2] - pts[0]) / 2),
                         int(pts[3] - pts[1]) - int((pts[3] - pts[1]) / 2)).release().perform()
