"""Late and missed scrapes read back from a real Prometheus (`strata show --prometheus`).

A real collector counts steady direct writes on a loop device (real BPF) and serves
them; Debian's Prometheus scrapes it every second while the collector is stopped
(SIGSTOP) for 3 s, as a loaded machine stalls it, so scrapes time out; a
second Prometheus scrapes it every 3 s, columns narrower than its scrapes. Read
back in 1 s columns, each increase between two samples is spread over the seconds
it covers: no column is empty while the archive counts every second, each second
holds its interval's even share of the archive's counts (within one), exactly the
archive's where the second was scraped on time, at any column width, and the
totals are the archive's."""
import json
import os
import signal
import threading
import time
import urllib.parse
import urllib.request

import numpy as np

from datasets_util import direct_writes, loop_device, strata
from strata.datasets.archive import Archive
from strata.prometheus.reader import PrometheusReader
from test_datasets_collect import seconds, stop, wait_for
from test_datasets_openmetrics import needs_prometheus, running_prometheus, settled, start_collect


def sample_times(web, selector, end, span):
    """The distinct times of the raw samples Prometheus stored for selector over (end - span, end]."""
    q = urllib.parse.urlencode({"query": f"{selector}[{span}s]", "time": end})
    with urllib.request.urlopen(f"{web}/api/v1/query?{q}", timeout=10) as r:
        result = json.load(r)["data"]["result"]
    return sorted({int(float(t)) for series in result for t, _ in series["values"]})


def check_spread(mine, theirs, stamps, begin):
    """Per second from begin: between consecutive samples a < b, each second holds the even share
    of the archive's counts over [a, b) within one (so exactly them where b = a + 1)."""
    checked = 0
    for a, b in zip(stamps, stamps[1:]):
        if a < begin or b > begin + len(mine):
            continue
        share = mine[a - begin:b - begin].sum() / (b - a)
        got = theirs[a - begin:b - begin]
        assert (np.abs(got - share) < 1).all(), (a, b, mine[a - begin:b - begin], got)
        checked += b - a
    return checked


def writing(dev, stopped):
    """Direct writes, a few every 50 ms, until stopped is set."""
    while not stopped.is_set():
        direct_writes(dev, 8)
        time.sleep(0.05)


@needs_prometheus
def test_missed_scrapes_are_spread_over_their_seconds(tmp_path):
    with loop_device() as dev:
        name = os.path.basename(dev)
        lat, ops = f"disk.latency[device={name}][op]", f"disk.ops[device={name}][op]"
        archive = str(tmp_path / "a.db")
        for ds in (lat, ops):
            assert strata("datasets", "create", ds, "--archive", archive).returncode == 0
        proc, url = start_collect(archive)
        stopped = threading.Event()
        writer = threading.Thread(target=writing, args=(dev, stopped))
        try:
            started = int(time.time())
            wait_for(lambda: seconds(archive, ops, started), what="the first archived second")
            with running_prometheus([url], tmp_path) as (every, ask), \
                    running_prometheus([url], tmp_path, job="    scrape_interval: 3s\n") as (sparse, _):
                begin = int(time.time()) + 1
                time.sleep(1)
                writer.start()
                load = int(time.time()) + 1
                time.sleep(3.5)
                os.kill(proc.pid, signal.SIGSTOP)              # no scrape answered, no second served
                time.sleep(3)
                os.kill(proc.pid, signal.SIGCONT)
                time.sleep(2.5)
                stopped.set()
                writer.join()
                unload = int(time.time()) - 1
                time.sleep(1.5)                                # the last writes archived
                with Archive.open(archive) as a:
                    total = int(a.query(ops, started - 5, int(time.time()) + 2).values.sum())
                for web in (every, sparse):
                    wait_for(lambda web=web: PrometheusReader(web).query(ops, begin, int(time.time()) + 1).values.sum()
                             >= total, timeout=15, what=f"{web} to hold the {total} writes")
                end = settled(ask, f'sum(strata_disk_ops_total{{dataset="{ops}"}})', total)
                with Archive.open(archive) as a:
                    mine = a.query(ops, begin, end, 1).values.sum(axis=0)
                    mine_lat, mine_2 = a.query(lat, begin, end, 1), a.query(ops, begin, end, 2).values.sum(axis=0)
                read = {web: PrometheusReader(web).query(ops, begin, end, 1).values.sum(axis=0)
                        for web in (every, sparse)}
                stamps = {web: sample_times(web, f'strata_disk_ops_total{{dataset="{ops}"}}', end, end - begin + 5)
                          for web in (every, sparse)}
                theirs_lat = PrometheusReader(every).query(lat, begin, end, 1)
                theirs_2 = PrometheusReader(every).query(ops, begin, end, 2).values.sum(axis=0)
        finally:
            stopped.set()
            if writer.is_alive():
                writer.join()
            os.kill(proc.pid, signal.SIGCONT)
            stop(proc)

    loaded = slice(load - begin, unload - begin)
    counted = mine[loaded] > 0                          # the seconds the archive has writes in
    assert mine.sum() == total and counted.mean() > 0.8, mine
    for web in (every, sparse):
        gaps = np.diff(stamps[web])
        assert read[web].sum() == total, (web, read[web], mine)                 # totals exact
        assert (read[web][loaded][counted] > 0).all(), (web, read[web], mine)  # no empty column
        assert check_spread(mine, read[web], stamps[web], begin) >= (unload - load), (web, stamps[web])
        assert gaps.max() >= 2, (web, stamps[web])             # scrapes were missed: the test tested
    assert np.median(np.diff(stamps[sparse])) >= 3             # 3 s scrapes: their seconds spread
    # 2 s columns whose edges were both scraped on time are the archive's, exactly
    base = begin - begin % 2
    on_time = [k for k in range(len(mine_2)) if {base + 2 * k, base + 2 * k + 2} <= set(stamps[every])]
    assert [theirs_2[k] for k in on_time] == [mine_2[k] for k in on_time], (mine_2, theirs_2, stamps[every])
    assert any(mine_2[k] for k in on_time), (mine_2, stamps[every])
    # the heat map: per bucket the archive's totals, and each scraped second exactly the archive's
    def per_bucket(q):
        counts = q.counts.sum(axis=0)                                        # columns x buckets
        return {int(b): counts[:, j] for j, b in enumerate(q.buckets)}
    mine_b, theirs_b = per_bucket(mine_lat), per_bucket(theirs_lat)
    assert {b: int(c.sum()) for b, c in mine_b.items() if c.sum()} == \
        {b: int(c.sum()) for b, c in theirs_b.items() if c.sum()}
    scraped = [a - begin for a, b in zip(stamps[every], stamps[every][1:]) if b == a + 1 and begin <= a < end]
    for b, c in mine_b.items():
        assert (theirs_b[b][scraped] == c[scraped]).all(), b
    assert (sum(theirs_b.values())[loaded][counted] > 0).all()
