"""Every benchmark bench/run.sh runs, run once in its smoke mode (BENCH_SMOKE=1: seconds, every
step of it, no figure asserted), so that a benchmark that can no longer run fails here rather
than rot. The two that boot a guest kernel (tests/vm/) start with the session and run beside
it, as the kernel matrix does (tests/vm/jobs.py)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vm import jobs

REPO = Path(__file__).resolve().parent.parent
BENCHES = sorted(p.name for p in (REPO / "bench").glob("*_*.*") if p.suffix in (".sh", ".py"))
IN_GUEST = {"collect_nfsd.sh", "vm_guest.py"}


def run(name: str) -> subprocess.CompletedProcess:
    path = REPO / "bench" / name
    cmd = ["bash", str(path)] if path.suffix == ".sh" else [sys.executable, str(path)]
    return subprocess.run(cmd, cwd=REPO, env={**os.environ, "BENCH_SMOKE": "1"}, capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)


def start_guest(item):
    name = item.callspec.params["bench"] if hasattr(item, "callspec") else None
    if name in IN_GUEST:
        jobs.submit(f"bench-{name}", run, name)


def test_the_smoke_set_is_what_bench_run_sh_runs():
    assert "datasets_archive.py" in BENCHES and "collect_wire.sh" in BENCHES
    assert not {"collectlib.sh", "tierlib.sh", "fsunfollowedlib.sh", "fsunfollowed.py", "run.sh", "losses.py",
                "bpfstats.py", "revision.py", "replaydaemon.py"} & set(BENCHES)


@pytest.mark.timeout(900)
@pytest.mark.parametrize("bench", BENCHES)
def test_benchmark_runs_in_smoke_mode(bench):
    r = jobs.result(f"bench-{bench}", run, bench) if bench in IN_GUEST else run(bench)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
    assert r.stdout.strip(), r.stderr[-2000:]   # it printed its figures
