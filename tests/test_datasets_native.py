"""`strata collect --metrics` as native histograms: protobuf to scrapers that ask for it.

Debian's Prometheus (2.42, --enable-feature=native-histograms) scrapes an exposition
of 200 client keys x 3 heat-map datasets with a three-band latency mix (us, 100 us,
ms), beside a Prometheus without the feature scraping the same endpoint as text:
series stored are counted in both, and PromQL's histogram_quantile and
histogram_fraction are checked against strata's own from the same counts, within
the measured mapping error. These records are fed to the exposition directly (no
kernel makes 200 clients here); the real collector on a loop device is scraped by
the native Prometheus too, against its archive. The mapping, the Accept
negotiation and the bounded keys are checked on their own."""
import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import numpy as np
import pytest
from google.protobuf.internal.decoder import _DecodeVarint

from strata.datasets import llhist
from strata.prometheus import metrics_pb2
from strata.prometheus import native_buckets as native
from strata.datasets.archive import Archive
from strata.prometheus.metrics_server import PROTOBUF_CONTENT_TYPE, MetricsServer, preferred
from strata.prometheus.openmetrics import Exposition
from strata.prometheus.reader import PrometheusReader
from strata.prometheus.topkeys import OTHER, TopKeys
from strata.heatmaps.rebin import percentile_of
from test_datasets_openmetrics import (collector, info, needs_prometheus, running_prometheus,  # noqa: F401
                                       samples, scrape, start_collect)
from datasets_util import strata
from strata.lab.process import stop
from test_datasets_collect import wait_for
from web_util import http, sse_columns, sse_stream, web_server
from wire_util import WireEngine

PROMETHEUS_ACCEPT = ("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                     "encoding=delimited;q=0.8,application/openmetrics-text;version=1.0.0;q=0.7,"
                     "text/plain;version=0.0.4;q=0.6,*/*;q=0.5")
NATIVE = ["native-histograms"]
SLOW = "    scrape_interval: 5s\n    scrape_timeout: 5s\n"     # a classic scrape of 200 keys takes more than 1 s
KEYS, DATASETS = 200, ("nfs.latency[client]", "nfs.latency[op=read][client]", "nfs.latency[op=write][client]")


def scrape_protobuf(url) -> list:
    """GET url as Prometheus with native histograms does; the MetricFamily messages."""
    request = urllib.request.Request(url, headers={"Accept": PROMETHEUS_ACCEPT})
    with urllib.request.urlopen(request, timeout=10) as r:
        assert r.headers["Content-Type"] == PROTOBUF_CONTENT_TYPE
        body = r.read()
    out, pos = [], 0
    while pos < len(body):
        n, pos = _DecodeVarint(body, pos)
        mf = metrics_pb2.MetricFamily()
        mf.ParseFromString(body[pos:pos + n])
        out.append(mf)
        pos += n
    return out


def native_counts(h) -> dict:
    """{native bucket index: count} of a Histogram message (spans and deltas undone)."""
    out, index, count, deltas = {}, 0, 0, iter(h.positive_delta)
    for i, span in enumerate(h.positive_span):
        index += span.offset if i == 0 else span.offset
        for _ in range(span.length):
            count += next(deltas)
            out[index] = count
            index += 1
    return out


def three_bands(rng, n) -> dict:
    """n latencies (ns): ~60 % around 4 us, ~30 % around 150 us, ~10 % around 3 ms, as llhist counts."""
    share = rng.dirichlet([60, 30, 10])
    sizes = rng.multinomial(n, share)
    values = np.concatenate([rng.lognormal(np.log(mu), 0.3, k) for mu, k in zip((4e3, 1.5e5, 3e6), sizes)])
    b, c = np.unique(llhist.buckets_of(values.astype(np.uint64)), return_counts=True)
    return {str(int(k)): int(v) for k, v in zip(b, c)}


def as_array(counts: dict) -> np.ndarray:
    a = np.zeros(llhist.NBUCKETS, np.int64)
    for b, c in counts.items():
        a[int(b)] += c
    return a


def edge_share(counts: np.ndarray, schema: int) -> float:
    """The share of counts in the native bucket holding 1 ms, (2^((i-1)/2^s), 2^(i/2^s)] s with
    1 ms inside: histogram_fraction(0, 0.001) interpolates inside it, so of its counts it cannot tell
    how many lie below 1 ms. At the default schema that bucket is (0.977, 1.020] ms and holds the
    llhist bins [0.98, 1.0) ms, wholly below 1 ms in the archive; the 1 ms bin [1.0, 1.1) moves by its
    centre to the bucket above, wholly above 1 ms in both."""
    return counts[native.bins_to_native(schema, 1e9) == native.bucket_of(0.001, schema)].sum() / counts.sum()


def test_mapping_error_is_measured_and_the_default_keeps_llhist_own():
    errors = {s: native.mapping_error(s) for s in native.SCHEMAS}
    assert all(errors[s] > errors[s + 1] for s in range(-4, 8))          # finer is closer
    s = native.default_schema()
    assert errors[s] < native.LLHIST_ERROR <= errors[s - 1]                # coarsest under 10 %
    assert s == native.DEFAULT_SCHEMA and native.default_schema(1.0) == s   # seconds and bytes alike
    # never better than a native bucket alone, nor than half an llhist bin
    assert all(errors[s] >= 2 ** (2.0 ** -s) - 1 for s in native.SCHEMAS) and errors[8] > 0.045


def test_sparse_buckets_hold_exactly_the_bins_mapped_there():
    rng = np.random.default_rng(7)
    counts = as_array(three_bands(rng, 5000))
    counts[0] = 3                                                           # zero values
    for schema in (0, 3, 4, 8):
        zero, spans, deltas = native.sparse(counts, schema, 1e9)
        h = metrics_pb2.Histogram(positive_delta=deltas)
        h.positive_span.extend(metrics_pb2.BucketSpan(offset=o, length=n) for o, n in spans)
        expected = {}
        for b in np.flatnonzero(counts[1:]) + 1:
            k = int(native.bins_to_native(schema, 1e9)[b])
            expected[k] = expected.get(k, 0) + int(counts[b])
        assert zero == 3 and native_counts(h) == expected


def test_accept_negotiation():
    assert preferred(PROMETHEUS_ACCEPT)
    assert not preferred("application/openmetrics-text;version=1.0.0,text/plain;q=0.5")
    assert not preferred("")                                               # curl, a browser
    assert not preferred("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                         "encoding=text")                                    # not the delimited one
    assert not preferred("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                         "encoding=delimited;q=0.2,*/*;q=0.5")             # text preferred
    assert not preferred("application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;"
                         "encoding=delimited;q=zero")                        # unreadable q: ignored
    for hostile in (";;;,,,", "a" * 100000, "=;q=;=" * 1000, "\x00\xff;q=1e999"):
        assert preferred(hostile) is False


def test_top_keys_bound_series_and_other_only_grows():
    t = TopKeys(2, window=60)
    assert [t.route(k, 1, 0.0)[0] for k in "abc"] == ["a", "b", OTHER]    # first come while room
    assert t.route(OTHER, 5, 1.0)[0] == OTHER                               # never takes a slot
    for now in range(2, 60):
        t.route("c", 10, float(now))
        t.route("a", 1, float(now))
    key, dropped = t.route("c", 10, 60.0)                                  # a window ended: ranked
    assert (key, dropped) == ("c", ["b"]) and t.shown == {"a", "c"}
    assert t.route("b", 1, 61.0)[0] == OTHER
    assert TopKeys(0).route("anything", 1, 0.0) == ("anything", [])        # 0: every key

    e = Exposition(top=3)
    lat = info(1, "nfs.latency[client]", "nfs.latency", "heatmap", "ns", "client")
    for i in range(50):
        e.add(lat, {f"10.0.0.{i}": {"300": i + 1}}, 1_700_000_000 + i)
    got = {dict(k)["client"]: v for (n, k), v in samples(e.text()).items()
           if n == "strata_nfs_latency_seconds_bucket" and dict(k)["le"] == "+Inf"}
    assert got == {"10.0.0.0": 1, "10.0.0.1": 2, "10.0.0.2": 3, OTHER: sum(range(4, 51))}
    [mf] = scrape_from(e)
    assert sorted(m.histogram.sample_count for m in mf.metric) == sorted(got.values())
    assert {m.timestamp_ms for m in mf.metric} == {1_700_000_050_000}      # the last second's end


def scrape_from(e):
    server = MetricsServer(e, "127.0.0.1", 0)
    try:
        return scrape_protobuf(server.url)
    finally:
        server.close()


@pytest.fixture(scope="module")
def fleet():
    """Two exporters of 200 client keys x 3 heat-map datasets (three-band mixes) and a
    per-client counter: every key shown (top 250) and the default top 20. Yields (their
    URLs, {dataset: {client: llhist counts}})."""
    rng = np.random.default_rng(28)
    data = {name: {f"10.1.{i // 250}.{i % 250}": three_bands(rng, int(rng.integers(200, 3000)))
                   for i in range(KEYS)} for name in DATASETS}
    ops = info(9, "nfs.ops[client]", "nfs.ops", "counter", "operations", "client")
    servers, second = [], int(time.time()) - 1          # samples are stamped with the second's end
    try:
        for top in (250, 20):
            e = Exposition(top=top)
            for n, name in enumerate(DATASETS):
                filters = {"op": name.split("op=")[1][:-9]} if "op=" in name else {}
                e.add(info(n + 1, name, "nfs.latency", "heatmap", "ns", "client", filters), data[name], second)
            e.add(ops, {k: sum(v.values()) for k, v in data[DATASETS[0]].items()}, second)
            servers.append(MetricsServer(e, "127.0.0.1", 0))
        yield [s.url for s in servers], data
    finally:
        for s in servers:
            s.close()


def head_series(web) -> int:
    with urllib.request.urlopen(f"{web}/api/v1/status/tsdb", timeout=5) as r:
        return json.load(r)["data"]["headStats"]["numSeries"]


@needs_prometheus
def test_real_prometheus_stores_one_series_per_key_and_answers_quantiles(fleet, tmp_path):
    (every, top20), data = fleet
    with running_prometheus([every, top20], tmp_path, NATIVE) as (web, ask), \
            running_prometheus([every], tmp_path) as (classic_web, classic_ask):
        per_instance = 'count by (instance) ({__name__=~"strata_.+"})'
        wait_for(lambda: len(ask(per_instance) or {}) == 2 and classic_ask(per_instance), timeout=30,
                 what="both Prometheus to store the exporters' series")
        native_series = {dict(k)["instance"]: v for k, v in ask(per_instance).items()}
        classic_series = sum(classic_ask(per_instance).values())
        assert native_series[every.split("/")[2]] == len(DATASETS) * KEYS + KEYS      # 1 per key per dataset
        assert native_series[top20.split("/")[2]] == len(DATASETS) * 21 + 21           # top 20 + other
        assert classic_series > 50 * native_series[every.split("/")[2]]
        print(f"series stored: native {native_series}, classic {classic_series}; "
              f"head: native {head_series(web)}, classic {head_series(classic_web)}")
        bound = native.mapping_error(native.default_schema()) * 1.001
        for name in DATASETS:
            keys = sorted(data[name])[:4]
            for selector, counts in [(f'client="{k}"', as_array(data[name][k])) for k in keys] + \
                    [("", sum(as_array(v) for v in data[name].values()))]:
                where = f'dataset="{name}",instance="{every.split("/")[2]}"' + ("," + selector if selector else "")
                series = f"sum(strata_nfs_latency_seconds{{{where}}})"
                q = list(ask(f"histogram_quantile(0.99, {series})").values())
                mine = percentile_of(np.arange(llhist.NBUCKETS), counts, 99.0) / 1e9
                assert len(q) == 1 and abs(q[0] - mine) <= bound * mine, (name, selector, q, mine)
                share = counts[:llhist.bucket(10 ** 6)].sum() / counts.sum()     # 1 ms is a bin edge
                near = edge_share(counts, native.default_schema())
                f = list(ask(f"histogram_fraction(0, 0.001, {series})").values())
                assert len(f) == 1 and abs(f[0] - share) <= near + 1e-9, (name, selector, f, share, near)


@needs_prometheus
def test_real_collector_scraped_as_native(collector, tmp_path):
    """The real collector on a loop device: the protobuf scrape holds the archive's counts in
    the buckets the mapping says, and the native Prometheus one series for the writes."""
    archive, url, dev, lat, ops, write = collector
    with running_prometheus([url], tmp_path, NATIVE) as (web, ask):
        timed = write(300)
        selector = f'strata_disk_latency_seconds{{dataset="{lat}",op="write"}}'
        wait_for(lambda: [h["count"] for h in (ask(selector) or {}).values()] == [str(timed)], timeout=30,
                 what=f"prometheus to hold {timed} writes in one native series")
        families = {mf.name: mf for mf in scrape_protobuf(url)}
        with Archive.open(archive) as a:
            q = a.query(lat, int(time.time()) - 300, int(time.time()) + 2)
        counts = np.zeros(llhist.NBUCKETS, np.int64)
        counts[q.buckets] = q.counts[q.keys.index("write")].sum(axis=0)
        [m] = [m for m in families["strata_disk_latency_seconds"].metric
               if {(p.name, p.value) for p in m.label} >= {("op", "write")}]
        schema = m.histogram.schema
        expected = {}
        for b in np.flatnonzero(counts[1:]) + 1:
            k = int(native.bins_to_native(schema, 1e9)[b])
            expected[k] = expected.get(k, 0) + int(counts[b])
        assert schema == native.default_schema() and m.histogram.sample_count == counts.sum() == timed
        assert native_counts(m.histogram) == expected
        assert families["strata_disk_ops_total"].type == metrics_pb2.COUNTER
        p99 = list(ask(f"histogram_quantile(0.99, {selector})").values())
        mine = percentile_of(np.arange(llhist.NBUCKETS), counts, 99.0) / 1e9
        assert len(p99) == 1 and abs(p99[0] - mine) <= native.mapping_error(schema) * 1.001 * mine
        assert "le" not in str(ask(f'{{__name__=~"strata_disk_latency.*",dataset="{lat}"}}'))
        # read back by `strata heatmap --prometheus`: per native bucket, the archive's counts
        time.sleep(1.5)
        end = int(time.time())
        with Archive.open(archive) as a, PrometheusReader(web) as p:
            mine, theirs = a.query(lat, end - 60, end, 10), p.query(lat, end - 60, end, 10)

        def per_native(q):
            out = {}
            for b, c in zip(q.buckets.tolist(), q.counts[q.keys.index("write")].sum(axis=0).tolist()):
                k = int(native.bins_to_native(schema, 1e9)[b]) if b else None
                out[k] = out.get(k, 0) + c
            return {k: v for k, v in out.items() if v}
        assert theirs.keys == mine.keys and per_native(theirs) == per_native(mine)
        assert theirs.counts.sum() == mine.counts.sum() == timed
        shown = strata("heatmap", lat, "--since", str(end - 60), "--until", str(end), "--prometheus", web,
                       "--color", "none", env={"COLUMNS": "100"})
        assert shown.returncode == 0 and str(timed) in shown.stdout, shown.stderr
        # and by `strata web --prometheus`: the view, then new seconds live (the reader polled)
        with web_server(None, "--prometheus", web) as base:
            status, listed = http(base + "/api/datasets")
            assert status == 200 and lat in {d["name"] for d in listed["datasets"]} and not listed["writable"]
            status, v = http(base + "/api/view?" + urllib.parse.urlencode({"name": lat, "last": 60}))
            assert status == 200 and v["live"]["type"] == "heatmap", v
            sock = sse_stream(base, f"/api/live?ids={v['live']['id']}&after={v['live']['next'] - 1}")
            try:
                first = int(time.time())
                more = write(40) - timed
                got = sse_columns(sock, 15, lambda cols: sum(c["total"] for t, c in cols.items() if t >= first) >= more)
            finally:
                sock.close()
            assert sum(c["total"] for t, c in got.items() if t >= first) == more > 0, got
            status, answer = http(base + "/api/datasets", {"action": "suspend", "name": lat})
            assert status == 403 and "\n" not in answer["error"]                  # read-only
    assert scrape(url).endswith("# EOF\n")                                 # text still served


def test_native_answers_read_back_or_refused_in_one_line():
    """prometheus_native.parse on what a Prometheus (or something posing as one) answers:
    strata's buckets go back to the bins that moved into them, anything else is ArchiveError."""
    from strata.datasets.errors import ArchiveError
    from strata.prometheus.native_reader import bins_of, parse
    lo, hi = native.bucket_bounds(np.array([-317]), 4)
    good = [{"metric": {"client": "a"}, "histograms": [[100, {"count": "9", "buckets": [
        [3, "-1e-39", "1e-39", "1"], [0, str(float(lo[0])), str(float(hi[0])), "8"]]}]]}]
    [(labels, buckets)] = parse(good, 99, 1, 2, "x")
    assert labels == {"client": "a"} and buckets[None][1] == 1 and buckets[(4, -317)][1] == 8
    assert np.isnan(buckets[(4, -317)][0]) and (4, -317) in {(4, int(k)) for k in native.bins_to_native(4, 1e9)}
    assert [int(native.bins_to_native(4, 1e9)[b]) for b in bins_of((4, -317), 1e9)] == [-317] * len(bins_of((4, -317), 1e9))
    rng = np.random.default_rng(5)
    junk = [None, "x", -1, 1e309, [], {}, [1], "nan", "-inf", "1e400", [0, "2", "1", "3"], [0, "1", "1.5", "1"]]
    for _ in range(300):                                     # structure-aware junk: refused, never a traceback
        pick = lambda v, p: junk[rng.integers(len(junk))] if rng.random() < p else v   # noqa: E731
        bucket = pick([pick(v, 0.3) for v in [0, "1", "2", "3"]], 0.1)
        h = pick({"count": pick("3", 0.2), "buckets": pick([bucket], 0.1)}, 0.1)
        series = pick({"metric": pick({}, 0.1), "histograms": pick([[pick(100, 0.2), h]], 0.1)}, 0.1)
        try:
            parse([series], 99, 1, 2, "x")
        except ArchiveError as e:
            assert str(e).startswith("x: ") and "\n" not in str(e)


@needs_prometheus
@pytest.mark.skipif(not shutil.which("ip"), reason="--netns needs iproute2's ip")
def test_200_real_clients_one_native_series_each(tmp_path):
    """The real engine, 200 libnfs clients each from its own address (--netns), the real
    collector with 3 heat-map datasets by client: the native Prometheus stores one series
    per client and dataset, the classic one a series per bucket bound, both counted here;
    the native p99 and share under 1 ms agree with the archive's within the mapping error."""
    engine = WireEngine(tmp_path)
    archive = str(tmp_path / "a.db")
    names = ["nfs.latency[client]", "nfs.latency[op=read][client]", "nfs.size[client]"]
    for name in names:
        assert strata("datasets", "create", name, "--archive", archive).returncode == 0
    began = int(time.time()) - 2
    proc, url = start_collect(archive, "127.0.0.1:0", "2", "--engine-pid", str(engine.proc.pid),
                              "--metrics-top", "250")
    try:
        with running_prometheus([url], tmp_path, NATIVE) as (web, ask), \
                running_prometheus([url], tmp_path, job=SLOW) as (_, classic_ask):
            load = subprocess.run(engine.load_args("--profile", "randread", "--setup", "--netns", "--clients", KEYS,
                                                   "--threads", 1, "--duration", 3, "--working-set", "16m"),
                                  capture_output=True, text=True)
            assert load.returncode == 0, load.stderr
            per_dataset = 'count by (dataset) ({__name__=~"strata_nfs_.+"})'
            wait_for(lambda: (ask(per_dataset) or {}) == {(("dataset", n),): float(KEYS) for n in names},
                     timeout=30, what="a native series per client and dataset")
            time.sleep(2)                                       # the load's last seconds scraped
            classic_count = 'count({__name__=~"strata_nfs_.+", dataset=~".+client.+"})'
            wait_for(lambda: classic_ask(classic_count), timeout=30, what="the classic scrape")
            classic = classic_ask(classic_count).popitem()[1]
            took = [list(a("scrape_duration_seconds").values())[0] for a in (ask, classic_ask)]
            print(f"200 clients x 3 datasets: native {3 * KEYS} series, classic {classic:.0f}; "
                  f"scrape took {took[0]:.3f} s native, {took[1]:.3f} s classic")
            assert classic > 50 * 3 * KEYS
            with Archive.open(archive) as a:
                q = a.query(names[0], began, int(time.time()) + 2)
                assert len(q.keys) == KEYS
            counts = np.zeros(llhist.NBUCKETS, np.int64)
            counts[q.buckets] = q.counts.sum(axis=(0, 1))
            series = f'sum(strata_nfs_latency_seconds{{dataset="{names[0]}"}})'
            wait_for(lambda: [h["count"] for h in (ask(series) or {}).values()] == [str(counts.sum())],
                     timeout=10, what="prometheus to hold the archive's count")
            p99 = list(ask(f"histogram_quantile(0.99, {series})").values())
            mine = percentile_of(np.arange(llhist.NBUCKETS), counts, 99.0) / 1e9
            assert len(p99) == 1 and abs(p99[0] - mine) <= native.mapping_error(native.DEFAULT_SCHEMA) * 1.001 * mine
            share = counts[:llhist.bucket(10 ** 6)].sum() / counts.sum()
            near = edge_share(counts, native.DEFAULT_SCHEMA)
            f = list(ask(f"histogram_fraction(0, 0.001, {series})").values())
            assert len(f) == 1 and abs(f[0] - share) <= near + 1e-9, (f, share, near)
    finally:
        stop(proc)
        engine.stop()
