"""The collector's live feed on its own (collect/livefeed.py, real Unix sockets): a bounded
number of subscribers, a slow one dropped while the others get every line, one that speaks
dropped; strata web's side (web/livefeed.py): every field of the feed's lines checked, and
the seconds it holds answer a query as the archive answers it, outage spans and a second
stored twice included; a real `strata web` following a collector that is killed and
restarted. With the real daemon, engine and load: tests/test_web_live.py."""
import json
import os
import selectors
import socket
import stat
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from datasets_util import STRATA
from strata.collect.livefeed import MAX_BACKLOG, MAX_SUBSCRIBERS, LiveFeed as CollectorFeed
from strata.datasets.archive import Archive
from strata.lab.process import stop
from strata.web import livefeed, views
from web_util import http, sse_columns, sse_stream, stderr_of, web_server

REPO = Path(__file__).resolve().parent.parent

T0 = 1_700_000_000


def pump(sel, rounds=5):
    """The collector's select loop, as collect/collector.py runs it, for a few rounds."""
    for _ in range(rounds):
        for key, events in sel.select(0.02):
            key.data.ready(key, events)


def drain(sock) -> bytes:
    out = bytearray()
    while True:
        try:
            chunk = sock.recv(1 << 20)
        except BlockingIOError:
            return out
        if not chunk:
            return out
        out += chunk


def test_subscribers_are_bounded_and_a_slow_one_never_blocks_the_collector(tmp_path):
    archive = tmp_path / "a.db"
    archive.write_bytes(b"")
    os.chmod(archive, 0o640)
    feed = CollectorFeed(str(tmp_path / "feed.sock"), str(archive), os.stat(archive).st_mode)
    assert stat.S_IMODE(os.stat(feed.path).st_mode) == 0o640          # no wider than the archive
    sel = selectors.DefaultSelector()
    feed.attach(sel, lambda: ((7, 8), T0))
    clients = []
    for _ in range(MAX_SUBSCRIBERS + 1):
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect(feed.path)
        clients.append(c)
        pump(sel, 2)
    assert len(feed.subscribers) == MAX_SUBSCRIBERS
    for c in clients:
        c.setblocking(False)
    hellos = [drain(c) for c in clients]
    assert hellos[-1] == b""                                           # one too many: closed at once
    hello = json.loads(hellos[0])
    assert (hello["type"], hello["device"], hello["inode"], hello["since"]) == ("hello", 7, 8, T0)
    clients[1].send(b"hi")                                             # a subscriber says nothing
    pump(sel)
    assert len(feed.subscribers) == MAX_SUBSCRIBERS - 1

    raw = json.dumps({"v": 1, "type": "data", "data": {"": "x" * (1 << 20)}})
    reader = feed.subscribers[next(iter(feed.subscribers))]             # clients[0]'s
    got, sent = bytearray(), 0
    while len(feed.subscribers) > 1:                                   # the others never read
        feed.push([(3, T0 + sent, 1, "stall", "counter", raw)])        # returns at once: never waits
        sent += 1
        while reader.size:
            pump(sel, 1)
            got += drain(clients[0])
        assert sent < 2 * MAX_BACKLOG >> 20
    assert sent > MAX_BACKLOG >> 20 and reader in feed.subscribers.values()
    got += drain(clients[0])
    lines = got.split(b"\n")
    seconds = [json.loads(ln.partition(b"\t")[0])["t"] for ln in lines if ln.startswith(b'{"type":"second"')]
    assert seconds == [T0 + i for i in range(sent)]                    # the reader got every second, in order
    assert lines.count(b'{"type":"committed"}') == sent
    feed.close()
    assert not os.path.exists(feed.path)


GOOD = b'{"type":"second","id":3,"t":1700000000,"seconds":1,"cause":"stall","kind":"counter"}\t{"data":{}}\n'


@pytest.mark.parametrize("line", [
    b'{"type":"second","id":3,"t":1700000000,"seconds":1,"cause":"stall","kind":"counter"}\n',   # no record
    b'{"type":"second","id":-1,"t":1700000000,"seconds":1,"cause":"stall","kind":"counter"}\t{}\n',
    b'{"type":"second","id":3,"t":true,"seconds":1,"cause":"stall","kind":"counter"}\t{}\n',
    b'{"type":"second","id":3,"t":1700000000,"seconds":0,"cause":"stall","kind":"counter"}\t{}\n',
    b'{"type":"second","id":3,"t":1700000000,"seconds":1,"cause":"stall","kind":"table"}\t{}\n',
    b'{"type":"second","id":3,"t":1700000000,"seconds":1,"cause":7,"kind":"counter"}\t{}\n',
    b'{"type":"hello","id":3}\t{}\n',
    b'[' * 100_000 + b'\t{}\n',                                       # deep: refused by its size
    b'{"type":"second",' + b' ' * 600 + b'"id":3}\t{}\n',
    b'\xff\xfe\t{}\n',
])
def test_every_field_of_a_pushed_second_is_checked(line):
    assert livefeed._second(GOOD)[:5] == (3, T0, 1, "stall", "counter")
    with pytest.raises(livefeed.FeedError):
        livefeed._second(line)


def test_a_hello_must_name_this_file(tmp_path):
    path = tmp_path / "a.db"
    path.write_bytes(b"")
    st = os.stat(path)
    hello = {"type": "hello", "version": 1, "device": st.st_dev, "inode": st.st_ino, "since": T0}
    assert livefeed._hello(json.dumps(hello).encode() + b"\n", str(path)) == ((st.st_dev, st.st_ino), T0)
    for wrong in ({"inode": st.st_ino + 1}, {"device": None}, {"version": 2}, {"since": -1}, {"type": "second"}):
        with pytest.raises(livefeed.FeedError):
            livefeed._hello(json.dumps({**hello, **wrong}).encode(), str(path))


def test_held_seconds_answer_as_the_archive_does(tmp_path):
    """The same records stored by the archive's ingest and held by the web's feed: every query
    of the held range, at one and at five seconds a column, is the archive's, with an outage's
    record spread over its seconds and a second that came twice summed."""
    rng = np.random.default_rng(3)
    heat = [{f"10.0.0.{k}": {str(int(b)): int(rng.integers(1, 9)) for b in rng.integers(200, 320, 6)}
             for k in range(1, 1 + int(rng.integers(1, 5)))} for _ in range(40)]
    counts = [{op: int(rng.integers(1, 100)) for op in ("read", "write")[:1 + i % 2]} for i in range(40)]
    # (start, seconds, cause): a stall spanning 3 s at +10, a second that came twice at +20
    placed = [(T0 + i, 1, "stall") for i in range(10)] + [(T0 + 10, 3, "stall")] + \
        [(T0 + i, 1, "stall") for i in range(13, 21)] + [(T0 + 20, 1, "stall")] + \
        [(T0 + i, 1, "stall") for i in range(21, 30)]
    with Archive.open(str(tmp_path / "a.db"), readonly=False) as a:
        infos = [a.create("nfs.latency[client]", now=T0 - 10), a.create("nfs.ops[op]", now=T0 - 10)]
        ing = a.ingestor()
        with ing.transaction():
            for n, (t, k, cause) in enumerate(placed):
                for info, data in zip(infos, (heat[n], counts[n])):
                    ing.add(info.id, t, info.kind, data, k, cause)
        feed = livefeed.LiveFeed(a.path, on_commit=lambda: None, log=print)
        feed.since, feed.identity, feed.following = T0, a.identity(), True
        for n, (t, k, cause) in enumerate(placed):
            for info, data in zip(infos, (heat[n], counts[n])):
                feed._hold(info.id, t, k, cause, info.kind, json.dumps({"t": t, "data": data}).encode())
        for info in a.datasets():
            for start, end, step in [(T0, T0 + 30, None), (T0 + 9, T0 + 12, None), (T0 + 11, T0 + 25, None),
                                     (T0, T0 + 30, 5), (T0 + 20, T0 + 21, None)]:
                mine = feed.read(info, start, end, step, a.identity())
                theirs = a.read(info, start, end, step)
                assert mine is not None, (info.name, start, end)
                for field in ("times", "keys", "buckets", "counts", "values", "present", "collected", "spans"):
                    x, y = getattr(mine, field), getattr(theirs, field)
                    assert (x == y) if isinstance(x, list) else np.array_equal(x, y, equal_nan=True), \
                        (info.name, start, end, step, field, x, y)
            assert feed.read(info, T0 - 5, T0 + 5, None, a.identity()) is None       # before it followed
            assert feed.read(info, T0, T0 + 5, None, (0, 0)) is None                 # another file


def test_web_follows_a_collector_that_restarts_and_reads_the_archive_without_one(tmp_path):
    """A real `strata collect` (its daemon bench/replaydaemon.py: no BPF needed to restart a
    supervisor) and a real `strata web`: killed with -9, the collector's feed is given up and
    the live stream reads the archive (its columns the archive's); restarted, it is followed
    again."""
    archive = str(tmp_path / "a.db")
    with Archive.open(archive, readonly=False) as a:
        a.create("nfs.ops[client]")
    pool = tmp_path / "replay.json"
    records = [{"nfs.ops[client]": {"10.0.0.1": n, "10.0.0.2": 2 * n}} for n in range(1, 8)]
    pool.write_text(json.dumps({"kinds": {"nfs.ops[client]": "counter"}, "pool": records}))
    env = {**{k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}, "STRATA_REPLAY": str(pool)}
    command = [STRATA, "collect", "--archive", archive, "--collector", str(REPO / "bench" / "replaydaemon.py")]
    collect = subprocess.Popen(command, stderr=subprocess.DEVNULL, env=env)
    try:
        with web_server(archive) as base:
            wait_for(lambda: f"collector (pid {collect.pid}) stores" in stderr_of(base), base)
            wait_for(lambda: len(stored_seconds(archive)) >= 3, base)
            collect.kill()
            collect.wait()
            said = wait_for(lambda: "live feed ended (the collector closed it)" in stderr_of(base), base)
            assert "live columns read from the archive" in said
            streamed_as_stored(base, archive)             # the archive's newest seconds, no collector
            collect = subprocess.Popen(command, stderr=subprocess.DEVNULL, env=env)
            wait_for(lambda: f"collector (pid {collect.pid}) stores" in stderr_of(base), base)
    finally:
        stop(collect)


def stored_seconds(archive) -> list:
    with Archive.open(archive) as a:
        return [t for (t,) in a.conn.execute("SELECT t FROM records WHERE step = 1")]


def wait_for(predicate, base, seconds=15) -> str:
    deadline = time.time() + seconds
    while not predicate():
        assert time.time() < deadline, stderr_of(base)
        time.sleep(0.1)
    return stderr_of(base)


def streamed_as_stored(base, archive):
    """The live stream of nfs.ops[client] over the last minute, from the archive's newest 3
    seconds on: the archive's columns."""
    status, view = http(base + "/api/view?name=nfs.ops%5Bclient%5D&last=60")
    assert status == 200, view
    newest = max(stored_seconds(archive))
    sock = sse_stream(base, f"/api/live?ids={view['live']['id']}&after={newest - 2}")
    cols = sse_columns(sock, 10, lambda c: len(c) >= 3)
    sock.close()
    ts = sorted(cols)
    with Archive.open(archive) as a:
        stored, _, _ = views.columns(a, views.ViewSpec.parse({"name": "nfs.ops[client]"}), view["live"], ts[0],
                                     ts[-1] + 1)
    assert ts == [newest - 2, newest - 1, newest] and [cols[t] for t in ts] == stored, (ts, cols, stored)
