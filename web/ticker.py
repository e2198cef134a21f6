"""Wakes the live pages when the source changed: bump() for each transaction the collector's
live feed pushes (web/livefeed.py) while it is followed; otherwise one look per LIVE_POLL
(`look()`, the archive's version, server.Source.version), shared by every open page; without
a version (a Prometheus server, a look that failed) each look counts as a change, once a second."""
import asyncio

from .limits import LIVE_POLL


class Ticker:
    def __init__(self, look, pushed=lambda: False):
        self.look, self.pushed, self.generation = look, pushed, 0
        self.changed = asyncio.Event()      # replaced at each change: set once, never cleared
        self.task = None

    def start(self):
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self):
        if self.task:
            self.task.cancel()

    def bump(self):
        """A change: every page waiting is woken."""
        self.generation += 1
        done, self.changed = self.changed, asyncio.Event()
        done.set()

    async def _run(self):
        last = None
        while True:
            if self.pushed():               # the feed bumps; the archive is looked at again after it
                last = None
                await asyncio.sleep(LIVE_POLL)
                continue
            try:
                version = await self.look()
            except Exception:               # the file busy or replaced: the next look opens it again
                version = None
            if version is None or version != last:
                last = version
                self.bump()
            await asyncio.sleep(LIVE_POLL if version is not None else 1.0)

    async def wait(self, seen: int, timeout: float) -> int:
        """The generation after `seen`, or `seen` again after timeout (no lock: an Event per
        generation, so a timed-out wait leaves nothing held)."""
        if self.generation == seen:
            try:
                await asyncio.wait_for(self.changed.wait(), timeout)
            except asyncio.TimeoutError:
                pass
        return self.generation
