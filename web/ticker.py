"""Wakes the live pages when the archive changed: one look per LIVE_POLL at SQLite's
data_version (it moves when another connection, the collector, commits), shared by
every open page; a Prometheus server is looked at once a second. A look that fails
(the file busy or replaced) counts as a change and the next one opens the file again."""
import asyncio
import os
import sqlite3
from urllib.parse import quote

from .limits import LIVE_POLL


class Ticker:
    def __init__(self, path: str | None):
        self.path, self.generation = path, 0
        self.changed = asyncio.Event()      # replaced at each change: set once, never cleared
        self.task = None

    def start(self):
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self):
        if self.task:
            self.task.cancel()

    def _version(self, conn):
        """(connection, data_version or None when the look failed)."""
        try:
            if conn is None:
                conn = sqlite3.connect("file:" + quote(os.path.abspath(self.path)) + "?mode=ro", uri=True,
                                       check_same_thread=False, timeout=0.1)
            return conn, conn.execute("PRAGMA data_version").fetchone()[0]
        except sqlite3.Error:
            if conn is not None:
                conn.close()
            return None, None

    async def _run(self):
        conn, last = None, None
        try:
            while True:
                await asyncio.sleep(LIVE_POLL if self.path else 1.0)
                version = None
                if self.path:
                    conn, version = self._version(conn)
                if version is None or version != last:
                    last = version
                    self.generation += 1
                    done, self.changed = self.changed, asyncio.Event()
                    done.set()
        finally:
            if conn is not None:
                conn.close()

    async def wait(self, seen: int, timeout: float) -> int:
        """The generation after `seen`, or `seen` again after timeout (no lock: an Event per
        generation, so a timed-out wait leaves nothing held)."""
        if self.generation == seen:
            try:
                await asyncio.wait_for(self.changed.wait(), timeout)
            except asyncio.TimeoutError:
                pass
        return self.generation
