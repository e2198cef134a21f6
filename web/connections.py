"""How many connections the page's server holds, and for how long one may wait before
its first request: at most MAX_CONNECTIONS at once; when full, the oldest one that has
not yet sent a whole request is dropped for the newcomer (or the newcomer is closed when
none can be), and any such connection is dropped after REQUEST_SECONDS: a slow or silent
client cannot hold a slot. Wraps aiohttp's own protocol factory (web.Server): no HTTP
parsing here.

With TLS a connection is first a handshake (Handshake, started with loop.start_tls): at
most MAX_HANDSHAKES at once, each given HANDSHAKE_SECONDS; when full, the oldest one still
in its handshake is dropped for the newcomer, so silent connections cannot keep the
clients that do shake hands out. A connection becomes one of the page's (above) once its
handshake is done."""
import asyncio
import time

MAX_CONNECTIONS = 256
REQUEST_SECONDS = 10.0
MAX_HANDSHAKES = 64
HANDSHAKE_SECONDS = 5.0


class _Refused(asyncio.Protocol):
    def connection_made(self, transport):
        transport.close()


class Connections:
    def __init__(self, server):
        self.server = server            # aiohttp's web.Server: one handler per connection
        self.born = {}                  # handler -> when accepted, until it is closed
        self.served = set()             # handlers that sent a whole request
        self.handshakes = {}            # Handshake -> when accepted, while in its handshake
        self.dropped = 0
        self.grace = 1.0                # from made to connected: the loop's next step (plain)
        lost = server.connection_lost   # each handler tells its server (its manager) when it closes
        def connection_lost(handler, exc=None):
            self.born.pop(handler, None)        # closed: no longer holds a slot, even within its grace
            self.served.discard(handler)
            lost(handler, exc)
        server.connection_lost = connection_lost

    def _prune(self, now) -> set:
        live = set(self.server.connections)
        self.born = {h: t for h, t in self.born.items() if h in live or now - t < self.grace}
        self.served &= live
        return live

    def __call__(self):
        now = time.monotonic()
        live = self._prune(now)
        if len(self.born) >= MAX_CONNECTIONS:
            waiting = [h for h in self.born if h in live and h not in self.served]
            if not waiting:
                self.dropped += 1
                return _Refused()
            self._drop(min(waiting, key=self.born.get))
        handler = self.server()
        self.born[handler] = now
        return handler

    def _drop(self, handler):
        self.dropped += 1
        self.born.pop(handler, None)            # closing: no longer holds a slot
        handler.force_close()

    def request(self, request):
        """A whole request arrived on this connection (the middleware says so)."""
        if request.protocol is not None:
            self.served.add(request.protocol)

    async def reap(self):
        while True:
            await asyncio.sleep(1.0)
            now = time.monotonic()
            live = self._prune(now)
            for h, t in list(self.born.items()):
                if h in live and h not in self.served and now - t > REQUEST_SECONDS:
                    self._drop(h)

    def tls(self, context):
        """The protocol factory of a TLS listener: each connection a Handshake first (its
        handler is connected as it is made)."""
        self.grace = 0.0
        return lambda: Handshake(self, context)


class Handshake(asyncio.Protocol):
    """A TLS connection until its handshake is done; then an aiohttp handler from
    Connections takes the TLS transport over."""

    def __init__(self, connections: Connections, context):
        self.connections, self.context, self.raw, self.task = connections, context, None, None
        self.early, self.eof = [], False         # what arrived as the handshake ended, for the handler

    def connection_made(self, transport):
        self.raw = transport
        transport.pause_reading()                 # start_tls reads the ClientHello
        pending = self.connections.handshakes
        if len(pending) >= MAX_HANDSHAKES:
            oldest = min(pending, key=pending.get)
            pending.pop(oldest)
            oldest.raw.abort()
            self.connections.dropped += 1
        pending[self] = time.monotonic()
        self.task = asyncio.get_running_loop().create_task(self._shake())    # held: the loop keeps weak ones

    async def _shake(self):
        try:
            tls = await asyncio.get_running_loop().start_tls(self.raw, self, self.context, server_side=True,
                                                              ssl_handshake_timeout=HANDSHAKE_SECONDS)
        except (OSError, asyncio.TimeoutError, asyncio.CancelledError):
            return                                # dropped, timed out or refused: start_tls closed it
        finally:
            self.connections.handshakes.pop(self, None)
        if tls is None or tls.is_closing():
            return
        handler = self.connections()
        tls.set_protocol(handler)
        handler.connection_made(tls)
        for data in self.early:
            handler.data_received(data)
        if self.eof and not handler.eof_received():
            tls.close()

    def data_received(self, data):
        """A request sent right behind the client's last handshake message arrives here, before
        the handler takes over."""
        self.early.append(data)

    def eof_received(self):
        self.eof = True
        return True

    def connection_lost(self, exc):
        self.connections.handshakes.pop(self, None)
