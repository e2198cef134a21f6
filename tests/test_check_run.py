"""`strata check run` with the shipped smoke profile against the committed baseline:
a real engine, strata-load and `strata collect`, judged by the check statistics.
The verdict itself depends on the machine's load, so the test asserts a
verdict was reached (exit 0 or 1, never 2), that the JSON says what was
compared, and that one baseline run claims no significance and says so;
bad profiles give one line and exit 2."""
import json
import subprocess
import sys

from strata.datasets.archive import Archive

STRATA = [sys.executable, "-c", "from strata.cli.main import main; main()"]


def test_smoke_profile_against_committed_baseline(repo, tmp_path):
    """The shipped profile with its 10 s warm-up cut to 2 s, its 15 measured seconds to 8
    and its baseline named in full: the verdict is not asserted, so a less warm ARC and a
    shorter run change nothing checked here."""
    shipped = (repo / "bench/profiles/smoke.toml").read_text()
    assert "\nwarmup = 10\nduration = 15\n" in shipped
    assert '\nbaseline = "../../tests/baselines/smoke.archive"\n' in shipped
    profile = tmp_path / "smoke.toml"
    profile.write_text(shipped.replace("\nwarmup = 10\nduration = 15\n", "\nwarmup = 2\nduration = 8\n").replace(
        '"../../tests/baselines/smoke.archive"', json.dumps(str(repo / "tests/baselines/smoke.archive"))))
    kept = tmp_path / "candidate.archive"
    proc = subprocess.run([*STRATA, "check", "run", "--profile", str(profile),
                           "--json", "-o", str(kept), "--junit", str(tmp_path / "junit.xml")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert (report["schema"], report["schema_version"]) == ("strata.check", 1)
    assert report["verdict"] in ("same", "better", "worse")
    assert report["baseline"] == str(repo / "tests/baselines/smoke.archive")
    compared = {(r["dataset"], r["key"]) for r in report["results"]}
    assert compared == {("nfs.latency[op]", "read"), ("nfs.ops[op]", "read")}
    assert all(r["intervals"] == [1, 1] for r in report["results"])          # runs are the replicates
    assert all(m["p_value"] is None for r in report["results"] for m in r["metrics"])
    assert "warning: 1 baseline run" in proc.stderr and "no significance" in proc.stderr
    assert (tmp_path / "junit.xml").read_text().startswith("<?xml")
    with Archive.open(kept) as archive:     # the measured window: 8 whole seconds, reads only
        start = archive.dataset("nfs.ops[op]").created
        qr = archive.query("nfs.ops[op]", start - 60, start + 60)
        assert qr.keys == ["read"] and int(qr.present.sum()) == 8
        assert 8 * 2000 * 0.9 <= int(qr.values.sum()) <= 8 * 2000 * 1.02


def test_bad_profile_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[load]\nprofile = "randread"\nbogus = 1\n')
    proc = subprocess.run([*STRATA, "check", "run", "--profile", str(bad), "--baseline", str(bad)],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "bogus" in proc.stderr


def test_injected_l2arc_delay_reads_worse_where_it_should(repo, tmp_path):
    """The same L2ARC profile twice, the second with 200 us added to every cache-device
    read (`strata-engine ctl inject-delay`): worse on l2arc.latency, and the delay lands
    on the NFS reads the L2ARC served, not on those the ARC served. One baseline run
    gives no significance, so the per-tier check is on the size of the shift: the
    machine's run-to-run noise moves a median by a fraction of itself, not by 200 us.
    Each run measures 5 s (the profile's 10 s halved) after a 3 s warm-up (its 6 s halved):
    thousands of reads per tier, and the shifts are compared within each tier."""
    shipped = (repo / "bench/profiles/l2arc.toml").read_text()
    assert "\nduration = 10\n" in shipped and "\nwarmup = 6\n" in shipped
    profile = tmp_path / "l2arc.toml"
    profile.write_text(shipped.replace("\nduration = 10\n", "\nduration = 5\n").replace(
        "\nwarmup = 6\n", "\nwarmup = 3\n"))
    base = tmp_path / "base.archive"
    proc = subprocess.run([*STRATA, "check", "run", "--profile", str(profile), "--baseline", str(base),
                           "--update-baseline"], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    slow = tmp_path / "slow.toml"
    slow.write_text(profile.read_text().replace("[engine]\n", '[engine]\ninject_delay = { l2arc = "200us" }\n'))
    proc = subprocess.run([*STRATA, "check", "run", "--profile", str(slow), "--baseline", str(base), "--json"],
                          capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    results = {(r["dataset"], r["key"]): r for r in json.loads(proc.stdout)["results"]}
    assert results[("l2arc.latency", "")]["verdict"] == "worse"
    shift = {}
    for tier in ("l2arc", "arc"):
        p50 = next(m for m in results[("nfs.latency[tier]", tier)]["metrics"] if m["metric"] == "p50")
        shift[tier] = p50["candidate"] - p50["baseline"]        # ns
    assert shift["l2arc"] > 100_000 and shift["arc"] < 50_000, shift
