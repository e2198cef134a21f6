"""`strata web` over TLS: 300 connections that never start a handshake do not keep HTTPS
users out (the oldest handshake waiting is dropped for a newcomer), and the server holds
a bounded number of sockets for them."""
import http.client as httpclient
import socket
import ssl
import subprocess
import time

import pytest

from heatmaps_util import build_archive
from strata.web.connections import MAX_CONNECTIONS, MAX_HANDSHAKES
from test_web_page import open_sockets
from web_util import web_server


@pytest.fixture
def served(tmp_path):
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=strata",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem")], check=True, capture_output=True)
    (tmp_path / "web.yml").write_text("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n")
    path = build_archive(tmp_path / "a.db", {"nfs.ops[client]": lambda t: {"10.0.0.1": 40}}, seconds=10)
    with web_server(path, "--web-config", str(tmp_path / "web.yml")) as base:
        yield base, ssl.create_default_context(cafile=str(tmp_path / "cert.pem"))


def https_get(base, context) -> int:
    host, port = base.split("//")[1].split(":")
    conn = httpclient.HTTPSConnection(host, int(port), context=context, timeout=5)
    try:
        conn.request("GET", "/api/datasets")
        return conn.getresponse().status
    finally:
        conn.close()


def test_silent_connections_do_not_lock_https_users_out(served):
    base, context = served
    port = int(base.rsplit(":", 1)[1])
    silent = [socket.create_connection(("127.0.0.1", port)) for _ in range(300)]
    try:
        answers, until = [], time.time() + 3.0
        while time.time() < until:
            answers.append(https_get(base, context))        # a new handshake each time
        assert len(answers) >= 5 and set(answers) == {200}, answers
        sockets = open_sockets(base.pid)
        assert sockets <= MAX_CONNECTIONS + MAX_HANDSHAKES + 8, sockets
        for sock in silent[:16]:                            # the first ones were dropped for newcomers
            sock.settimeout(5)
            assert sock.recv(1) == b""
    finally:
        for sock in silent:
            sock.close()
