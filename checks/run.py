"""`strata check run`: measure a profile's workload and judge it against a baseline.

Starts a private engine (or uses the server the profile names), writes the
working set, runs the strata-load profile, collects the profile's datasets
into a private archive, keeps `duration` whole seconds after `warmup`, writes
them as a self-contained archive and compares it with the baseline exactly as
`strata check --baseline B --candidate C` does (checks/baselines.py).
Profile keys: checks/profile.py.
"""
import math
import os
import shutil
import tempfile
import time
from pathlib import Path

from strata.checks import profile
from strata.checks.baselines import compare_archives, few_baselines_warning, parse_percent
from strata.checks.engines import private_engine
from strata.checks.errors import CheckError
from strata.checks.progress import CheckProgress
from strata.checks.report import Verdict
from strata.lab.collect import Collection, create_datasets
from strata.lab.load import Load, arguments
from strata.lab.logs import say
from strata.lab.teardown import Teardown
from strata.lab.window import export_window


def run_profile(profile_path: str, baselines: list, update_baseline: bool, output: str | None) -> Verdict | None:
    """Measures the profile and judges it against its baselines (the profile's when none
    are given); with update_baseline writes the first baseline instead and returns None.
    CheckError (or one of errors.FAILURES) when it cannot."""
    try:
        prof = profile.load(profile_path)
    except profile.ProfileError as e:
        raise CheckError(str(e)) from None
    threshold = parse_percent(prof.threshold)
    baselines = list(baselines) or [str(b) for b in prof.baselines]
    if not baselines:
        raise CheckError("no baseline: give --baseline FILE or set baseline = \"...\" in the profile")
    missing = [b for b in baselines if not os.path.exists(b)]
    if not update_baseline and missing:
        raise CheckError(f"baseline {missing[0]} does not exist (make one with --update-baseline)")
    if os.geteuid() != 0:
        raise CheckError("needs root (BPF probes); run it with sudo")

    scratch = Path(tempfile.mkdtemp(prefix="strata-check-"))
    try:
        candidate = str(scratch / "candidate.archive")
        with Teardown() as undo:
            measure(prof, scratch, candidate, undo)
        if output:
            shutil.copyfile(candidate, output)
        if update_baseline:
            Path(baselines[0]).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(candidate, baselines[0])
            say("check run", f"wrote baseline {baselines[0]} ({os.path.getsize(baselines[0]):,} bytes)")
            return None
        verdict = compare_archives(baselines, candidate, (), prof.metrics, threshold, prof.confidence)
        verdict.candidate = output or candidate
        warning = few_baselines_warning(len(baselines), threshold)
        if warning:
            say("check", warning)
        return verdict
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure(prof, work: Path, candidate: str, undo):
    """Engine (or server), setup, load, collection; writes the measured window to candidate."""
    if prof.server is None:
        host, nfsport, mountport, export, pid = private_engine(prof, work, undo)
    else:
        s = prof.server
        host, nfsport, mountport, export = s["host"], s.get("nfsport"), s.get("mountport"), s["export"]
        pid = s.get("engine_pid")
    archive = str(work / "collect.db")
    create_datasets(archive, prof.datasets)
    coll = Collection(work, archive, pid).start()
    undo.callback(coll.stop)
    coll.wait_for_data(prof.datasets[0])

    options = {k: v for k, v in prof.load.items() if k != "setup"}
    if prof.load.get("setup"):
        say("check run", "writing the working set")
        setup = Load(work, "setup").start(arguments(host, nfsport, mountport, export, {**options, "setup_only": True}))
        undo.callback(setup.stop)
        setup.wait(timeout=600)
    total = prof.warmup + prof.duration + 2
    say("check run", f"{options['profile']} for {prof.warmup}s warm-up + {prof.duration}s measured")
    began = time.time()
    load = Load(work, "run").start(arguments(host, nfsport, mountport, export, {**options, "duration": total}))
    undo.callback(load.stop)
    start = math.ceil(began) + prof.warmup
    end = start + prof.duration
    with CheckProgress("seconds", prof.warmup + prof.duration, 1, prefix="strata check run") as progress:
        while load.running():
            time.sleep(0.25)
            coll.check()
            progress.update(int(time.time() - began))
        load.wait(timeout=60)
    time.sleep(max(0.0, end + 1.5 - time.time()))   # the collector writes second end-1
    coll.stop()
    export_window(archive, prof.datasets, start, end, candidate)
