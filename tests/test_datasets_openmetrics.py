"""`strata collect --metrics`: the datasets served as OpenMetrics.

The real collector with real BPF on a loop device is scraped over HTTP and the
exposition is parsed with prometheus_client's strict OpenMetrics parser; its
counts must equal the archive's. A real Prometheus (Debian's) scrapes it too,
answers PromQL from it, and `strata heatmap/breakdown --prometheus` read back
from it what the archive holds. The exposition's edge cases (bucket alignment across keys,
escaping, datasets that go away) are fed records directly."""
import gzip
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager

import numpy as np
import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from conftest import built
from datasets_util import STRATA, direct_writes, loop_device, strata
from strata.datasets import llhist
from strata.datasets.archive import Archive, DatasetInfo
from strata.prometheus.metrics_server import parse_address
from strata.prometheus.openmetrics import Exposition, exported_buckets, family_name
from strata.prometheus.reader import PrometheusReader, _bounds, _bucket_of, _gauges
from strata.prometheus.spread import spread
from test_datasets_collect import seconds, stop, wait_for

PROMETHEUS = "/usr/bin/prometheus"


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.headers["Content-Type"].startswith("application/openmetrics-text; version=1.0.0")
        return r.read().decode()


def samples(text):
    """{(sample name, frozenset(labels)): value} via the strict OpenMetrics parser."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def start_collect(archive, address="127.0.0.1:0", digits="2", *more):
    """`strata collect --metrics` (more: further options); returns (process, metrics URL)."""
    built("bin/strata-collect")
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    proc = subprocess.Popen([STRATA, "collect", "--archive", archive, "--metrics", address,
                             "--metrics-digits", digits, *more],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    for line in proc.stderr:
        if "serving OpenMetrics at " in line:
            return proc, line.split(" at ", 1)[1].strip()
    proc.wait()
    raise AssertionError(f"strata collect --metrics did not start (status {proc.returncode})")


@contextmanager
def serving(folder):
    """A collector serving metrics, with latency and ops datasets on an idle loop device;
    yields (archive, metrics URL, device name, latency dataset, ops dataset, write(n))."""
    with loop_device() as dev:
        archive = str(folder / "a.db")
        name = os.path.basename(dev)
        lat, ops = f"disk.latency[device={name}][op]", f"disk.ops[device={name}][op]"
        for ds in (lat, ops):
            assert strata("datasets", "create", ds, "--archive", archive).returncode == 0
        proc, url = start_collect(archive)
        sweep = 2 * int(open(f"/sys/block/{name}/queue/nr_requests").read())
        written = [0]

        def counted(op):
            key = frozenset({"dataset": ops, "device": name, "op": op}.items())
            return samples(scrape(url)).get(("strata_disk_ops_total", key), 0)

        def write(n):
            """n direct writes; returns the writes the exposition counts (and the disk layer
            timed) once writes + missed completions add up to every write made. A missed
            completion shows only when its request is issued again: while short, writes
            sweep twice through the device's request tags (at most 5 sweeps)."""
            direct_writes(dev, n)
            written[0] += n
            for tries in range(6):
                try:
                    wait_for(lambda: counted("write") + counted("missed") == written[0],
                             timeout=10 if tries == 5 else 3, what=f"{written[0]} writes in the exposition")
                    break
                except AssertionError:
                    if tries == 5:
                        raise
                    direct_writes(dev, sweep)
                    written[0] += sweep
            return counted("write")
        try:
            started = int(time.time())
            wait_for(lambda: seconds(archive, ops, started), what="the first archived second")
            yield archive, url, name, lat, ops, write
        finally:
            stop(proc)


@pytest.fixture()
def collector(tmp_path):
    with serving(tmp_path) as served:
        yield served


@pytest.fixture(scope="module")
def collecting(tmp_path_factory):
    """One collector for the tests that only read it, after 300 direct writes: (archive,
    metrics URL, device name, latency dataset, ops dataset, the writes it timed: 300 unless
    the kernel skipped a completion)."""
    with serving(tmp_path_factory.mktemp("collecting")) as served:
        yield served[:-1] + (served[-1](300),)


def test_scrape_matches_the_archive(collecting):
    archive, url, dev, lat, ops, timed = collecting
    time.sleep(1.5)   # nothing more happens on the device: archive and exposition settle
    text = scrape(url)
    got = samples(text)
    with Archive.open(archive) as a:
        now = int(time.time())
        q = a.query(lat, now - 60, now + 2)
    write = q.counts[q.keys.index("write")].sum(axis=0)          # per present bucket
    labels = {"dataset": lat, "device": dev, "op": "write"}
    assert got[("strata_disk_latency_seconds_bucket", frozenset({**labels, "le": "+Inf"}.items()))] \
        == write.sum() == timed
    buckets = {float(dict(k)["le"]): v for (n, k), v in got.items()
               if n == "strata_disk_latency_seconds_bucket" and dict(k)["op"] == "write"}
    assert buckets[float("inf")] == timed
    for b, cumulative in zip(q.buckets, np.cumsum(write)):       # exact: le = upper(b) - 1 ns
        le = (llhist.upper(int(b)) - 1) / 1e9
        assert buckets[le] == cumulative, (b, le)
    assert ("strata_disk_latency_seconds_created", frozenset(labels.items())) in got
    assert "# UNIT strata_disk_latency_seconds seconds" in text


def test_gzip_when_asked(collecting):
    url = collecting[1]
    plain = scrape(url)
    request = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(request, timeout=10) as r:
        assert r.headers["Content-Encoding"] == "gzip"
        assert gzip.decompress(r.read()).decode() == plain


def test_other_paths_are_not_found(collecting):
    url = collecting[1]
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url.replace("/metrics", "/"), timeout=10)
    assert e.value.code == 404


needs_prometheus = pytest.mark.skipif(not os.path.exists(PROMETHEUS),
                                      reason="Debian's prometheus is not installed (make deps)")


@contextmanager
def running_prometheus(targets, tmp_path, features=(), job=""):
    """A real Prometheus scraping the metrics URLs every second, with the given feature flags
    and further job settings (YAML lines of the job, e.g. TLS and basic auth);
    yields (its URL, ask), where ask(promql) -> {labels: value, or a native histogram's JSON}
    (None until it answers)."""
    tmp_path = tmp_path / f"prometheus-{_free_port()}"
    tmp_path.mkdir()
    config = tmp_path / "prometheus.yml"
    listed = ", ".join(f"'{urllib.parse.urlsplit(u).netloc}'" for u in targets)
    config.write_text("global: {scrape_interval: 1s, scrape_timeout: 1s}\n"
                      "scrape_configs:\n  - job_name: strata\n"
                      f"    static_configs: [{{targets: [{listed}]}}]\n" + job)
    web = "127.0.0.1:" + str(_free_port())
    prom = subprocess.Popen([PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                             f"--web.listen-address={web}", *(f"--enable-feature={f}" for f in features)],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)

    def ask(promql):
        q = urllib.parse.urlencode({"query": promql})
        try:
            with urllib.request.urlopen(f"http://{web}/api/v1/query?{q}", timeout=5) as r:
                result = json.load(r)["data"]["result"]
        except (urllib.error.URLError, ConnectionError, TimeoutError):    # not up yet, or busy: ask again
            return None
        return {tuple(sorted(s["metric"].items())): float(s["value"][1]) if "value" in s else s["histogram"][1]
                for s in result}

    try:
        wait_for(lambda: list((ask('up{job="strata"}') or {}).values()) == [1.0] * len(targets), timeout=30,
                 what="prometheus to scrape strata")
        yield f"http://{web}", ask
    finally:
        prom.terminate()
        prom.wait(timeout=10)


def settled(ask, promql, value):
    """Waits until Prometheus answers promql with [value], then for one more scrape, so a
    sample of the settled counts lies before the returned second (the tests' range end)."""
    wait_for(lambda: list((ask(promql) or {}).values()) == [float(value)], timeout=30,
             what=f"prometheus to answer {value} to {promql}")
    time.sleep(1.5)
    return int(time.time())


@pytest.fixture(scope="module")
def scraped(tmp_path_factory):
    """A collector (serving()'s tuple) and a real Prometheus scraping it every second from
    before 300 writes until after them, for the tests that only read them; yields (the
    collector's tuple, (Prometheus' URL, ask, the writes timed: 300 unless a completion was
    missed))."""
    folder = tmp_path_factory.mktemp("scraped")
    with serving(folder) as collector:
        archive, url, dev, lat, ops, write = collector
        with running_prometheus([url], folder) as (web, ask):
            timed = write(300)
            writes = f'strata_disk_ops_total{{dataset="{ops}",op="write"}}'
            settled(ask, writes, timed)
            yield collector, (web, ask, timed)


@needs_prometheus
def test_real_prometheus_scrapes_and_answers(scraped):
    (archive, url, dev, lat, ops, _), (web, ask, timed) = scraped
    count = ask(f'sum(strata_disk_latency_seconds_bucket{{dataset="{lat}",op="write",le="+Inf"}})')
    assert list(count.values()) == [float(timed)]
    # PromQL's 100th percentile is the le of the first bucket holding all the timed writes
    top = ask('histogram_quantile(1, sum by (le) (strata_disk_latency_seconds_bucket{op="write"}))')
    buckets = ask(f'strata_disk_latency_seconds_bucket{{dataset="{lat}",op="write"}}')
    full = min(float(dict(k)["le"]) for k, v in buckets.items() if v == timed)
    assert list(top.values()) == [pytest.approx(full)]
    assert list(ask('up{job="strata"}').values()) == [1.0]


@needs_prometheus
def test_heatmap_and_breakdown_read_prometheus_like_the_archive(scraped):
    (archive, url, dev, lat, ops, _), (web, ask, timed) = scraped
    end = int(time.time())
    start = end - 60
    with Archive.open(archive) as a, PrometheusReader(web) as p:
        assert {d.name for d in p.datasets()} == {lat, ops}
        mine, theirs = a.query(lat, start, end, 10), p.query(lat, start, end, 10)
        assert theirs.keys == mine.keys == ["write"] and list(theirs.buckets) == list(mine.buckets)
        assert (theirs.counts.sum(axis=1) == mine.counts.sum(axis=1)).all()   # every bucket, exactly
        assert theirs.counts.sum() == timed
    window = ["--since", str(start), "--until", str(end)]
    from_archive = strata("breakdown", ops, "--json", *window, "--archive", archive)
    from_prometheus = strata("breakdown", ops, "--json", *window, "--prometheus", web)
    assert from_prometheus.returncode == 0, from_prometheus.stderr
    # per-key events over the range agree; per-column peaks may not (scrapes and the archive's
    # seconds need not split a burst at the same instant). The archive's rate is per second it
    # collected; Prometheus does not say which seconds were collected: per second of the range
    tables = [[(r["key"], r["events"], r["share"]) for r in json.loads(out.stdout)["table"]]
              for out in (from_archive, from_prometheus)]
    assert tables[0] == tables[1] and tables[0][0][:2] == ("write", timed)
    with Archive.open(archive) as a:
        collected = int(a.query(ops, start, end).collected.sum())
    rates = [json.loads(out.stdout)["table"][0]["rate"] for out in (from_archive, from_prometheus)]
    assert rates == [pytest.approx(timed / collected), pytest.approx(timed / (end - start))]
    shown = strata("heatmap", lat, *window, "--prometheus", web, "--color", "none", env={"COLUMNS": "100"})
    assert shown.returncode == 0 and str(timed) in shown.stdout, shown.stderr
    # drill-down by latency range: the same per-key events from both, as counted from the buckets
    write = mine.counts[0].sum(axis=0)
    middle = int(mine.buckets[len(mine.buckets) // 2])
    for lo in (llhist.lower(middle), llhist.lower(middle) + 1):         # an edge; a value inside a bucket
        drilled = [json.loads(strata("breakdown", lat, "--range", f"{lo}..", "--json", *window, *where).stdout)
                   for where in (["--archive", archive], ["--prometheus", web])]
        expected = int(write[mine.buckets >= middle].sum())
        assert 0 < expected and [d["table"][0]["events"] for d in drilled] == [expected, expected]
        assert [d["range"]["from"] for d in drilled] == [llhist.lower(middle)] * 2


@needs_prometheus
def test_two_collectors_add_up(tmp_path):
    """Two collectors (two archives, as on two servers) on one device, one Prometheus: the
    reader adds their series into one fleet-wide heat map."""
    with loop_device() as dev:
        name = os.path.basename(dev)
        lat = f"disk.latency[device={name}][op]"
        archives, procs = [str(tmp_path / "a.db"), str(tmp_path / "b.db")], []
        try:
            for a in archives:
                assert strata("datasets", "create", lat, "--archive", a).returncode == 0
                procs.append(start_collect(a))
            started = int(time.time())
            for a in archives:
                wait_for(lambda: seconds(a, lat, started), what="the first archived seconds")
            with running_prometheus([url for _, url in procs], tmp_path) as (web, ask):
                direct_writes(dev, 200)
                total = f'sum(strata_disk_latency_seconds_bucket{{dataset="{lat}",op="write",le="+Inf"}})'
                end = settled(ask, total, 400)
                expected = {}                 # bucket -> writes, both archives together
                for path in archives:         # (each collector times the writes itself)
                    with Archive.open(path) as a:
                        q = a.query(lat, end - 60, end, 10)
                    for b, c in zip(q.buckets, q.counts[0].sum(axis=0)):
                        expected[int(b)] = expected.get(int(b), 0) + int(c)
                with PrometheusReader(web) as p:
                    fleet = p.query(lat, end - 60, end, 10)
                assert fleet.keys == ["write"] and sum(expected.values()) == 400
                assert dict(zip(fleet.buckets.tolist(), fleet.counts[0].sum(axis=0).tolist())) == expected
        finally:
            for proc, _ in procs:
                stop(proc)


@needs_prometheus
def test_one_digit_export_reads_back_per_leading_digit(tmp_path):
    """--metrics-digits 1 through a real Prometheus: per leading-digit span (1-2 us, 2-3 us,
    ...), the reader's counts are the archive's; inside a span they are spread evenly."""
    with loop_device() as dev:
        lat = f"disk.latency[device={os.path.basename(dev)}][op]"
        archive = str(tmp_path / "a.db")
        assert strata("datasets", "create", lat, "--archive", archive).returncode == 0
        proc, url = start_collect(archive, digits="1")
        try:
            started = int(time.time())
            wait_for(lambda: seconds(archive, lat, started), what="the first archived second")
            with running_prometheus([url], tmp_path) as (web, ask):
                direct_writes(dev, 300)
                total = f'sum(strata_disk_latency_seconds_bucket{{dataset="{lat}",le="+Inf",le_digits="1"}})'
                end = settled(ask, total, 300)
                with Archive.open(archive) as a, PrometheusReader(web) as p:
                    mine, theirs = a.query(lat, end - 60, end, 10), p.query(lat, end - 60, end, 10)
        finally:
            stop(proc)

    def per_span(q):
        out = {}
        for b, c in zip(q.buckets.tolist(), q.counts[0].sum(axis=0).tolist()):
            span = int(exported_buckets(1)[b])
            out[span] = out.get(span, 0) + c
        return {k: v for k, v in out.items() if v}
    assert theirs.keys == ["write"] and per_span(theirs) == per_span(mine) and sum(per_span(mine).values()) == 300
    groups = {}
    for b, c in zip(theirs.buckets.tolist(), theirs.counts[0].sum(axis=0).tolist()):
        groups.setdefault(int(exported_buckets(1)[b]), []).append(c)
    columns = int((theirs.counts[0].sum(axis=1) > 0).sum())           # each splits its own counts
    assert all(max(g) - min(g) <= columns for g in groups.values()), groups   # even within a span


def test_prometheus_errors_are_one_line(tmp_path):
    closed = f"http://127.0.0.1:{_free_port()}"
    r = strata("heatmap", "disk.latency[device]", "--prometheus", closed)
    assert r.returncode == 1 and r.stderr.startswith("strata: cannot reach Prometheus at") \
        and r.stderr.count("\n") == 1, r.stderr
    r = strata("heatmap", "disk.latency[device]", "--prometheus", "prom:9090")
    assert r.returncode == 2 and "is not an http(s):// URL" in r.stderr
    r = strata("heatmap", "disk.latency[device]", "--prometheus", closed, "--archive", str(tmp_path / "a.db"))
    assert r.returncode == 2 and "not both" in r.stderr


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def info(ds_id, name, statistic, kind, unit, breakdown="", filters=None):
    return DatasetInfo(ds_id, name, statistic, breakdown, filters or {}, kind, unit, "", "active",
                       0, 0, None, {})


def test_buckets_align_across_keys_and_labels_are_escaped():
    e = Exposition()
    lat = info(1, "nfs.latency[op=read][client]", "nfs.latency", "heatmap", "ns", "client", {"op": "read"})
    e.add(lat, {"10.0.0.1": {"5": 2, "200": 1}}, 1_700_000_000)
    e.add(lat, {'we"ird\\key\n': {"300": 4}}, 1_700_000_001)
    e.add(lat, {"10.0.0.1": {"300": 1}}, 1_700_000_002)
    got = samples(e.text())
    les = {b: (llhist.upper(b) - 1) / 1e9 for b in (5, 200, 300)}

    def bucket(client, le):
        return got[("strata_nfs_latency_seconds_bucket", frozenset(
            {"dataset": lat.name, "op": "read", "client": client, "le": str(le)}.items()))]
    # every key lists every bucket any key used, cumulatively
    assert [bucket("10.0.0.1", les[b]) for b in (5, 200, 300)] == [2, 3, 4]
    assert [bucket('we"ird\\key\n', les[b]) for b in (5, 200, 300)] == [0, 0, 4]
    assert bucket("10.0.0.1", "+Inf") == 4


def test_one_digit_bounds_are_a_tenth_and_still_llhist():
    fine, coarse = Exposition(2), Exposition(1)
    lat = info(1, "nfs.latency[client]", "nfs.latency", "heatmap", "ns", "client")
    data = {"c": {str(llhist.bucket(v)): 1 for v in range(1000, 100000, 100)}}   # 1 us .. 100 us
    for e in (fine, coarse):
        e.add(lat, data, 1_700_000_000)
    got = [{float(dict(k)["le"]): v for (n, k), v in samples(e.text()).items() if n.endswith("_bucket")}
           for e in (fine, coarse)]
    assert len(got[0]) == 181 and len(got[1]) == 19             # 90 vs 9 bounds a decade, and +Inf
    assert sorted(got[1])[:3] == [1.999e-6, 2.999e-6, 3.999e-6]
    for le, cumulative in got[1].items():                          # the same cumulative counts
        assert got[0][le] == cumulative
    for le in got[1]:                                              # bounds the reader accepts
        if le != float("inf"):
            _bucket_of(repr(le), _bounds(1e9), lat.name)


def test_increases_spread_over_the_seconds_between_samples():
    """How the reader turns a cumulative series known at the column edges (the sample each edge
    found, and its time) into whole counts per column: a missed scrape's increase shared by the
    seconds it covers, scrape-time stamps, wide columns, restarts, and where a series begins."""
    nan = float("nan")
    unknown = np.full(6, nan)
    values = np.array([[0, 100, 100, 301, 400, 400.]])
    # stamped with the second each sample closes (strata's exposition); the scrape of 12 missed
    counts, covered = spread(values, np.array([10, 11, 11, 13, 14, 14.]), unknown, 10, 1, 5)
    assert counts.tolist() == [[100, 100, 101, 99, 0]] and covered.tolist() == [True] * 4 + [False]
    # stamped at the scrape: each holds the seconds ended by the whole second before it
    counts, covered = spread(values, np.array([9.6, 10.6, 10.6, 12.6, 13.6, 13.6]), unknown, 10, 1, 5)
    assert counts.tolist() == [[100, 101, 99, 0, 0]] and covered.tolist() == [True] * 3 + [False] * 2
    # columns wider than the scrapes, samples on their edges: exactly the differences
    counts, _ = spread(np.array([[0, 5, 9.], [1, 1, 4.]]), np.array([0, 10, 20.]), unknown[:3], 0, 10, 2)
    assert counts.tolist() == [[5, 4], [0, 3]]
    # the last column's seconds in a sample past the range's end: its share counted, the rest not
    counts, _ = spread(np.array([[0, 10, 10, 40.]]), np.array([10, 11, 11, 13.]), unknown[:4], 10, 1, 2)
    assert counts.tolist() == [[10, 15]]
    # 7 events between samples 3 s apart: 2, 2, 3 (largest remainders, ties to the later second)
    counts, _ = spread(np.array([[0, 0, 0, 7.]]), np.array([10, 10, 10, 13.]), unknown[:4], 10, 1, 3)
    assert counts.tolist() == [[2, 2, 3]]
    # a restart: the count begins again at the new created time when known, else at the sample before
    values, times = np.array([[50, 60, 60, 60, 6, 8.]]), np.array([10, 11, 11, 11, 14, 15.])
    restarted = spread(values, times, np.array([0, 0, 0, 0, 12, 12.]), 10, 1, 5)[0]
    assert restarted.tolist() == [[10, 0, 3, 3, 2]]
    assert spread(values, times, unknown, 10, 1, 5)[0].tolist() == [[10, 2, 2, 2, 2]]
    # a series' first sample: from its created time; created long before the lookback: not counted
    values, times = np.array([[nan, nan, 5, 6, 6.]]), np.array([nan, nan, 12, 13, 13.])
    for created, expected in ((10, [2, 3, 1, 0]), (11 - 301, [0, 0, 1, 0]), (nan, [0, 5, 1, 0])):
        counts, covered = spread(values, times, np.full(5, float(created)), 10, 1, 4)
        assert counts.tolist() == [expected]
        assert covered.tolist() == [created == 10, created != 11 - 301, True, False]


def test_gauges_add_up_over_collectors():
    nan = float("nan")
    series = [({"instance": "a"}, np.array([nan, 1.0, 2.0, nan])), ({"instance": "b"}, np.array([5.0, nan, 4.0, nan]))]
    values, known = _gauges(series, [0, 0], 1, 3, 1)
    assert values[0, :2].tolist() == [1.0, 6.0] and np.isnan(values[0, 2]) and known.tolist() == [True, True, False]
    assert _gauges([], [], 1, 3, 1)[0].shape == (1, 3)


def test_counters_gauges_and_datasets_that_go_away():
    e = Exposition()
    ops = info(1, "nfs.ops[op]", "nfs.ops", "counter", "operations", "op")
    size = info(2, "arc.size", "arc.size", "gauge", "bytes")
    hits = info(3, "arc.accesses[hit/miss]", "arc.accesses", "counter", "records", "hit/miss")
    e.add(ops, {"read": 3, "write": 1}, 1_700_000_000)
    e.add(ops, {"read": 4}, 1_700_000_001)
    e.add(size, {"": 1048576}, 1_700_000_000)
    e.add(size, {"": 2097152}, 1_700_000_001)
    e.add(hits, {"hit": 9}, 1_700_000_000)
    got = samples(e.text())
    assert got[("strata_nfs_ops_total", frozenset({"dataset": "nfs.ops[op]", "op": "read"}.items()))] == 7
    # counts are stamped with the end of the last second they hold, created with the first one's start
    stamps = {(s.name, s.labels.get("op")): (s.value, s.timestamp and float(s.timestamp))
              for f in text_string_to_metric_families(e.text()) for s in f.samples}
    assert stamps["strata_nfs_ops_total", "write"] == (1, 1_700_000_002)
    assert stamps["strata_nfs_ops_created", "read"] == (1_700_000_000, 1_700_000_002)
    assert stamps["strata_arc_size_bytes", None] == (2097152, None)     # a gauge: the scrape's time
    assert got[("strata_arc_size_bytes", frozenset({"dataset": "arc.size"}.items()))] == 2097152
    assert got[("strata_arc_accesses_total", frozenset({"dataset": hits.name, "hit_miss": "hit"}.items()))] == 9
    e.keep([2])
    text = e.text()
    assert "nfs_ops" not in text and "strata_arc_size_bytes" in text and text.endswith("# EOF\n")


def test_names_and_addresses():
    assert family_name("nfs.latency", "ns", "heatmap") == "strata_nfs_latency_seconds"
    assert family_name("disk.offset", "bytes", "heatmap") == "strata_disk_offset_bytes"
    assert family_name("nfs.ops", "operations", "counter") == "strata_nfs_ops"
    assert family_name("x.waits", "ns", "counter") == "strata_x_waits"      # counts carry no unit
    assert parse_address(":9464") == ("0.0.0.0", 9464)
    assert parse_address("127.0.0.1:0") == ("127.0.0.1", 0)
    assert parse_address("[::1]:9464") == ("::1", 9464)
    for bad in ("9464", "host:99999", "[::1]", "a:b"):
        with pytest.raises(ValueError):
            parse_address(bad)


def test_bad_address_is_one_line(tmp_path):
    r = strata("collect", "--archive", str(tmp_path / "a.db"), "--metrics", "nowhere")
    assert r.returncode == 2 and "bad metrics address 'nowhere'" in r.stderr and "Traceback" not in r.stderr
    built("bin/strata-collect")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        r = strata("collect", "--archive", str(tmp_path / "a.db"), "--metrics", f"127.0.0.1:{port}")
    assert r.returncode == 1 and r.stderr.strip().splitlines()[-1] == \
        f"strata: cannot serve metrics on 127.0.0.1:{port}: Address already in use", r.stderr
