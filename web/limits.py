"""What one request may cost the server: columns per view, keys, span of a query,
body size, open pages. A request past a bound is refused in one line."""
MAX_COLS = 300            # columns per view: a year is read from the hour rollups
CELLS = 80                # heat-map cells on the y-axis
MAX_KEYS = 16             # keys compared on one graph
MAX_VIEWS = 8             # views per worksheet
MAX_SPAN = 3 * 366 * 86400  # seconds one query may span
MAX_BODY = 64 * 1024      # bytes of a request body
MAX_STREAMS = 32          # live pages served at once
MAX_REQUESTS = 64         # requests answered at once (the rest: 503)
LIVE_POLL = 0.25          # seconds between looks for new columns


class LimitError(ValueError):
    """One line: which bound a request passed."""


def check_span(start: int, end: int):
    if not (0 <= start < end):
        raise LimitError(f"not a time range: {start}..{end}")
    if end - start > MAX_SPAN:
        raise LimitError(f"a range of {(end - start) / 86400:.0f} days is more than this server answers "
                         f"({MAX_SPAN // 86400} days)")
