"""The aiohttp application of `strata web`: the page and its assets (a fixed list: no
path outside it is reachable), the views' JSON, the live columns as server-sent events,
drill-downs, named worksheets, and the datasets' lifecycle for an authenticated user.

Reads run in a small thread pool, each thread with its own read-only archive; every
answer is bounded (limits.py): a request past a bound gets one line and 4xx/503.
"""
import asyncio
import gzip
import hashlib
import json
import os
import sqlite3
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from importlib import resources

import plotly
from aiohttp import web

from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError
from strata.heatmaps.errors import ViewError
from strata.prometheus.reader import PrometheusReader

from . import auth, limits, samesite, views, worksheets
from .connections import Connections
from .livefeed import LiveFeed
from .ticker import Ticker

ASSETS = {"worksheet.js": "text/javascript", "worksheet.css": "text/css", "index.html": "text/html"}
# plotly.js's cartesian bundle where the build made it (web/web.mk), else plotly.py's full one
PLOTLY_CARTESIAN = os.path.join(os.path.dirname(__file__), "static", "plotly-cartesian.min.js")
PLOTLY_JS = PLOTLY_CARTESIAN if os.path.exists(PLOTLY_CARTESIAN) else \
    os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js")
KEEPALIVE = 15.0     # seconds between comments on an idle live stream


class Source:
    """Where the worksheet reads: an archive file or a Prometheus server. Writes
    (lifecycle, worksheets) go to the archive only.

    The archive is read through one handle, in the one reading thread (Worksheet.pool),
    opened again when its files are no longer those it opened: a writer closing as the
    last connection SQLite sees deletes the -wal and -shm (this process holds no lock
    SQLite can see once any descriptor of the file was closed, as schema.check_header
    does), the next writer makes new ones, and a handle opened before would read the
    deleted ones, frozen. SQLite shares one -shm mapping among a process's connections,
    so a new one is mapped only once every handle is closed: hence one handle."""

    def __init__(self, archive_path: str | None, prometheus_url: str | None):
        self.path, self.url = archive_path, prometheus_url
        self.handle, self.files, self.opened = None, None, 0

    def reader(self):
        if self.url:
            return PrometheusReader(self.url)
        files = _identities(self.path)
        if self.handle is not None and files != self.files:
            self.handle.close()
            self.handle = None
        if self.handle is None:
            self.handle, self.files = Archive.open(self.path, readonly=True), files
            self.opened += 1
        return self.handle

    def version(self):
        """What moves when the archive changed: (which handle, its SQLite data_version, which moves
        when another connection commits); None for a Prometheus server."""
        if self.url:
            return None
        try:
            handle = self.reader()
            return self.opened, handle.conn.execute("PRAGMA data_version").fetchone()[0]
        except (ArchiveError, sqlite3.Error):
            self.close()
            return None

    def close(self):
        if self.handle is not None:
            self.handle.close()
            self.handle = None

    def writer(self) -> Archive:
        if self.url:
            raise ArchiveError("a Prometheus server is read-only: serve an archive to change datasets")
        return Archive.open(self.path, readonly=False)


def _identities(path: str) -> tuple:
    """(device, inode) of the archive and of its -shm, None for a missing one."""
    out = []
    for name in (path, path + "-shm"):
        try:
            st = os.stat(name)
            out.append((st.st_dev, st.st_ino))
        except OSError:
            out.append(None)
    return tuple(out)


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"error": str(message).splitlines()[0][:300] if message else "error"},
                             status=status)


class Worksheet:
    def __init__(self, source: Source, web_config=None, open_name: str | None = None):
        self.source, self.web_config, self.open_name = source, web_config, open_name
        self.pool = ThreadPoolExecutor(1, thread_name_prefix="strata-web")   # the one reading thread (Source)
        self.registry = OrderedDict()      # live id -> (ViewSpec, geometry), bounded
        self.busy = 0
        self.streams = 0
        self.shared = {}                  # (view, after, now, generation) -> its columns' task
        self.ticker = Ticker(lambda: asyncio.get_running_loop().run_in_executor(self.pool, source.version),
                             pushed=lambda: self.feed is not None and self.feed.following)
        self.feed = None if source.url else LiveFeed(source.path, self.ticker.bump)   # the collector's seconds
        self.connections = None           # set by serve()
        self.auth = auth.Authenticator(web_config.users if web_config else {})
        self.plotly_gz = None             # plotly.min.js gzipped: its future, made at the first ask

    async def run(self, fn, *args):
        """fn(reader, *args) in the pool; one-line errors become 400."""
        def call():
            return fn(self.source.reader(), *args)
        try:
            return await asyncio.get_running_loop().run_in_executor(self.pool, call)
        except (ArchiveError, ViewError, limits.LimitError) as e:
            raise web.HTTPBadRequest(text=json.dumps({"error": str(e)}), content_type="application/json")

    # -- authentication and bounds ------------------------------------------------------------

    @web.middleware
    async def guard(self, request, handler):
        began = time.perf_counter()
        if self.connections:
            self.connections.request(request)
        why = None if self.web_config and self.web_config.users else samesite.foreign_host(request)
        if why:                                 # no password to ask: only loopback names are served
            return _error(403, why)
        if request.method == "POST":            # before the password: a cross-site post costs no bcrypt
            why = samesite.refused(request)
            if why:
                return _error(403, why)
        try:
            user = await self.auth.user(request.headers.get("Authorization", ""), request.remote)
        except auth.Busy:
            return web.json_response({"error": "busy: checking this address's passwords already"}, status=429,
                                     headers={"Retry-After": "1"})
        if user is None:
            return web.Response(status=401, text="authentication needed\n",
                                headers={"WWW-Authenticate": 'Basic realm="strata"'})
        if self.busy >= limits.MAX_REQUESTS:
            return _error(503, "busy: too many requests at once")
        self.busy += 1
        try:
            return _timed(_compressed(await handler(request)), began)
        except web.HTTPException as e:
            if e.content_type == "application/json" or e.status < 400:
                raise
            return _error(e.status, e.reason)
        finally:
            self.busy -= 1

    def writer_only(self, request):
        if not self.web_config or not self.web_config.users:
            raise web.HTTPForbidden(text=json.dumps({"error": "changes need a signed-in user: serve with "
                                                              "--web-config naming basic_auth_users"}),
                                    content_type="application/json")

    # -- the page -----------------------------------------------------------------------------

    async def page(self, request):
        if self.open_name and not request.query:
            state = await self.run(lambda _r: worksheets.load(self.source.path, self.open_name))
            raise web.HTTPFound("/?s=" + _quote(json.dumps(state, separators=(",", ":"))))
        return self.asset_response("index.html")

    def asset_response(self, name):
        body = resources.files("strata.web").joinpath("static", name).read_bytes()
        return web.Response(body=body, content_type=ASSETS[name], headers={"Cache-Control": "no-cache"})

    async def asset(self, request):
        name = request.match_info["name"]
        if name == "plotly.min.js":
            headers = {"Content-Type": "text/javascript", "Cache-Control": "max-age=86400", "Vary": "Accept-Encoding"}
            if "gzip" not in request.headers.get("Accept-Encoding", ""):
                return web.FileResponse(PLOTLY_JS, headers=headers)
            if self.plotly_gz is None:                 # compressed once, off the event loop
                self.plotly_gz = asyncio.get_running_loop().run_in_executor(None, _gzip_file, PLOTLY_JS)
            return web.Response(body=await asyncio.shield(self.plotly_gz),
                                headers={**headers, "Content-Encoding": "gzip"})
        if name not in ASSETS:
            return _error(404, "no such asset")
        return self.asset_response(name)

    # -- reading ------------------------------------------------------------------------------

    async def datasets(self, request):
        infos, time_views = await self.run(lambda r: ([_listed(i) for i in r.datasets()], views.time_views(r)))
        return web.json_response({"datasets": infos, "time_views": time_views, "writable": bool(self.web_config and self.web_config.users)
                                  and not self.source.url, "zone": _zone_name()})

    async def view(self, request):
        q = request.query
        try:
            spec = views.ViewSpec.parse(q)
            start, end = _range(q)
        except limits.LimitError as e:
            return _error(400, e)
        out = await self.run(views.view, spec, start, end)
        live_id = hashlib.sha1(json.dumps([spec.__dict__, out["live"]], default=list,
                                          sort_keys=True).encode()).hexdigest()[:16]
        self.registry[live_id] = (spec, out["live"])
        self.registry.move_to_end(live_id)
        while len(self.registry) > 4096:
            self.registry.popitem(last=False)
        out["live"]["id"] = live_id
        return web.Response(text=json.dumps(out, cls=_PlotlyJSON), content_type="application/json")

    async def live(self, request):
        """Server-sent events: per view, the columns after its `after` second as they arrive."""
        ids = request.query.get("ids", "").split(",")[:limits.MAX_VIEWS]
        try:
            after = [int(a) for a in request.query.get("after", "").split(",")][:len(ids)]
        except ValueError:
            return _error(400, "after: one unix second per view")
        known = [self.registry.get(i) for i in ids]
        shared = [_view_key(*k) if k else None for k in known]
        if not ids or len(after) != len(ids) or None in known:
            return _error(404, "unknown view: load the views again")
        if self.streams >= limits.MAX_STREAMS:
            return _error(503, f"busy: {limits.MAX_STREAMS} live pages are open already")
        self.streams += 1
        self.busy -= 1                   # a stream is counted among the streams, not the requests
        try:
            resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache",
                                               "X-Accel-Buffering": "no"})
            await resp.prepare(request)
            seen, quiet = -1, time.monotonic()
            while True:
                now = int(time.time())
                for i, (spec, geometry) in enumerate(known):
                    cols, after[i], refit = await self.columns(shared[i], spec, geometry, after[i], now)
                    if cols:
                        event = {'i': i, 'cols': cols, **({'refit': True} if refit else {})}
                        await resp.write(f"data: {json.dumps(event, separators=(',', ':'))}\n\n".encode())
                        quiet = time.monotonic()
                if time.monotonic() - quiet > KEEPALIVE:        # a comment keeps proxies from closing
                    await resp.write(b": idle\n\n")
                    quiet = time.monotonic()
                seen = await self.ticker.wait(seen, 1.0)      # woken by a commit; a look a second at worst
        except (ConnectionError, web.HTTPBadRequest):
            return resp                     # the page went away, or its view can no longer be read
        finally:
            self.streams -= 1
            self.busy += 1

    async def columns(self, view_key, spec, geometry, after, now):
        """views.columns, read once per view, second and change of the archive for every
        page that asks (pages showing the same views share each read)."""
        key = (view_key, after, now, self.ticker.generation)
        task = self.shared.get(key)
        if task is None:
            for old in [k for k in self.shared if k[2] < now - 2]:
                del self.shared[old]
            task = self.shared[key] = asyncio.ensure_future(self.run(self.live_columns, spec, geometry, after, now))
        return await asyncio.shield(task)

    def live_columns(self, reader, *args):
        """views.columns from the seconds the collector pushed, where they are held (livefeed.py)."""
        if self.feed:
            reader = self.feed.reader(reader, self.source.files[0])
        return views.columns(reader, *args)

    async def drill(self, request):
        body = await _json_body(request)
        try:
            spec = views.ViewSpec.parse(body.get("view") or {})
            x0, x1 = body["x0"], body["x1"]
            if not all(isinstance(x, (int, float, str)) for x in (x0, x1)):
                raise TypeError("x0 and x1 are unix seconds")
            y0, y1 = float(body["y0"]), float(body["y1"])
            top = max(1, min(int(body.get("top", 8)), 50))
            by = body.get("by")
            if by is not None and not isinstance(by, str):
                raise TypeError("by is a field name")
        except (KeyError, TypeError, ValueError, OverflowError) as e:
            return _error(400, f"a drill-down needs view, x0, x1, y0, y1 ({e})")
        return web.json_response(await self.run(views.drill, spec, x0, x1, y0, y1, top, by))

    # -- worksheets and datasets ----------------------------------------------------------------

    async def worksheet_list(self, request):
        if self.source.url:
            return web.json_response({"worksheets": []})
        return web.json_response({"worksheets": await self.run(lambda _r: worksheets.names(self.source.path))})

    async def worksheet_get(self, request):
        name = request.match_info["name"]
        return web.json_response({"name": name, "state": await self.run(
            lambda _r: worksheets.load(self.source.path, name))})

    async def worksheet_save(self, request):
        self.writer_only(request)
        body = await _json_body(request)
        if not isinstance(body.get("state"), dict):
            return _error(400, "a worksheet needs name and state")
        await self.run(lambda _r: worksheets.save(self.source.path, body.get("name"), body["state"]))
        return web.json_response({"saved": body.get("name")})

    async def dataset_change(self, request):
        self.writer_only(request)
        body = await _json_body(request)
        action, name = body.get("action"), str(body.get("name") or "").strip()
        if action not in ("create", "suspend", "resume") or not name or len(name) > 300:
            return _error(400, "say action (create, suspend, resume) and a dataset name")

        def change(_r):
            with self.source.writer() as archive:
                if action == "create":
                    return [archive.create(name).to_json()]
                archive.set_state([name], "active" if action == "resume" else "suspended")
                return [archive.dataset(name).to_json()]
        return web.json_response({"changed": await self.run(change)})

    def app(self) -> web.Application:
        app = web.Application(client_max_size=limits.MAX_BODY, middlewares=[self.guard])
        app.on_response_prepare.append(samesite.add_headers)
        app.router.add_get("/", self.page)
        app.router.add_get("/static/{name}", self.asset)
        app.router.add_get("/api/datasets", self.datasets)
        app.router.add_post("/api/datasets", self.dataset_change)
        app.router.add_get("/api/view", self.view)
        app.router.add_get("/api/live", self.live)
        app.router.add_post("/api/drill", self.drill)
        app.router.add_get("/api/worksheets", self.worksheet_list)
        app.router.add_get("/api/worksheets/{name}", self.worksheet_get)
        app.router.add_post("/api/worksheets", self.worksheet_save)

        async def started(_app):
            self.ticker.start()
            if self.feed:
                self.feed.start()

        async def stopped(_app):
            await self.ticker.stop()
            if self.feed:
                await self.feed.stop()
            self.pool.submit(self.source.close)
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.auth.close()
        app.on_startup.append(started)
        app.on_cleanup.append(stopped)
        return app


class _PlotlyJSON(json.JSONEncoder):
    """plotly's figure dicts hold numpy arrays and datetimes: encoded as plotly encodes them."""

    def default(self, o):
        from plotly.utils import PlotlyJSONEncoder
        return PlotlyJSONEncoder().default(o)


def _compressed(response):
    """A whole answer of some size gzipped (deflated) for a client that takes it (aiohttp
    reads Accept-Encoding); streams and files go as they are."""
    if type(response) is web.Response and response.body is not None and len(response.body) > 1024 \
            and "Content-Encoding" not in response.headers:
        response.enable_compression()
    return response


def _timed(response, began: float):
    """A whole answer says how long the server took over it, from the request reaching
    the application to its answer (Server-Timing: app;dur=MILLISECONDS)."""
    if type(response) is web.Response:
        response.headers["Server-Timing"] = f"app;dur={(time.perf_counter() - began) * 1000:.1f}"
    return response


def _gzip_file(path: str) -> bytes:
    with open(path, "rb") as f:
        return gzip.compress(f.read(), 6)


def _listed(info) -> dict:
    """A dataset as the page lists it: the archive's JSON, or what a Prometheus server
    says of its series (no retention nor records of strata's own)."""
    if info.retention is not None:
        return info.to_json()
    return {"name": info.name, "statistic": info.statistic, "breakdown": info.breakdown or None,
            "kind": info.kind, "unit": info.unit, "state": info.state}


def _zone_name() -> str:
    """The server's time zone as the page's Intl names it (an IANA name), UTC when unknown."""
    name = os.environ.get("TZ", "").lstrip(":")
    if not name:
        try:
            name = os.readlink("/etc/localtime").split("zoneinfo/", 1)[1]
        except (OSError, IndexError):
            name = "UTC"
    return name if "/" in name or name in ("UTC", "GMT") else "UTC"


def _view_key(spec, geometry) -> str:
    """What a view's columns depend on: its spec and geometry (not when it was loaded)."""
    return json.dumps([spec.__dict__, {k: v for k, v in geometry.items() if k not in ("id", "next")}],
                      default=list, sort_keys=True)


def _quote(text: str) -> str:
    from urllib.parse import quote
    return quote(text, safe="")


def _range(q) -> tuple:
    """(start, end) from since/until (unix seconds) or last (seconds ending now)."""
    now = int(time.time())
    try:
        if q.get("since"):
            start, end = int(q["since"]), int(q.get("until") or now)
        else:
            end = int(q.get("until") or now)
            start = end - int(q.get("last") or 300)
    except ValueError:
        raise limits.LimitError("since, until and last are whole seconds") from None
    limits.check_span(start, end)
    return start, end


async def _json_body(request) -> dict:
    try:
        body = await request.json()
    except web.HTTPRequestEntityTooLarge:
        raise
    except RecursionError:
        raise web.HTTPBadRequest(text=json.dumps({"error": "the request body is nested too deeply"}),
                                 content_type="application/json") from None
    except (ValueError, UnicodeDecodeError):
        raise web.HTTPBadRequest(text=json.dumps({"error": "the request body is not JSON"}),
                                 content_type="application/json") from None
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(text=json.dumps({"error": "the request body is not a JSON object"}),
                                 content_type="application/json")
    return body


async def serve(worksheet: Worksheet, host: str, port: int, tls=None, ready=None):
    """Serve until cancelled; ready(port) is called once listening. Connections are
    bounded (connections.py) around aiohttp's own server."""
    runner = web.AppRunner(worksheet.app(), handle_signals=False, access_log=None,
                           keepalive_timeout=15, max_line_size=8190, max_field_size=8190)
    await runner.setup()
    worksheet.connections = Connections(runner.server)
    loop = asyncio.get_running_loop()
    factory = worksheet.connections.tls(tls) if tls else worksheet.connections
    server = await loop.create_server(factory, host, port, backlog=128)
    reaper = loop.create_task(worksheet.connections.reap())
    if ready:
        ready(server.sockets[0].getsockname()[1])
    try:
        await asyncio.Event().wait()
    finally:
        reaper.cancel()
        server.close()
        await runner.cleanup()
