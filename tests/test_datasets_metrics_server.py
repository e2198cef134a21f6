"""The metrics endpoint on the network: `strata collect --web-config` (TLS, basic auth) and
its bounds on connections, request size and time.

A real collector on a loop device serves HTTPS with basic auth (a certificate made
here with openssl, a bcrypt hash); Debian's Prometheus scrapes it with the
credentials, a client without them gets 401. Then 500 slow clients (half stalling
the TLS handshake, half sending their headers a byte a second, reconnecting when
cut) must leave Prometheus' scrapes and the archive's seconds intact. Bad web
configurations are one line before anything starts."""
import base64
import os
import socket
import ssl
import subprocess
import threading
import time
import urllib.error
import urllib.request

import bcrypt
import pytest

from datasets_util import direct_writes, loop_device, strata
from strata.prometheus import metrics_server
from strata.prometheus.metrics_server import MetricsServer
from strata.prometheus.openmetrics import Exposition
from strata.prometheus.webconfig import WebConfigError, load
from test_datasets_collect import seconds, stop, wait_for
from test_datasets_openmetrics import needs_prometheus, running_prometheus, start_collect

PASSWORD = "s3cret:with colon"


@pytest.fixture(scope="module")
def web(tmp_path_factory):
    """A web config directory: self-signed certificate for 127.0.0.1, user prom."""
    d = tmp_path_factory.mktemp("web")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=strata",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(d / "key.pem"),
                    "-out", str(d / "cert.pem")], check=True, capture_output=True)
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=10)).decode()
    (d / "web.yml").write_text("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n"
                               f"basic_auth_users:\n  prom: '{hashed}'\n")
    return d


def get(url, web, user=None, password=None):
    """(status, body) of GET url over TLS trusting the test's certificate."""
    ctx = ssl.create_default_context(cafile=str(web / "cert.pem"))
    headers = {}
    if user is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10, context=ctx) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_an_unknown_name_costs_one_bcrypt_check_like_a_known_one(web, monkeypatch):
    """A name that does not exist is checked against a real hash (so its answer takes as
    long as a wrong password's and tells no one which names exist), and never let in; the
    header parsing the metrics endpoint and `strata web` share refuses what is not Basic."""
    from strata.prometheus.webconfig import basic_credentials
    config = load(str(web / "web.yml"))
    checks = []
    real = bcrypt.checkpw
    monkeypatch.setattr(bcrypt, "checkpw", lambda pw, h: checks.append(h) or real(pw, h))
    assert not config.allows("nobody", PASSWORD) and not config.allows("prom", "wrong")
    assert checks == [config.users["prom"]] * 2
    assert config.allows("prom", PASSWORD)
    encoded = base64.b64encode(f"prom:{PASSWORD}".encode()).decode()
    assert basic_credentials(f"Basic {encoded}") == ("prom", PASSWORD)
    for header in ("", "Bearer x", "Basic !!!", "Basic " + base64.b64encode(b"no-colon").decode()):
        assert basic_credentials(header) is None, header


BAD = [  # (web.yml text, what the one line says)
    ("tls_server_config: {cert_file: cert.pem}\n", "cert_file and key_file are both needed"),
    ("tls_server_config: {cert_file: nope.pem, key_file: key.pem}\n", "cannot load"),
    ("basic_auth_users: {prom: plaintext}\n", "prom: not a bcrypt hash"),
    ("tls_server_config: {cert_file: cert.pem, key_file: key.pem, client_auth_type: Maybe}\n", "client_auth_type"),
    ("tls_server_config: {cert_file: cert.pem, key_file: key.pem, "
     "client_auth_type: RequireAndVerifyClientCert}\n", "needs client_ca_file"),
    ("http_server_config: {http2: true}\n", "http_server_config: unknown key"),
    ("basic_auth_users: [\n", "not valid YAML"),
]


@pytest.mark.parametrize("text,says", BAD)
def test_a_bad_web_config_is_one_line_and_starts_nothing(web, tmp_path, text, says):
    config = tmp_path / "web.yml"
    for pem in ("cert.pem", "key.pem"):
        (tmp_path / pem).write_bytes((web / pem).read_bytes())
    config.write_text(text)
    with pytest.raises(WebConfigError, match=says):
        load(str(config))
    r = strata("collect", "--archive", str(tmp_path / "a.db"), "--metrics", "127.0.0.1:0", "--web-config", str(config))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and says.split(":")[0] in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not (tmp_path / "a.db").exists()


def test_requests_are_bounded_in_size_and_time(monkeypatch):
    """Plain HTTP here (the bounds do not depend on TLS), with short limits."""
    monkeypatch.setattr(metrics_server, "REQUEST_SECONDS", 1.0)
    server = MetricsServer(Exposition(), "127.0.0.1", 0)
    host, port = server.server.server_address[:2]
    try:
        with socket.create_connection((host, port)) as s:                 # headers without end
            s.sendall(b"GET /metrics HTTP/1.1\r\n" + b"X-Pad: " + b"a" * 8000 + b"\r\n" + b"X: " + b"b" * 9000)
            assert s.recv(100).startswith(b"HTTP/1.0 431")
        with socket.create_connection((host, port)) as s:                 # a byte at a time: cut
            s.sendall(b"GET /metrics HTTP/1.1\r\n")
            started, cut = time.monotonic(), False
            for _ in range(40):
                try:
                    s.sendall(b"X")
                    if s.recv(1, socket.MSG_DONTWAIT) == b"":
                        cut = True
                        break
                except BlockingIOError:
                    pass
                except OSError:
                    cut = True
                    break
                time.sleep(0.1)
            assert cut and time.monotonic() - started < 3.0
        with urllib.request.urlopen(server.url, timeout=5) as r:          # and still serving
            assert r.read().endswith(b"# EOF\n")
    finally:
        server.close()


class Slowloris:
    """n slow clients of a TLS endpoint until stopped: half connect and never shake hands,
    half shake hands and send headers a byte a second; a cut one connects again."""

    def __init__(self, host, port, n):
        self.address, self.stopping, self.cut = (host, port), threading.Event(), 0
        self.ctx = ssl.create_default_context()
        self.ctx.check_hostname, self.ctx.verify_mode = False, ssl.CERT_NONE
        self.threads = [threading.Thread(target=self._client, args=(i % 2 == 0,), daemon=True) for i in range(n)]
        for t in self.threads:
            t.start()

    def _client(self, handshake):
        while not self.stopping.is_set():
            try:
                with socket.create_connection(self.address, timeout=5) as raw:
                    s = self.ctx.wrap_socket(raw) if handshake else raw
                    if handshake:
                        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: strata\r\n")
                    while not self.stopping.wait(1.0):
                        s.sendall(b"X")              # raw: never a TLS record; TLS: never a header end
            except (OSError, ssl.SSLError):
                self.cut += 1
                self.stopping.wait(0.2)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=10)


@needs_prometheus
def test_tls_and_basic_auth_with_real_prometheus_through_slowloris(web, tmp_path):
    with loop_device() as dev:
        archive = str(tmp_path / "a.db")
        ops = f"disk.ops[device={os.path.basename(dev)}][op]"
        assert strata("datasets", "create", ops, "--archive", archive).returncode == 0
        proc, url = start_collect(archive, "127.0.0.1:0", "2", "--web-config", str(web / "web.yml"))
        try:
            assert url.startswith("https://")
            assert get(url, web)[0] == 401
            assert get(url, web, "prom", "wrong")[0] == 401
            assert get(url, web, "nobody", PASSWORD)[0] == 401
            status, body = get(url, web, "prom", PASSWORD)
            assert status == 200 and body.endswith(b"# EOF\n")
            job = (f"    scheme: https\n    tls_config: {{ca_file: '{web / 'cert.pem'}'}}\n"
                   f"    basic_auth: {{username: prom, password: '{PASSWORD}'}}\n")
            with running_prometheus([url], tmp_path, job=job) as (prom, ask):
                direct_writes(dev, 50)
                wait_for(lambda: ask(f'sum(strata_disk_ops_total{{dataset="{ops}"}})'), timeout=20,
                         what="prometheus to scrape over TLS with basic auth")
                host, port = url.split("/")[2].split(":")
                attack = Slowloris(host, int(port), 500)
                try:
                    time.sleep(2)                                    # all connected, the cap reached
                    start, threads = int(time.time()), []
                    while time.time() < start + 10:
                        status = open(f"/proc/{proc.pid}/status").read()
                        threads.append(int(status.split("Threads:")[1].split()[0]))
                        time.sleep(0.5)
                    end = int(time.time())
                finally:
                    attack.stop()
                ups = ask(f"count_over_time(up[{end - start}s] @ {end})")
                worst = ask(f"min_over_time(up[{end - start}s] @ {end})")
                archived = sorted(seconds(archive, ops, start))
            print(f"slowloris: {attack.cut} cuts; scrapes {ups}, worst up {worst}; collector threads "
                  f"{min(threads)}..{max(threads)}")
            assert max(threads) <= 2 * metrics_server.MAX_CONNECTIONS + 16           # bounded, not 500
            assert list(worst.values()) == [1.0] and list(ups.values())[0] >= end - start - 2
            assert [t for t in range(start, end) if t not in archived] == []   # no second missed
        finally:
            stop(proc)


@needs_prometheus
def test_client_certificates_when_required(web, tmp_path):
    """client_auth_type RequireAndVerifyClientCert: a client without a certificate signed by
    client_ca_file is refused in the handshake; Prometheus with one scrapes."""
    def openssl(*args):
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=tmp_path)
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=clients-ca",
            "-keyout", "ca.key", "-out", "ca.pem")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=prometheus", "-keyout", "client.key",
            "-out", "client.csr")
    openssl("x509", "-req", "-in", "client.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
            "-days", "1", "-out", "client.pem")
    config = tmp_path / "web.yml"
    config.write_text(f"tls_server_config:\n  cert_file: {web / 'cert.pem'}\n  key_file: {web / 'key.pem'}\n"
                      "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n")
    e = Exposition()
    server = MetricsServer(e, "127.0.0.1", 0, load(str(config)))
    try:
        with pytest.raises((urllib.error.URLError, ssl.SSLError, ConnectionError)):
            get(server.url, web)                                             # no certificate
        ctx = ssl.create_default_context(cafile=str(web / "cert.pem"))
        ctx.load_cert_chain(str(tmp_path / "client.pem"), str(tmp_path / "client.key"))
        with urllib.request.urlopen(server.url, timeout=10, context=ctx) as r:
            assert r.status == 200
        job = (f"    scheme: https\n    tls_config: {{ca_file: '{web / 'cert.pem'}', "
               f"cert_file: '{tmp_path / 'client.pem'}', key_file: '{tmp_path / 'client.key'}'}}\n")
        with running_prometheus([server.url], tmp_path, job=job) as (_, ask):
            assert list(ask('up{job="strata"}').values()) == [1.0]
    finally:
        server.close()
