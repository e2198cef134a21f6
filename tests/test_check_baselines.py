"""`strata check --baseline ... --candidate C` on archives written through the datasets
API from synthetic runs (known truth, run-to-run spread of a few percent): one
baseline run warns and gives no p-value; five baseline runs put their spread into
the test, so a run like them is the same and a run 50 % slower is worse."""
import json
import subprocess
import sys

import numpy as np

from check_synthetic import base_sample, run
from strata.datasets import transfer
from strata.datasets.archive import Archive

STRATA = [sys.executable, "-c", "from strata.cli.main import main; main()"]
NAME = "nfs.latency[op]"
START = 1_700_000_000


def write_run(path, seed, factor=1.0, seconds=20):
    """One run's archive: per-second read latencies, all scaled by a per-run factor."""
    drift = float(np.random.default_rng(seed).lognormal(0, 0.03))

    def sample(rng, n):
        return base_sample(rng, n) * drift * factor

    scratch = path.with_suffix(".db")
    with Archive.open(str(scratch), readonly=False) as out:
        ingest = out.ingestor()
        info = out.create(NAME, now=START)
        with ingest.transaction():
            for s, row in enumerate(run(sample, seed, seconds)):
                ids, counts = np.unique(row, return_counts=True)
                ingest.add(info.id, START + s, "heatmap",
                           {"read": {str(int(b)): int(c) for b, c in zip(ids, counts)}})
        transfer.export(out, [NAME], str(path), overwrite=True)
    return str(path)


def check(*args):
    proc = subprocess.run([*STRATA, "check", *args, "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode in (0, 1), proc.stderr
    return proc, json.loads(proc.stdout)


def test_one_baseline_warns_and_claims_no_significance(tmp_path):
    base, cand = write_run(tmp_path / "b.archive", 1), write_run(tmp_path / "c.archive", 2)
    proc, report = check("--baseline", base, "--candidate", cand, "--threshold", "25%")
    assert "warning: 1 baseline run" in proc.stderr
    [result] = report["results"]
    assert result["intervals"] == [1, 1] and result["verdict"] == "same"
    assert all(m["p_value"] is None for m in result["metrics"])


def test_several_baselines_put_their_spread_into_the_test(tmp_path):
    bases = [write_run(tmp_path / f"b{i}.archive", 10 + i) for i in range(5)]
    args = [a for b in bases for a in ("--baseline", b)]
    like = write_run(tmp_path / "like.archive", 20)
    slow = write_run(tmp_path / "slow.archive", 21, factor=1.5)
    proc, report = check(*args, "--candidate", like)
    assert proc.returncode == 0 and "warning" not in proc.stderr
    [result] = report["results"]
    assert result["intervals"] == [5, 1] and result["verdict"] == "same"
    assert all(m["p_value"] is not None for m in result["metrics"])
    proc, report = check(*args, "--candidate", slow)
    assert proc.returncode == 1
    p50 = next(m for m in report["results"][0]["metrics"] if m["metric"] == "p50")
    assert p50["verdict"] == "worse" and p50["ci_low"] < 0.5 < p50["ci_high"]


def test_unwritable_report_file_is_one_line_before_the_check(tmp_path):
    base = write_run(tmp_path / "b.archive", 1)
    for flag in ("--junit", "--markdown"):
        proc = subprocess.run([*STRATA, "check", "--baseline", base, "--candidate", base, flag, "/nonexistent/r"],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.strip().splitlines() == [
            "strata check: cannot write /nonexistent/r: there is no directory /nonexistent"], proc.stderr


def test_a_missing_candidate_is_named_without_an_archive_hint(tmp_path):
    """check has no --archive option: a missing file is said to be missing, nothing more."""
    base = write_run(tmp_path / "b.archive", 1)
    proc = subprocess.run([*STRATA, "check", "--baseline", base, "--candidate", str(tmp_path / "nope.db")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and proc.stderr.strip().splitlines() == [
        f"strata check: {tmp_path / 'nope.db'}: no such archive"], proc.stderr
