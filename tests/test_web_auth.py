"""`strata web` checks passwords off its event loop: while 16 clients (16 loopback
addresses) flood wrong passwords, a signed-in user's requests keep answering at once; an
unknown user name takes as long as a known one; one address gets only a bounded number
of checks in flight (429 past it)."""
import asyncio
import base64
import http.client as httpclient
import statistics
import threading
import time

import bcrypt
import numpy as np
import pytest

from heatmaps_util import build_archive
from strata.web.auth import PER_ADDRESS, Authenticator
from web_util import web_server

COST = 10                       # the cost htpasswd -B uses: about 0.1 s a check here


def basic(user, password) -> dict:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    where = tmp_path_factory.mktemp("auth")
    path = build_archive(where / "a.db", {"nfs.ops[client]": lambda t: {"10.0.0.1": 40}}, seconds=10)
    config = where / "web.yml"
    config.write_text("basic_auth_users:\n  ann: " + bcrypt.hashpw(b"secret", bcrypt.gensalt(COST)).decode() + "\n")
    with web_server(path, "--web-config", str(config)) as base:
        yield base


def timed_get(conn, headers) -> tuple:
    start = time.perf_counter()
    conn.request("GET", "/api/datasets", headers=headers)
    r = conn.getresponse()
    r.read()
    return r.status, time.perf_counter() - start


def connect(base, source="127.0.0.1"):
    host, port = base.split("//")[1].split(":")
    return httpclient.HTTPConnection(host, int(port), timeout=30, source_address=(source, 0))


def test_unknown_users_take_as_long_as_known_ones(served):
    """Over HTTP, wall time: the fastest answer of each (noise only adds) within 30 % of the
    other (without the dummy hash an unknown name answers in under 1 ms against 60 ms and
    more: a ratio under 0.02). Other jobs on these 2 CPUs stretch single answers by
    50-500 ms, so the issue's 10 ms is held in CPU time below."""
    conn = connect(served)
    known, unknown = [], []
    for i in range(8):                     # alternating, so that a busy spell slows both alike
        for user, times in (("ann", known), (f"nobody{i}", unknown)):
            status, seconds = timed_get(conn, basic(user, f"wrong{i}"))
            assert status == 401
            times.append(seconds)
    assert min(known) > 0.005, known       # bcrypt ran (a cost-10 check is far slower than this)
    assert 0.7 < min(unknown) / min(known) < 1 / 0.7, (known, unknown)


def test_unknown_users_cost_the_same_cpu_within_10ms():
    """The server's check itself (Authenticator, real bcrypt at cost 10): the CPU time of a
    wrong password for a known and for an unknown name, medians of 6 each, within 10 ms (CPU
    time is what the check costs; a busy machine delays it but does not add to it)."""
    users = {"ann": bcrypt.hashpw(b"secret", bcrypt.gensalt(COST))}
    checker = Authenticator(users)

    async def cpu(user, password) -> float:
        start = time.process_time()
        assert await checker.user(basic(user, password)["Authorization"], "127.0.0.1") is None
        return time.process_time() - start
    try:
        known, unknown = [], []
        for i in range(6):
            known.append(asyncio.run(cpu("ann", f"wrong{i}")))
            unknown.append(asyncio.run(cpu(f"nobody{i}", f"wrong{i}")))
    finally:
        checker.close()
    assert statistics.median(known) > 0.02, known
    assert abs(statistics.median(known) - statistics.median(unknown)) < 0.010, (known, unknown)


def test_a_flood_of_wrong_passwords_leaves_signed_in_users_served(served):
    user = connect(served)
    assert timed_get(user, basic("ann", "secret"))[0] == 200          # signed in: remembered
    stop, flood = threading.Event(), []

    def flooder(i):
        conn, n = connect(served, f"127.0.0.{20 + i}"), 0
        while not stop.is_set():
            n += 1
            flood.append((time.perf_counter(), timed_get(conn, basic("ann", f"guess{i}-{n}"))[0]))
    threads = [threading.Thread(target=flooder, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    try:
        time.sleep(0.2)
        begun, answers = time.perf_counter(), []
        while time.perf_counter() - begun < 3.0:
            answers.append(timed_get(user, basic("ann", "secret")))
            time.sleep(0.05)
        ended = time.perf_counter()
        # one address past its bound: answered 429 at once, without a check
        burst, results = threading.Barrier(PER_ADDRESS + 4), []
        def burster(i):
            conn = connect(served, "127.0.0.99")
            burst.wait()
            results.append(timed_get(conn, basic("ann", f"burst{i}"))[0])
        bursters = [threading.Thread(target=burster, args=(i,)) for i in range(PER_ADDRESS + 4)]
        for t in bursters:
            t.start()
        for t in bursters:
            t.join()
    finally:
        stop.set()
        for t in threads:
            t.join()
    refused = [s for when, s in flood if begun <= when <= ended]
    assert refused and set(refused) == {401}, set(refused)         # checks went on all along
    assert {s for s, _ in answers} == {200}
    latencies = [seconds for _, seconds in answers]
    # the bound is the 100 ms for the median; each answer within 0.5 s leaves room
    # for a VM shared by other jobs (before, bcrypt on the event loop made these 1.5-2.7 s)
    assert statistics.median(latencies) < 0.100 and max(latencies) < 0.5, np.round(latencies, 3).tolist()
    assert results.count(429) >= 1 and 1 <= results.count(401) <= PER_ADDRESS, results
