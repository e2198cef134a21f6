"""The collector's live feed: each second it stores, pushed to the processes that subscribe
(`strata web` on the same archive: web/livefeed.py) as its transaction commits, so their
live views read the collector's in-memory second instead of polling the archive.

A Unix stream socket in the runtime folder, beside the status file that names it
(collect/status.py, `live`): kept off the archive's file system, as the status file is, so
it is there while the archive cannot be written. Its mode is the archive file's read and
write bits, no wider (connecting takes write permission: a reader of the archive without
it reads the archive). Lines, each ending in a newline:

    {"type": "hello", "version": 1, "archive": PATH, "device": D, "inode": I, "since": T}
    {"type": "second", "id": DS, "t": START, "seconds": N, "cause": CAUSE, "kind": KIND}<TAB>RECORD
    {"type": "committed"}

hello comes first: the archive's file (device, inode) and `since`, from which second on every
second stored reaches this subscriber (any stored before it did not). A `second` line is one
record as stored (datasets/ingest.py add(): dataset DS, the events of [START, START + N),
CAUSE of a record spanning more than one second), followed by a tab and the daemon's JSON
line that carried it, as the daemon wrote it (its "data" is what was stored); `committed`
ends each transaction's lines. JSON escapes a tab inside a string, so the first tab of a line
ends its header.

A subscriber is never waited for: what it has not read waits in a buffer of at most
MAX_BACKLOG bytes, past which it is dropped; at most MAX_SUBSCRIBERS at once (one more is
closed at once); a subscriber says nothing, and one that does is dropped. What the feed does
not carry, the archive replaced and made again, or an outage's held records stored as a
span, ends every subscription (reset()): subscribers read the archive and subscribe again.
"""
import json
import os
import selectors
import socket
from collections import deque

from .status import socket_path

MAX_SUBSCRIBERS = 8
MAX_BACKLOG = 32 << 20     # bytes a subscriber may leave unread before it is dropped
VERSION = 1


class _Subscriber:
    def __init__(self, sock):
        self.sock, self.writing = sock, False
        self.backlog, self.sent, self.size = deque(), 0, 0    # chunks to send, of the first sent, bytes left

    def add(self, data: bytes):
        self.backlog.append(data)
        self.size += len(data)


class LiveFeed:
    """The feed's socket and subscribers, served from the collector's select loop."""

    def __init__(self, path: str, archive_path: str, mode: int):
        self.path, self.archive = path, os.path.abspath(archive_path)
        self.sel, self.subscribers, self.where = None, {}, None
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            _unlink(path)                   # a collector killed -9 left it (the lock is ours now)
            old = os.umask(0o177)
            try:
                self.listener.bind(path)
            finally:
                os.umask(old)
            os.chmod(path, mode & 0o666)
            self.listener.listen(MAX_SUBSCRIBERS)
            self.listener.setblocking(False)
        except OSError:
            self.listener.close()
            raise

    @classmethod
    def open(cls, archive_path: str, log):
        """The feed of the archive at archive_path, or None (said once) when its socket cannot be
        made: collection goes on, and readers poll the archive."""
        path = socket_path(archive_path)
        try:
            mode = os.stat(archive_path).st_mode
        except OSError:
            mode = 0o600
        try:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            return cls(path, archive_path, mode)
        except OSError as e:
            log(f"{path}: cannot serve the live feed ({e.strerror}); `strata web` reads the archive instead")
            return None

    def attach(self, sel: selectors.BaseSelector, where):
        """Served from sel; where() -> ((device, inode) of the archive's file or None, the first
        second not yet stored: every one from it on is pushed), asked at each subscription."""
        self.sel, self.where = sel, where
        sel.register(self.listener, selectors.EVENT_READ, self)

    def reset(self):
        """The archive's file changed (made again) or what was stored skipped the feed: every
        subscriber reads the archive again and subscribes anew."""
        for sub in list(self.subscribers.values()):
            self._drop(sub)

    def ready(self, key, events):
        """A selector event on the listener or a subscriber."""
        if key.fileobj is self.listener:
            self._accept()
            return
        sub = self.subscribers.get(key.fd)
        if sub is None:
            return
        if events & selectors.EVENT_READ:
            try:
                said = sub.sock.recv(1)
            except BlockingIOError:
                said = None
            except OSError:
                said = b""
            if said is not None:             # gone (b""), or it spoke: either way, dropped
                self._drop(sub)
                return
        if events & selectors.EVENT_WRITE:
            self._send(sub)

    def push(self, records):
        """One committed transaction: records [(dataset, start, seconds, cause, kind, raw line)]."""
        if not self.subscribers or not records:
            return
        lines = [f'{{"type":"second","id":{ds},"t":{start},"seconds":{seconds},"cause":{json.dumps(cause)},'
                 f'"kind":"{kind}"}}\t{raw}\n' for ds, start, seconds, cause, kind, raw in records]
        lines.append('{"type":"committed"}\n')
        data = "".join(lines).encode()
        for sub in list(self.subscribers.values()):
            sub.add(data)
            self._send(sub)

    def close(self):
        for sub in list(self.subscribers.values()):
            self._drop(sub)
        if self.sel is not None:
            try:
                self.sel.unregister(self.listener)
            except (KeyError, ValueError):
                pass
        self.listener.close()
        _unlink(self.path)

    def _accept(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if len(self.subscribers) >= MAX_SUBSCRIBERS:
                sock.close()
                continue
            sock.setblocking(False)
            sub = self.subscribers[sock.fileno()] = _Subscriber(sock)
            self.sel.register(sock, selectors.EVENT_READ, self)
            identity, since = self.where()
            dev, ino = identity or (None, None)
            hello = {"type": "hello", "version": VERSION, "archive": self.archive, "device": dev,
                     "inode": ino, "since": since}
            sub.add((json.dumps(hello) + "\n").encode())
            self._send(sub)

    def _send(self, sub):
        """Write what the subscriber's socket takes now; the rest waits for it to be writable."""
        try:
            while sub.backlog:
                first = sub.backlog[0]
                n = sub.sock.send(memoryview(first)[sub.sent:])
                sub.sent += n
                sub.size -= n
                if sub.sent == len(first):
                    sub.backlog.popleft()
                    sub.sent = 0
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self._drop(sub)
            return
        if sub.size > MAX_BACKLOG:
            self._drop(sub)
            return
        want = bool(sub.backlog)
        if want != sub.writing:
            sub.writing = want
            self.sel.modify(sub.sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0), self)

    def _drop(self, sub):
        self.subscribers.pop(sub.sock.fileno(), None)
        try:
            self.sel.unregister(sub.sock)
        except (KeyError, ValueError):
            pass
        sub.sock.close()


def _unlink(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
