"""`strata web` takes writes from its own page only: posts from another site (text/plain,
form-encoded, a foreign Origin), with a signed-in user's valid credentials, are refused
and change nothing, also when a real chromium sends them from a form on another local
site; every answer forbids framing and names its scripts; same-site suspend and resume
answer 200."""
import base64
from http.server import BaseHTTPRequestHandler, HTTPServer
import json
import threading
import urllib.error
import urllib.parse
import urllib.request

import bcrypt
import numpy as np
import pytest

from datasets_util import strata
from heatmaps_util import T0, build_archive, histogram, seed_latencies
from web_util import NO_PROXY, browser, http, plots_ready, state_url, wait_js, web_server

ANN = ("ann", "secret")
SUSPEND = {"action": "suspend", "name": "nfs.ops[client]"}


@pytest.fixture
def served(tmp_path):
    rng = np.random.default_rng(43)
    path = build_archive(tmp_path / "w.db", {
        "nfs.latency": lambda t: {"": histogram(seed_latencies(rng, 50))},
        "nfs.ops[client]": lambda t: {"10.0.0.1": 40, "10.0.0.2": 80},
    }, seconds=60)
    config = tmp_path / "web.yml"
    config.write_text("basic_auth_users:\n  ann: " + bcrypt.hashpw(b"secret", bcrypt.gensalt(4)).decode() + "\n")
    with web_server(path, "--web-config", str(config)) as base:
        yield base, path


def states(path) -> dict:
    listed = json.loads(strata("datasets", "list", "--json", "--archive", str(path)).stdout)
    return {d["name"]: d["state"] for d in (listed["datasets"] if isinstance(listed, dict) else listed)}


def saved_worksheets(base) -> list:
    return http(base + "/api/worksheets", auth=ANN)[1]["worksheets"]


def test_cross_site_posts_are_refused_and_change_nothing(served):
    base, path = served
    body = json.dumps(SUSPEND).encode()
    form = urllib.parse.urlencode(SUSPEND).encode()
    sheet = json.dumps({"name": "evil", "state": {"views": []}}).encode()
    attempts = [
        ("/api/datasets", body, {"Content-Type": "text/plain"}),                       # a no-preflight fetch
        ("/api/datasets", form, {"Content-Type": "application/x-www-form-urlencoded"}),  # a form
        ("/api/datasets", body, {"Origin": "http://127.0.0.2:8080"}),                  # JSON from another site
        ("/api/datasets", body, {"Origin": "null"}),                                   # a sandboxed frame
        ("/api/datasets", body, {"Origin": None, "Sec-Fetch-Site": "cross-site"}),
        ("/api/datasets", body, {"Origin": None}),                                     # says nothing of where
        ("/api/worksheets", sheet, {"Content-Type": "text/plain;charset=UTF-8"}),
        ("/api/worksheets", sheet, {"Origin": base.replace("127.0.0.1", "localhost")}),
    ]
    for where, raw, headers in attempts:
        status, answer = http(base + where, raw=raw, auth=ANN, headers=headers)
        assert status == 403 and "\n" not in answer["error"], (where, headers, status, answer)
    assert set(states(path).values()) == {"active"}
    assert saved_worksheets(base) == []
    # the same requests from the page's own origin are taken
    status, answer = http(base + "/api/datasets", SUSPEND, auth=ANN)
    assert status == 200 and answer["changed"][0]["state"] == "suspended", answer
    assert states(path)["nfs.ops[client]"] == "suspended"
    status, answer = http(base + "/api/datasets", {**SUSPEND, "action": "resume"}, auth=ANN,
                          headers={"Origin": None, "Sec-Fetch-Site": "same-origin"})
    assert status == 200 and answer["changed"][0]["state"] == "active", answer
    assert states(path)["nfs.ops[client]"] == "active"


def test_every_answer_forbids_framing(served):
    base, _ = served
    for path, auth, expected in (("/", ANN, 200), ("/static/worksheet.js", ANN, 200), ("/static/plotly.min.js", ANN, 200),
                                 ("/api/datasets", ANN, 200), ("/api/datasets", None, 401),
                                 ("/static/nope.js", ANN, 404), ("/api/view?name=nfs.nothing", ANN, 400)):
        req = urllib.request.Request(base + path)
        if auth:
            req.add_header("Authorization", "Basic " + base64.b64encode(":".join(auth).encode()).decode())
        try:
            with NO_PROXY.open(req, timeout=10) as r:
                status, headers = r.status, r.headers
        except urllib.error.HTTPError as e:
            status, headers = e.code, e.headers
        assert status == expected, path
        policy = headers.get("Content-Security-Policy", "")
        assert headers.get("X-Frame-Options") == "DENY" and headers.get("X-Content-Type-Options") == "nosniff", path
        assert "frame-ancestors 'none'" in policy and "script-src 'self'" in policy, (path, policy)


class _Attacker(BaseHTTPRequestHandler):
    """Another local site: a page whose form posts to the strata server when opened."""
    target = ""

    def do_GET(self):
        page = (f"<form id=f method=POST action='{self.target}/api/datasets' enctype='text/plain'>"
                f"<input name='{{\"action\":\"suspend\",\"name\":\"nfs.ops[client]\",\"x\":\"' value='\"}}'></form>"
                "<script>document.getElementById('f').submit()</script>").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args):
        pass


def test_a_form_on_another_site_cannot_suspend_through_the_browser(served):
    base, path = served
    _Attacker.target = base
    site = HTTPServer(("127.0.0.2", 0), _Attacker)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        with browser(auth=ANN) as page:                  # every request carries ann's credentials
            page.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source":
                "window.violations = []; document.addEventListener('securitypolicyviolation',"
                " e => window.violations.push(e.violatedDirective + ' ' + e.blockedURI));"})
            page.get(f"http://127.0.0.2:{site.server_port}/")
            refusal = wait_js(page, "document.body && document.body.innerText.includes('error') && document.body.innerText",
                              what="the server's refusal")
            assert "application/json" in refusal, refusal
            assert states(path)["nfs.ops[client]"] == "active"
            # the page itself runs under its policy: both views drawn, no violation reported
            page.get(state_url(base, {"views": [{"name": "nfs.latency"}, {"name": "nfs.ops[client]"}],
                                      "since": T0, "until": T0 + 60, "live": False}))
            plots_ready(page, 2)
            assert page.execute_script("return window.violations") == []
            status, answer = http(base + "/api/datasets", SUSPEND, auth=ANN)   # the page's own write
            assert status == 200
    finally:
        site.shutdown()
        site.server_close()
    assert states(path)["nfs.ops[client]"] == "suspended"

