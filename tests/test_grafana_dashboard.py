"""contrib/grafana/strata.json against a real Prometheus scraping a real collector.

The real engine (private copy, L2ARC and SLOG devices) serves real libnfs clients
(strata-load); `strata collect --config` runs the installed default configuration's
datasets (contrib/collect.toml) with real BPF; Debian's Prometheus scrapes it every
second, and a second Prometheus with native histograms on scrapes it as protobuf. Every
panel's PromQL, with the dashboard's variables resolved the way Grafana resolves them
(label_values through the series API), must answer with data from the Prometheus it is
for (classic queries from the first, native ones from the second), the classic heat-map
queries' `le` labels must be llhist bucket bounds and the native ones' buckets those
strata's llhist bins move into. A statistic this collector
does not offer (wire.latency before the wire view exists) must be the only empty one."""
import json
import os
import re
import signal
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path

from collect_util import private_copy
from conftest import built
from datasets_util import STRATA, direct_writes, loop_device, strata
from strata.datasets import llhist
from strata.prometheus import native_buckets as native, native_reader as prometheus_native
from test_collect_engine import Engine
from test_datasets_collect import wait_for
from test_datasets_openmetrics import needs_prometheus, running_prometheus

REPO = Path(__file__).resolve().parent.parent
DASHBOARD = REPO / "contrib" / "grafana" / "strata.json"
DEFAULT_CONFIG = REPO / "contrib" / "collect.toml"
RANGE = "2m"


def panels(dashboard):
    for p in dashboard["panels"]:
        yield p
        yield from p.get("panels", [])


def targets(dashboard):
    """(panel, target) of every query in the dashboard."""
    return [(p, t) for p in panels(dashboard) for t in p.get("targets", [])]


def families(expr):
    return set(re.findall(r"strata_[a-z0-9_]+?(?=_bucket|_total|\{)", expr))


def label_values(web, query):
    """Grafana's label_values(SELECTOR, LABEL) through the series API."""
    m = re.fullmatch(r"label_values\((.*), (\w+)\)", query)
    selector, label = m.group(1), m.group(2)
    url = f"{web}/api/v1/series?" + urllib.parse.urlencode({"match[]": selector, "start": time.time() - 600})
    with urllib.request.urlopen(url, timeout=10) as r:
        return sorted({s[label] for s in json.load(r)["data"] if label in s})


def instant(web, promql):
    url = f"{web}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(url, timeout=10) as r:
        body = json.load(r)
    assert body["status"] == "success", (promql, body)
    return body["data"]["result"]


def native_target(panel, target):
    """Whether a query reads native histograms (Prometheus with native histograms on): each
    histogram panel has one for classic histograms and one for native ones."""
    return "histogram_quantile" in target["expr"] and "_bucket" not in target["expr"] or \
        panel["type"] == "heatmap" and "_bucket" not in target["expr"]


def resolve(expr, variables):
    for name, value in variables.items():
        expr = expr.replace(f"${name}", value)
    return expr


def test_dashboard_json_is_a_grafana_dashboard():
    d = json.loads(DASHBOARD.read_text())
    names = {v["name"] for v in d["templating"]["list"]}
    assert {"datasource", "instance", "dataset"} <= names
    kinds = [p["type"] for p in panels(d)]
    assert kinds.count("heatmap") >= 5 and kinds.count("table") >= 2
    for p, t in targets(d):
        if p["type"] == "heatmap" and not native_target(p, t):
            assert t["format"] == "heatmap" and ("sum by (le)" in t["expr"] or "max by (le)" in t["expr"]), t
        elif p["type"] == "heatmap":
            assert t["format"] == "heatmap" and t["expr"].startswith("sum(increase(") and "_bucket" not in t["expr"], t
    assert {p["title"] for p, t in targets(d) if native_target(p, t)} == \
        {p["title"] for p, t in targets(d) if p["type"] == "heatmap" or "histogram_quantile" in t["expr"]}
    fams = set().union(*(families(t["expr"]) for _, t in targets(d)))
    assert {"strata_nfs_latency_seconds", "strata_wire_latency_seconds", "strata_l2arc_latency_seconds",
            "strata_zil_latency_seconds", "strata_disk_latency_seconds", "strata_nfs_ops"} <= fams
    ids = [p["id"] for p in panels(d)]
    assert len(ids) == len(set(ids))


@needs_prometheus
def test_every_panel_answers_from_a_real_collector(tmp_path):
    built("bin/strata-collect")
    offered = {s["statistic"] for s in json.loads(strata("statistics", "--json").stdout)["statistics"]
               if s.get("supported") is not False}
    engine = Engine(private_copy(built("bin/strata-engine"), tmp_path), tmp_path, "g",
                    ["--arc-max", "4M", "--cache", f"{tmp_path}/cache:64M", "--log", f"{tmp_path}/slog:128M",
                     "--sync-interval", "60s"])
    config, log = tmp_path / "collect.toml", tmp_path / "collect.err"
    text = DEFAULT_CONFIG.read_text().replace('"/var/lib/strata/archive.db"', f'"{tmp_path / "a.db"}"')
    text = text.replace('listen = ":9464"', 'listen = "127.0.0.1:0"')
    text = text.replace("# engine_pid = 1234", f"engine_pid = {engine.pid}")
    if "wire.latency" in offered:     # the wire view on loopback, for the engine's port
        text = text.replace('"nfs.ops[op]",', '"nfs.ops[op]", "wire.latency[client]",')
        text = text.replace("# interfaces = [\"eth0\"]", 'interfaces = ["lo"]')
        text = text.replace("# ports = [2049]", f"ports = [{engine.nfs_port}]")
    config.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    with open(log, "w") as err:
        proc = subprocess.Popen([STRATA, "collect", "--config", str(config)], stdout=subprocess.DEVNULL,
                                stderr=err, env=env)
    try:
        wait_for(lambda: "serving OpenMetrics at" in log.read_text() or proc.poll() is not None, timeout=30,
                 what="the collector to serve metrics")
        assert proc.poll() is None, log.read_text()
        url = re.search(r"serving OpenMetrics at (\S+)", log.read_text()).group(1)
        with loop_device() as dev, running_prometheus([url], tmp_path) as (classic, _), \
                running_prometheus([url], tmp_path, ["native-histograms"]) as (native_web, _):
            engine.load(1, True, 2, "--working-set", "16m")                 # ARC 4M: the rest to L2ARC
            time.sleep(2.5)                                                 # two L2ARC feeds
            engine.load(2, False, 2, "--working-set", "16m")
            engine.load(1, False, 2, "--profile", "write", "--stable", "file_sync", "--io-size", "4k",
                        "--working-set", "16m")
            direct_writes(dev, 100)
            dashboard = json.loads(DASHBOARD.read_text())
            variables = {v["name"]: v for v in dashboard["templating"]["list"]}
            values = {"instance": variables["instance"]["allValue"], "__rate_interval": RANGE, "__range": RANGE}
            datasets = {}
            for web in (classic, native_web):
                instances = label_values(web, variables["instance"]["query"]["query"])
                assert instances == [urllib.parse.urlsplit(url).netloc]
                datasets[web] = label_values(web, resolve(variables["dataset"]["query"]["query"], values))
                assert {"nfs.latency[client]", "zil.latency", "disk.latency[device]"} <= set(datasets[web]), \
                    (web, datasets[web])
            assert datasets[classic] == datasets[native_web]
            queries = targets(dashboard)
            # each query asked of the Prometheus it is for: native ones of the one with native histograms
            asked = {(p["title"], t["refId"]): native_web if native_target(p, t) else classic for p, t in queries}

            def answers():
                """{(panel, refId): [result, ...]}: one result per dataset choice where $dataset is used."""
                return {key: [instant(asked[key], resolve(t["expr"], {**values, "dataset": chosen}))
                              for chosen in (datasets[classic] if "$dataset" in t["expr"] else [""])]
                        for p, t in queries for key in [(p["title"], t["refId"])]}
            wanted = [key for (p, t) in queries for key in [(p["title"], t["refId"])]
                      if all(f.removeprefix("strata_").removesuffix("_seconds").replace("_", ".", 1) in offered
                             for f in families(t["expr"]))]
            wait_for(lambda: all(any(r for r in answers()[k]) for k in wanted), timeout=60,
                     what="every panel of an offered statistic to answer")
            got = answers()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        engine.stop()
    heat = {(p["title"], t["refId"]) for p, t in queries if p["type"] == "heatmap"}
    natives = {(p["title"], t["refId"]) for p, t in queries if native_target(p, t)}
    for key, results in got.items():
        if key not in wanted:        # a statistic this host's collector does not offer
            assert all(not r for r in results), key
            assert "wire" in key[0], f"{key} has no data and is not the wire view"
            print(f"{key[0]}: no data (statistic not offered by this collector)")
            continue
        series = [s for r in results for s in r]
        if key in heat and key in natives:                 # native histograms, buckets strata's
            assert series and any(float(s["histogram"][1]["count"]) > 0 for s in series), key
            for s in series:
                for _, lo, hi, _ in s["histogram"][1]["buckets"]:
                    bucket = prometheus_native._bucket(float(lo), float(hi), key[0])
                    assert bucket is None or bucket[1] in set(native.bins_to_native(bucket[0], 1e9).tolist()), \
                        (key, lo, hi)
            continue
        assert series and any(float(s["value"][1]) > 0 for s in series), key
        if key in heat:
            bounds = {s["metric"]["le"] for s in series}
            assert "+Inf" in bounds, key
            for le in bounds - {"+Inf"}:
                v = round(float(le) * 1e9)                  # le = upper(bucket) - 1 ns
                assert llhist.upper(llhist.bucket(v)) - 1 == v, (key, le)
        else:
            assert all(set(s["metric"]) & {"client", "op"} for s in series), key
    assert proc.returncode == 0, log.read_text()
