"""Every benchmark bench/run.sh runs, run once in its smoke mode (BENCH_SMOKE=1: seconds, every
step of it, no figure asserted), so that a benchmark that can no longer run fails here rather
than rot. The two that boot a guest kernel (tests/vm/) start with the session and run beside
it, as the kernel matrix does (tests/vm/jobs.py). Those that start no engine, collector or
BPF program (archives, renders, browsers, Prometheus) run one after another in a thread of
their own beside the rest of this module: they share nothing with the others, and smoke
mode asserts no figure."""
import os
import subprocess
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from vm import jobs

REPO = Path(__file__).resolve().parent.parent
BENCHES = sorted(p.name for p in (REPO / "bench").glob("*_*.*") if p.suffix in (".sh", ".py"))
IN_GUEST = {"collect_nfsd.sh", "vm_guest.py"}
BESIDE = {"datasets_archive.py", "datasets_ingest.py", "heatmap_default.py", "heatmaps_prometheus.py",
          "heatmaps_render.py", "metrics_native.py", "collect_metrics.py", "wire_nfs4_parse.py", "web_live.py",
          "web_weight.py"}
beside: dict[str, Future] = {}


def run(name: str) -> subprocess.CompletedProcess:
    path = REPO / "bench" / name
    cmd = ["bash", str(path)] if path.suffix == ".sh" else [sys.executable, str(path)]
    return subprocess.run(cmd, cwd=REPO, env={**os.environ, "BENCH_SMOKE": "1"}, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


def start_guest(item):
    name = item.callspec.params["bench"] if hasattr(item, "callspec") else None
    if name in IN_GUEST:
        jobs.submit(f"bench-{name}", run, name)


@pytest.fixture(scope="module", autouse=True)
def light_ones_beside(request):
    """The selected benchmarks of BESIDE, started in a thread of their own with the module's
    first test."""
    chosen = {i.callspec.params["bench"] for i in request.session.items
              if i.module is request.module and hasattr(i, "callspec")}
    pool = ThreadPoolExecutor(1, thread_name_prefix="bench-beside")
    for name in sorted(BESIDE & chosen):
        beside[name] = pool.submit(run, name)
    yield
    pool.shutdown(cancel_futures=True)


def test_the_smoke_set_is_what_bench_run_sh_runs():
    assert "datasets_archive.py" in BENCHES and "collect_wire.sh" in BENCHES and BESIDE <= set(BENCHES)
    assert not {"collectlib.sh", "tierlib.sh", "fsunfollowedlib.sh", "fsunfollowed.py", "run.sh", "losses.py",
                "bpfstats.py", "revision.py", "replaydaemon.py"} & set(BENCHES)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("bench", BENCHES)
def test_benchmark_runs_in_smoke_mode(bench):
    if bench in IN_GUEST:
        r = jobs.result(f"bench-{bench}", run, bench)
    else:
        r = beside[bench].result() if bench in beside else run(bench)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    assert r.stdout.strip(), r.stderr[-2000:]   # it printed its figures
