"""Which breakdown keys of a dataset the metrics export shows: the top N by events, the rest as `other`.

The archive keeps every key; a scrape shows at most N + 1 per dataset, whatever
the clients do. Keys are admitted as they first count while fewer than N are
shown; every WINDOW seconds the shown set is ranked again by the events of the
window just ended (a shown key wins a tie, so equal keys do not take turns; then the
larger name),
so at most N series a window come and go. A key's series counts from when it
was (last) admitted; while not shown its events count in `other`, whose series
thus only grows. The key "other" itself (the collector's own overflow key, or a
key named so) always counts in `other`.
"""
OTHER = "other"
WINDOW = 60.0


class TopKeys:
    """The shown keys of one dataset; top=0 shows every key."""

    def __init__(self, top: int, window: float = WINDOW):
        self.top, self.window = top, window
        self.shown = set()
        self.events = {}             # key -> events in the current window
        self.window_start = None

    def route(self, key: str, events: int, now: float) -> tuple:
        """Counts `events` of `key` at `now`; returns (the key they are shown under, the keys
        no longer shown, whose series end)."""
        dropped = self._rank(now)
        if not self.top:
            return key, dropped
        if key != OTHER:
            self.events[key] = self.events.get(key, 0) + events
            if key not in self.shown and len(self.shown) < self.top:
                self.shown.add(key)
        return (key if key in self.shown else OTHER), dropped

    def _rank(self, now: float) -> list:
        if self.window_start is None:
            self.window_start = now
        if not self.top or now - self.window_start < self.window:
            return []
        ranked = sorted(set(self.events) | self.shown,
                        key=lambda k: (self.events.get(k, 0), k in self.shown, k), reverse=True)
        kept = set(ranked[:self.top])
        dropped = sorted(self.shown - kept)
        self.shown, self.events, self.window_start = kept, {}, now
        return dropped
