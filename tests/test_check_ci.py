"""The shipped CI jobs (contrib/ci/): the GitHub Actions workflow's `check` step is
run here as the runner would run it (bash, in a workspace whose base/ and head/
are this tree, sudo as a pass-through since the suite runs as root), once with
the same engine on both sides (exit 0, every report kept) and once with a
delay planted in B through the script's STRATA_CHECK_ARGS (exit 1, the JUnit
report names the failure). The GitLab CI job is checked to call the same
script and to publish the JUnit file it writes."""
import os
import subprocess
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
import yaml

from conftest import REPO, built

CI = REPO / "contrib" / "ci"
PROFILE = """
description = "CI job test: randread from the ARC"
[engine]
arc_max = "64M"
pool_size = "64M"
recordsize = "8k"
[load]
profile = "randread"
io_size = "8k"
files = 2
file_size = "4m"
clients = 1
threads = 1
rate = 1500
setup = true
[measure]
warmup = 2
datasets = ["nfs.latency[op]", "nfs.ops[op]"]
[check]
metrics = ["p50", "mean"]
[ab]
seconds = 12
pairs = 3
pair_warmup = 1
confidence = 0.95
"""


def check_step() -> str:
    workflow = yaml.safe_load((CI / "strata-check-ab.yml").read_text())
    [step] = [s for s in workflow["jobs"]["latency"]["steps"] if s.get("name") == "check"]
    return step["run"]


def start_step(work: Path, args: str) -> subprocess.Popen:
    """The workflow's check step in workspace `work` (base and head: this tree)."""
    work.mkdir()
    for side in ("base", "head"):
        (work / side).symlink_to(REPO)
    shim = work / "shim"
    shim.mkdir()
    (shim / "sudo").write_text('#!/bin/sh\n[ "$1" = -E ] && shift\nexec "$@"\n')   # root already
    (shim / "sudo").chmod(0o755)
    (work / "ci.toml").write_text(PROFILE)
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}", "GITHUB_STEP_SUMMARY": str(work / "step-summary"),
           "STRATA_PROFILE": str(work / "ci.toml"), "STRATA_CHECK_ARGS": args}
    return subprocess.Popen(["bash", "-e", "-c", check_step()], cwd=work, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def steps(tmp_path_factory):
    built("bin/strata-engine")
    base = tmp_path_factory.mktemp("ci")
    procs = {"same": start_step(base / "same", "--threshold 10%"),
             "planted": start_step(base / "planted", "--threshold 10% --b-inject-delay nfs:40us")}
    out = {}
    for name, proc in procs.items():
        try:
            log, _ = proc.communicate(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
        out[name] = (proc.returncode, log, base / name)
    return out


def test_same_engine_passes_and_keeps_every_report(steps):
    rc, log, work = steps["same"]
    assert rc == 0, log
    out = work / "strata-check"
    suite = ET.parse(out / "strata-check.xml").getroot()
    assert suite.get("failures") == "0" and int(suite.get("tests")) >= 2
    assert "## strata check" in (work / "step-summary").read_text()
    assert (out / "summary.md").read_text() == (work / "step-summary").read_text()
    for side in "AB":
        archives = sorted((out / "duet").glob(f"duet-{side}-*.archive"))      # one per process pair
        assert len(archives) == 3 and all(a.stat().st_size > 0 for a in archives)
        html = (out / f"latency-{side}.html").read_text()
        assert html.lstrip().startswith("<html") and "nfs.latency[op=read]" in html


def test_planted_delay_fails_the_job_and_the_junit_names_it(steps):
    rc, log, work = steps["planted"]
    assert rc == 1 and "B is worse than A" in log, log
    suite = ET.parse(work / "strata-check" / "strata-check.xml").getroot()
    failed = [c for c in suite.iter("testcase") if c.find("failure") is not None]
    assert int(suite.get("failures")) == len(failed) >= 1
    assert any(c.get("classname") == "nfs.latency[op]" and c.get("name") == "read" for c in failed)


def test_gitlab_job_runs_the_same_script_and_publishes_its_junit():
    job = yaml.safe_load((CI / "strata-check-ab.gitlab-ci.yml").read_text())["strata-check-ab"]
    assert job["script"][-1] == "bash head/contrib/ci/check-ab.sh base head strata-check"
    assert check_step().splitlines()[0].endswith("bash head/contrib/ci/check-ab.sh base head strata-check")
    assert job["artifacts"]["reports"]["junit"] == "strata-check/strata-check.xml"
    assert job["artifacts"]["when"] == "always" and job["artifacts"]["paths"] == ["strata-check/"]
