"""What keeps other sites from acting through the page: every response says it may not
be framed and names the only scripts it runs (HEADERS); a POST is accepted only as
application/json sent by the page's own origin (refused(): a reason, or None).

A browser sends Origin with every POST (and Sec-Fetch-Site with every request); a
form or a text/plain fetch from another site is refused before it reaches a handler,
and a JSON body from another site needs a CORS preflight this server never grants.
A POST that names neither (curl, scripts) is refused too: they send Origin as a page would."""

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


async def add_headers(_request, response):
    """on_response_prepare: the headers of HEADERS on every answer, errors and streams included."""
    response.headers.update(HEADERS)
