"""What keeps other sites from acting through the page: every response says it may not
be framed and names the only scripts it runs (HEADERS); a POST is accepted only as
application/json sent by the page's own origin (refused(): a reason, or None).

A browser sends Origin with every POST (and Sec-Fetch-Site with every request); a
form or a text/plain fetch from another site is refused before it reaches a handler,
and a JSON body from another site needs a CORS preflight this server never grants.
A POST that names neither (curl, scripts) is refused too: they send Origin as a page would.

What the origin rule does not cover is a page of another site whose name was made to
resolve to this server's address (DNS rebinding): to the browser it is that site's own
origin, Origin and Host agree, and no token would help (the page could read it). The
browser does not send its remembered credentials to the other name, so a server with
users answers it 401; a server without users, served on loopback, answers only requests
that name a loopback host (foreign_host())."""
import ipaddress

# plotly draws with inline styles and data: images; every script is a file of this server
POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
          "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
HEADERS = {"X-Frame-Options": "DENY", "Content-Security-Policy": POLICY, "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "same-origin"}


def refused(request) -> str | None:
    """Why a POST is not the page's own (None: it is)."""
    if request.content_type != "application/json":
        return "writes take application/json only"
    origin = request.headers.get("Origin")
    if origin is not None:
        if origin != f"{request.scheme}://{request.host}":
            return "a request from another site"
        return None
    if request.headers.get("Sec-Fetch-Site") in ("same-origin", "none"):
        return None
    return "a request without Origin: send Origin as the page does"


def foreign_host(request) -> str | None:
    """Why a request to a server listening on loopback names another host (None: it does not)."""
    sock = request.transport.get_extra_info("sockname") if request.transport else None
    try:
        if not sock or not ipaddress.ip_address(sock[0]).is_loopback:
            return None
    except ValueError:
        return None
    name = (request.url.host or "").rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return None
    try:
        if ipaddress.ip_address(name).is_loopback:
            return None
    except ValueError:
        pass
    return f"served on loopback: ask for it as localhost or 127.0.0.1, not {name[:60]!r}"


async def add_headers(_request, response):
    """on_response_prepare: the headers of HEADERS on every answer, errors and streams included."""
    response.headers.update(HEADERS)
