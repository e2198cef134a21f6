"""The live columns' source of seconds when a collector writes the archive served: the seconds
it pushes as it stores them (its live feed, collect/livefeed.py), held here for a while, so a
live page reads the collector's in-memory second, as its Prometheus exposition does, instead
of polling the archive. Anything the feed cannot answer is read from the archive as before:
no collector runs for this file (a copy of an archive, a Prometheus server), the collector
stopped or restarted, a range reaching back before the subscription or before what is held.

Following: every LOOK_EVERY seconds while none is followed, the running collectors' status
files (collect/status.py) are read for one whose archive is this same file (device and
inode) and that serves a feed; its socket must belong to that collector's process
(SO_PEERCRED) and its hello must name this file. Its bytes are checked as untrusted: lines of
at most MAX_LINE bytes, a header of at most MAX_HEADER, every field's type and range; the
first that is wrong ends the subscription (said once), and the archive is read.

Holding: per dataset, its second records as pushed (the daemon's line, decoded and encoded
as the archive encodes it when first read), for KEEP seconds and at most MAX_BYTES in all
(the dataset holding most gives up its oldest first). A dataset's seconds are answered here
for a range from its `floor` on: the subscription's `since`, moved past any record given up.
An answer is datasets/reader.py's query_held(), the archive's own binning of seconds.
Seconds another process writes into the archive meanwhile (an import) are not among them:
loading the view again reads them."""
import asyncio
import bisect
import json
import os
import socket
import struct
import sys
import threading
import time

from strata.collect import status
from strata.datasets import codec, reader
from strata.datasets.errors import BadRecord
from strata.datasets.ingest import cells_of, check_time
from strata.heatmaps.clock import zone

MAX_LINE = 16 << 20     # the collector's own bound on a daemon line (collect/collector.py)
MAX_HEADER = 512
KEEP = 3600             # seconds of each dataset held
MAX_BYTES = 64 << 20    # bytes held in all
LOOK_EVERY = 1.0        # seconds between looks for a collector while none is followed
VERSION = 1


class FeedError(ValueError):
    """What the feed sent cannot be followed (one line)."""


class _Dataset:
    """One dataset's held seconds: t -> [seconds, cause, kind, parts (daemon lines) or None,
    record (encoded) or None], their times in order, its keys (local indices)."""

    def __init__(self, floor: int):
        self.floor, self.entries, self.times, self.spans = floor, {}, [], set()
        self.keys, self.names, self.bytes = {}, {}, 0

    def intern(self, key):
        idx = self.keys.get(key)
        if idx is None:
            idx = self.keys[key] = len(self.keys)
            self.names[idx] = key
        return idx

    def add(self, t, seconds, cause, kind, raw) -> int:
        """Hold one pushed record; a second pushed twice is summed (as the archive stores it).
        Returns the bytes added."""
        entry = self.entries.get(t)
        if entry is None:
            self.entries[t] = [seconds, cause, kind, [raw], None]
            bisect.insort(self.times, t)
        else:
            if entry[3] is None:           # decoded already: its parts again, from the record
                entry[3] = [entry[4]]
            entry[0], entry[4] = max(entry[0], seconds), None
            entry[3].append(raw)
        if seconds > 1:
            self.spans.add(t)
        self.bytes += len(raw)
        return len(raw)

    def drop_oldest(self) -> int:
        t = self.times.pop(0)
        entry = self.entries.pop(t)
        self.spans.discard(t)
        self.floor = max(self.floor, t + entry[0])
        size = _size(entry)
        self.bytes -= size
        return size

    def record(self, t) -> bytes:
        """The second's record as the archive encodes it, decoded from the daemon's lines once."""
        entry = self.entries[t]
        if entry[4] is None:
            kind, parts = entry[2], entry[3]
            cells = [cells_of(kind, _data(raw), self.intern) for raw in parts]
            whole = cells[0] if len(cells) == 1 else codec.combine(codec.Cells.concat(cells))
            entry[4] = codec.encode(kind, whole, 1)[0]
            entry[3] = None
            self.bytes += len(entry[4]) - sum(len(p) for p in parts)
        return entry[4]


def _size(entry) -> int:
    return len(entry[4]) if entry[4] is not None else sum(len(p) for p in entry[3])


def _data(raw: bytes) -> dict:
    msg = json.loads(raw)
    if not isinstance(msg, dict) or not isinstance(msg.get("data"), dict):
        raise FeedError("a second's record holds no data object")
    return msg["data"]


class LiveFeed:
    """strata web's subscription to the collector of its archive, and the seconds it holds."""

    def __init__(self, archive_path: str, on_commit, log=None):
        self.path, self.on_commit = os.path.abspath(archive_path), on_commit
        self.log = log or (lambda msg: print(f"strata web: {msg}", file=sys.stderr, flush=True))
        self.lock = threading.Lock()          # the held seconds: added here, read in the pool's thread
        self.datasets, self.bytes = {}, 0
        self.since, self.identity, self.following = None, None, False
        self.task, self.said, self.broken = None, set(), None

    # -- reading (the pool's thread) -----------------------------------------------------------

    def reader(self, archive, identity):
        """The reader of the live columns over `archive`, whose file is `identity`."""
        return LiveReader(archive, self, identity)

    def read(self, info, start: int, end: int, resolution, identity):
        """The QueryResult of dataset info over [start, end) from the held seconds, or None when
        they do not hold all of it (read the archive)."""
        step = 1 if resolution is None else int(resolution)
        t0 = int(start) - int(start) % step
        with self.lock:
            if not self.following or identity != self.identity:
                return None
            held = self.datasets.get(info.id)
            floor = held.floor if held is not None else self.since
            horizon = info.horizon.get("second", 0)
            if t0 < floor or t0 < horizon or int(end) <= t0:
                return None
            records = []
            if held is not None:
                lo, hi = bisect.bisect_left(held.times, t0), bisect.bisect_left(held.times, int(end))
                ts = sorted({t for t in held.spans if horizon <= t < t0 and t + held.entries[t][0] > t0} |
                            set(held.times[lo:hi]))
                size = held.bytes
                try:
                    for t in ts:
                        entry = held.entries[t]
                        if entry[2] != info.kind:
                            return None
                        records.append((t, entry[0], entry[1], held.record(t)))
                except (FeedError, BadRecord, ValueError, TypeError) as e:
                    self._broken(f"a pushed second does not decode ({e})")
                    return None
                finally:
                    if self.following:                  # decoded records are smaller than their lines
                        self.bytes += held.bytes - size
            names = dict(held.names) if held is not None else {}
        return reader.query_held(info, start, end, resolution, records, names)

    def _broken(self, why):
        """Stop answering from the feed (under the lock); the subscription ends at its next commit."""
        self.following, self.broken = False, why
        self.datasets.clear()
        self.bytes = 0

    # -- following (the event loop) --------------------------------------------------------

    def start(self):
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self):
        if self.task:
            self.task.cancel()

    async def _run(self):
        while True:
            found = self._find()
            if found:
                why = None
                try:
                    await self._follow(*found)
                except (OSError, ValueError, asyncio.IncompleteReadError) as e:
                    why = (str(e).splitlines() or [type(e).__name__])[0][:200]
                finally:
                    self._unfollow(found[0], why)
            await asyncio.sleep(LOOK_EVERY)

    def _find(self):
        """(socket path, pid) of a running collector of this same file serving a feed, or None."""
        try:
            here = os.stat(self.path)
        except OSError:
            return None
        for record in status.running():
            live, pid, archive = record.get("live"), record.get("pid"), record.get("archive")
            if not (isinstance(live, str) and isinstance(pid, int) and isinstance(archive, str)):
                continue
            try:
                st = os.stat(archive)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) == (here.st_dev, here.st_ino):
                return live, pid
        return None

    async def _follow(self, path, pid):
        stream, writer = await asyncio.open_unix_connection(path, limit=MAX_LINE)
        try:
            sock = writer.get_extra_info("socket")
            peer, _, _ = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                             struct.calcsize("3i")))
            if peer != pid:
                raise FeedError(f"its socket is served by pid {peer}, not the collector's {pid}")
            identity, since = _hello(await stream.readline(), self.path)
            with self.lock:
                self.datasets, self.bytes = {}, 0
                self.since, self.identity, self.following = since, identity, True
            self._say(f"live columns from the seconds the collector (pid {pid}) stores, from "
                      f"{time.strftime('%H:%M:%S', time.localtime(since))} {zone(since)} on", again=True)
            while True:
                line = await stream.readline()
                if not line:
                    raise FeedError("the collector closed it")
                if line == b'{"type":"committed"}\n':
                    if not self.following:
                        raise FeedError(self.broken)
                    self.on_commit()
                    continue
                ds, t, seconds, cause, kind, raw = _second(line)
                with self.lock:
                    self._hold(ds, t, seconds, cause, kind, raw)
        finally:
            writer.close()

    def _hold(self, ds, t, seconds, cause, kind, raw):
        """Add one pushed record (under the lock), then give up what KEEP and MAX_BYTES do not keep."""
        held = self.datasets.get(ds)
        if held is None:
            held = self.datasets[ds] = _Dataset(self.since)
        self.bytes += held.add(t, seconds, cause, kind, raw)
        while held.times and held.times[0] < held.times[-1] - KEEP:
            self.bytes -= held.drop_oldest()
        while self.bytes > MAX_BYTES:
            largest = max(self.datasets.values(), key=lambda d: d.bytes)
            if not largest.times:
                break
            self.bytes -= largest.drop_oldest()

    def _unfollow(self, path, why):
        """Back to the archive; why the feed at path ended (None: the server stops) said once a
        subscription, or once for a feed never followed."""
        with self.lock:
            was = self.identity is not None
            self.following, self.identity, self.datasets, self.bytes = False, None, {}, 0
        if why and was:
            self._say(f"the collector's live feed ended ({why}); live columns read from the archive", again=True)
        elif why:
            self._say(f"the collector's live feed ({path}): {why}; live columns read from the archive")

    def _say(self, msg, again=False):
        """One line on stderr; a message not marked `again` is said once."""
        if again or msg not in self.said:
            self.said.add(msg)
            self.log(msg)


class LiveReader:
    """The archive reader of the live columns (web/views.py columns()): a dataset's seconds
    from the feed where it holds all of the range, else from the archive. Everything else
    is the archive's."""

    def __init__(self, archive, feed: LiveFeed, identity):
        self.archive, self.feed, self.identity = archive, feed, identity

    def read(self, info, start, end, resolution=None):
        answer = self.feed.read(info, start, end, resolution, self.identity)
        return answer if answer is not None else self.archive.read(info, start, end, resolution)

    def __getattr__(self, name):
        return getattr(self.archive, name)


def _hello(line: bytes, path: str) -> tuple:
    """((device, inode), since) of the feed's first line, which must name the file at path."""
    msg = _header(line.rstrip(b"\n"))
    if msg.get("type") != "hello" or msg.get("version") != VERSION:
        raise FeedError(f"not a version {VERSION} hello")
    dev, ino, since = msg.get("device"), msg.get("inode"), msg.get("since")
    if not all(_whole(v) for v in (dev, ino)):
        raise FeedError("its collector cannot write the archive now")
    _time(since)
    st = os.stat(path)
    if (dev, ino) != (st.st_dev, st.st_ino):
        raise FeedError("its collector writes another file now")
    return (dev, ino), since


def _second(line: bytes) -> tuple:
    """(dataset, t, seconds, cause, kind, daemon line) of a `second` line, every field checked."""
    header, tab, raw = line.partition(b"\t")
    if not tab or len(header) > MAX_HEADER:
        raise FeedError("a line is neither a second nor a commit")
    msg = _header(header)
    ds, t, seconds, cause, kind = (msg.get(k) for k in ("id", "t", "seconds", "cause", "kind"))
    if msg.get("type") != "second" or not _whole(ds) or not _whole(seconds) or not 1 <= seconds < 1 << 31:
        raise FeedError("a second's header is malformed")
    _time(t)
    if kind not in codec.KINDS or not isinstance(cause, str) or len(cause) > 32:
        raise FeedError("a second's kind or cause is malformed")
    raw = raw.rstrip(b"\n")
    if not raw:
        raise FeedError("a second without its record")
    return ds, t, seconds, cause, kind, raw


def _header(text: bytes) -> dict:
    try:
        msg = json.loads(text)
    except (ValueError, RecursionError):
        raise FeedError("a line is not JSON") from None
    if not isinstance(msg, dict):
        raise FeedError("a line is not a JSON object")
    return msg


def _time(t):
    try:
        check_time(t)
    except BadRecord as e:
        raise FeedError(str(e)) from None


def _whole(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 63
