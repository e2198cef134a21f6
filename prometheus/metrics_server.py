"""The metrics endpoint on the network: GET /metrics over HTTP or HTTPS, as exporters serve it.

Content negotiation picks the body (preferred(): protobuf with native histograms,
native_exposition.py, else OpenMetrics text), rendered once per archived second
however many scrapers ask. With a web configuration (webconfig.py) connections
are TLS and requests need basic auth (401 without). A client can hold neither
the collector nor the scrapes: at most MAX_CONNECTIONS connections are served at
once (when full, the oldest one still sending its request is dropped for the
newcomer), a request (TLS handshake included) must arrive within REQUEST_SECONDS
and stay under MAX_REQUEST bytes, and a whole exchange ends within
EXCHANGE_SECONDS. Handshakes run in the connection's own thread, never in the
accepting one; the collector's own thread only ever waits for a render's lock.
"""
import gzip
import http.server
import re
import socket
import ssl
import threading
import time

from strata.prometheus.openmetrics import CONTENT_TYPE, Exposition
from strata.prometheus.webconfig import WebConfig, basic_credentials

PROTOBUF_CONTENT_TYPE = ("application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; "
                         "encoding=delimited")
_PROTO = "application/vnd.google.protobuf"
_TEXT = ("application/openmetrics-text", "text/plain", "text/*", "application/*", "*/*")


def preferred(accept: str) -> bool:
    """Whether an Accept header prefers the delimited MetricFamily protobuf to text
    (a tie goes to protobuf, which the client named)."""
    best = {True: 0.0, False: 0.0}
    for offer in accept.split(",")[:32]:
        kind, *params = [p.strip() for p in offer.split(";")]
        fields = dict(p.partition("=")[::2] for p in params)
        try:
            q = min(max(float(fields.get("q", "1")), 0.0), 1.0)
        except ValueError:
            continue
        is_proto = kind.lower() == _PROTO and fields.get("proto") == "io.prometheus.client.MetricFamily" \
            and fields.get("encoding") == "delimited"
        if is_proto or kind.lower() in _TEXT:
            best[is_proto] = max(best[is_proto], q)
    return best[True] > 0 and best[True] >= best[False]


MAX_CONNECTIONS = 64
REQUEST_SECONDS = 5.0
EXCHANGE_SECONDS = 30.0
MAX_REQUEST = 16384


class RequestTooLarge(Exception):
    pass


class _Limited:
    """The request's reading side, cut at MAX_REQUEST bytes (request line and headers)."""

    def __init__(self, f, left: int):
        self.f, self.left = f, left

    def readline(self, size: int = -1) -> bytes:
        want = self.left + 1 if size < 0 else min(size, self.left + 1)
        line = self.f.readline(want)
        self.left -= len(line)
        if self.left < 0:
            raise RequestTooLarge()
        return line

    def read(self, size: int = -1) -> bytes:
        return self.f.read(0 if size < 0 else min(size, max(self.left, 0)))

    def close(self):
        self.f.close()


class _Connection:
    def __init__(self, sock):
        self.sock, self.answering = sock, False
        self.deadline = time.monotonic() + REQUEST_SECONDS

    def cut(self):
        try:
            socket.socket.shutdown(self.sock, socket.SHUT_RDWR)   # the blocked thread returns
        except OSError:
            pass


class _Handler(http.server.BaseHTTPRequestHandler):
    exposition: Exposition = None
    web: WebConfig = None
    timeout = REQUEST_SECONDS            # a blocking read or write
    conn: _Connection = None

    def setup(self):
        super().setup()
        self.rfile = _Limited(self.rfile, MAX_REQUEST)

    def handle(self):
        try:
            super().handle()
        except RequestTooLarge:
            self._try(lambda: self.send_error(431, "request too large"))
        except (OSError, ssl.SSLError):
            pass                         # timed out, cut or hung up: nothing to answer

    def _try(self, answer):
        try:
            answer()
        except OSError:
            pass

    def do_GET(self):  # noqa: N802 (http.server's naming)
        self.server.answering(self.request)
        if self.path.split("?")[0] != "/metrics":
            self.send_error(404, "strata serves /metrics only")
            return
        if not self._authorized():
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="strata"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        protobuf = preferred(self.headers.get("Accept", ""))
        body = self.exposition.body(protobuf)
        gzipped = "gzip" in self.headers.get("Accept-Encoding", "")
        if gzipped:               # Prometheus asks for it: a tenth of the bytes
            body = gzip.compress(body, compresslevel=1)
        self.send_response(200)
        self.send_header("Content-Type", PROTOBUF_CONTENT_TYPE if protobuf else CONTENT_TYPE)
        if gzipped:
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self) -> bool:
        if not self.web or not self.web.users:
            return True
        credentials = basic_credentials(self.headers.get("Authorization", ""))
        return credentials is not None and self.web.allows(*credentials)

    def log_message(self, *_):
        pass   # a scrape a second would flood the collector's log


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address, handler, tls: ssl.SSLContext):
        self.tls, self.lock, self.conns = tls, threading.Lock(), {}
        super().__init__(address, handler)
        self.reaper = threading.Thread(target=self._reap, name="metrics-reaper", daemon=True)
        self.reaper.start()

    def process_request(self, request, client_address):
        conn = _Connection(request)
        with self.lock:
            if len(self.conns) >= MAX_CONNECTIONS:
                waiting = [k for k, c in self.conns.items() if not c.answering]
                if not waiting:
                    self.shutdown_request(request)     # all busy answering: refused
                    return
                self.conns.pop(min(waiting, key=lambda k: self.conns[k].deadline)).cut()
            self.conns[id(request)] = conn
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        key = id(request)
        conn = self.conns.get(key) or _Connection(request)     # dropped already: its socket is cut
        try:
            if self.tls:
                request.settimeout(REQUEST_SECONDS)
                request = conn.sock = self.tls.wrap_socket(request, server_side=True,
                                                           do_handshake_on_connect=False)
                request.do_handshake()          # after conn.sock is the wrapped socket: cut() reaches it
            self.finish_request(request, client_address)
        except (OSError, ssl.SSLError, ValueError):
            pass                        # handshake failed, timed out or cut
        finally:
            with self.lock:
                self.conns.pop(key, None)
            self.shutdown_request(request)

    def answering(self, sock):
        """The request has arrived: no longer the one dropped for a newcomer; the exchange's deadline."""
        with self.lock:
            for c in self.conns.values():
                if c.sock is sock:
                    c.answering, c.deadline = True, c.deadline - REQUEST_SECONDS + EXCHANGE_SECONDS

    def _reap(self):
        while True:
            time.sleep(0.25)
            now = time.monotonic()
            with self.lock:
                late = [c for c in self.conns.values() if c.deadline < now]
            for c in late:
                c.cut()

    def handle_error(self, request, client_address):
        pass                            # a client's fault is not the collector's


def parse_address(text: str, empty_host: str = "0.0.0.0", what: str = "metrics address"):
    """`HOST:PORT`, `[V6]:PORT` or `:PORT` (empty_host: all interfaces unless told) ->
    (host, port); ValueError naming `what` if not."""
    m = re.fullmatch(r"(?:\[([0-9a-fA-F:.]+)\]|([^:\[\]]*)):(\d{1,5})", text)
    if not m or int(m.group(3)) > 65535:
        raise ValueError(f"bad {what} {text!r}: expected HOST:PORT, [IPV6]:PORT or :PORT")
    return (m.group(1) or m.group(2) or empty_host), int(m.group(3))


class MetricsServer:
    """Serves an Exposition from a background thread; close() stops it."""

    def __init__(self, exposition: Exposition, host: str, port: int, web: WebConfig = None):
        handler = type("Handler", (_Handler,), {"exposition": exposition, "web": web})
        server_class = _Server
        if ":" in host:
            server_class = type("V6Server", (_Server,), {"address_family": socket.AF_INET6})
        self.server = server_class((host, port), handler, web.tls if web else None)
        self.thread = threading.Thread(target=self.server.serve_forever, name="metrics", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        scheme = "https" if self.server.tls else "http"
        return f"{scheme}://{'[' + host + ']' if ':' in host else host}:{port}/metrics"

    def close(self):
        self.server.shutdown()
        self.server.server_close()
