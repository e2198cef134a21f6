"""How many connections the page's server holds, and for how long one may wait before
its first request: at most MAX_CONNECTIONS at once; when full, the oldest one that has
not yet sent a whole request is dropped for the newcomer (or the newcomer is closed when
none can be), and any such connection is dropped after REQUEST_SECONDS: a slow or silent
client cannot hold a slot. Wraps aiohttp's own protocol factory (web.Server): no HTTP
parsing here. A TLS handshake has REQUEST_SECONDS too (create_server's timeout)."""
import asyncio
import time

MAX_CONNECTIONS = 256
REQUEST_SECONDS = 10.0


class _Refused(asyncio.Protocol):
    def connection_made(self, transport):
        transport.close()


class Connections:
    def __init__(self, server, tls: bool):
        self.server = server            # aiohttp's web.Server: one handler per connection
        self.born = {}                  # handler -> when accepted, until it is closed
        self.served = set()             # handlers that sent a whole request
        self.dropped = 0
        # a handler is connected once accepted (plain) or once its handshake is done (TLS)
        self.grace = REQUEST_SECONDS + 1 if tls else 1.0

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
