"""`strata web` checks passwords off its event loop: while 16 clients (16 loopback
addresses) flood wrong passwords, a signed-in user's requests keep answering at once; an
unknown user name takes as long as a known one; one address gets only a bounded number
of checks in flight (429 past it)."""
import asyncio
import base64
import http.client as httpclient
import json
import os
import statistics
import subprocess
import sys
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


# 16 clients (16 loopback addresses) sending wrong passwords until stdin closes, in a
# process of their own (the measuring thread shares no GIL with them); prints the
# (unix time, status) of every answer as JSON
FLOOD = r"""
import base64, http.client, json, sys, threading, time
host, port = sys.argv[1], int(sys.argv[2])
stop, answers = threading.Event(), []
def flooder(i):
    conn, n = http.client.HTTPConnection(host, port, timeout=30, source_address=(f"127.0.0.{20 + i}", 0)), 0
    while not stop.is_set():
        n += 1
        token = base64.b64encode(f"ann:guess{i}-{n}".encode()).decode()
        conn.request("GET", "/api/datasets", headers={"Authorization": "Basic " + token})
        r = conn.getresponse()
        r.read()
        answers.append((time.time(), r.status))
threads = [threading.Thread(target=flooder, args=(i,)) for i in range(16)]
for t in threads:
    t.start()
print("started", flush=True)
sys.stdin.read()
stop.set()
for t in threads:
    t.join()
print(json.dumps(answers))
"""


def waits(pid) -> dict:
    """{thread id: (seconds on a CPU, seconds runnable but waiting for one)} of a process's
    threads (the kernel's schedstat)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ran, waited, _ = (int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
        out[int(tid)] = (ran / 1e9, waited / 1e9)
    return out


def signed_in(conn, pid, seconds: float) -> list:
    """A signed-in user's requests, one each 50 ms for `seconds`: (status, seconds on the
    client, milliseconds the server says it took (Server-Timing), {thread: seconds the
    server's thread waited for a CPU meanwhile})."""
    out, begun = [], time.perf_counter()
    while time.perf_counter() - begun < seconds:
        before, start = waits(pid), time.perf_counter()
        conn.request("GET", "/api/datasets", headers=basic("ann", "secret"))
        r = conn.getresponse()
        r.read()
        took, after = time.perf_counter() - start, waits(pid)
        server = r.getheader("Server-Timing", "")
        out.append((r.status, took, float(server.split("dur=")[1]) if "dur=" in server else None,
                    {t: after[t][1] - before[t][1] for t in after if t in before}))
        time.sleep(0.05)
    return out


def test_a_flood_of_wrong_passwords_leaves_signed_in_users_served(served):
    """Every request of a signed-in user, from the flood's first second, is answered by the
    server within the issue's 100 ms of its own work: its Server-Timing (from the request
    reaching the application to its answer) less the time its threads were ready to run but
    other processes held both CPUs (the kernel's schedstat; the bcrypt thread's own waits
    left out, as they delay no answer). With bcrypt on the event loop these were 1.5-2.7 s of
    the server's own work. The raw times hold the median only: the user's median answer
    within 100 ms. On this 2-CPU machine at a load average of 10, single answers took 0.17-0.2
    s: one of them 196 ms in the server, whose threads waited 222 ms for a CPU meanwhile;
    another 0.5 ms in the server (the client waited)."""
    user = connect(served)
    assert timed_get(user, basic("ann", "secret"))[0] == 200          # signed in: remembered
    host, port = served.split("//")[1].split(":")
    ran = waits(served.pid)
    flood = subprocess.Popen([sys.executable, "-c", FLOOD, host, port], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert flood.stdout.readline().strip() == "started"
        begun = time.time()
        answers = signed_in(user, served.pid, 3.0)
        ended = time.time()
        # the bcrypt thread: the one that ran most during the flood
        checker = max(waits(served.pid).items(), key=lambda kv: kv[1][0] - ran.get(kv[0], (0, 0))[0])[0]
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
        flooded, _ = flood.communicate("", timeout=60)
    refused = [s for when, s in json.loads(flooded) if begun <= when <= ended]
    assert refused and set(refused) == {401}, set(refused)         # checks went on all along
    assert {s for s, _, _, _ in answers} == {200}
    own = [(ms, round(1000 * sum(w for t, w in waited.items() if t != checker), 1)) for _, _, ms, waited in answers]
    assert all(ms is not None and ms - waited < 100 for ms, waited in own), own
    client = [seconds for _, seconds, _, _ in answers]
    assert statistics.median(client) < 0.100, np.round(client, 3).tolist()
    assert results.count(429) >= 1 and 1 <= results.count(401) <= PER_ADDRESS, results
