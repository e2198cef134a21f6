"""`strata check run`: measure a profile's workload and judge it against a baseline.

Starts a private engine (or uses the server the profile names), writes the
working set, runs the strata-load profile, collects the profile's datasets
into a private archive, keeps `duration` whole seconds after `warmup`, writes
them as a self-contained archive and compares it with the baseline exactly as
`strata check --baseline B --candidate C` does (same exit codes: 0 same or
better, 1 regression, 2 error). --update-baseline writes the baseline instead.
Profile keys: cli/check_profile.py.
"""
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import click

from strata.cli import check_profile
from strata.cli.binaries import MissingBinary
from strata.cli.check_progress import CheckProgress
from strata.cli.lab import engine as lab_engine
from strata.cli.lab.collect import Collection, CollectError, create_datasets
from strata.cli.lab.load import Load, LoadError, arguments
from strata.cli.lab.teardown import Teardown
from strata.cli.lab.window import export_window
from strata.datasets.errors import ArchiveError

EXPORT = "/check"
FAILURES = (MissingBinary, lab_engine.EngineError, LoadError, CollectError, ArchiveError, OSError)


def _say(text: str):
    click.echo(f"strata check run: {text}", err=True)


def _fail(text: str):
    click.echo(f"strata check run: {text}", err=True)
    sys.exit(2)


@click.command("run")
@click.option("--profile", "profile_path", required=True, type=click.Path(dir_okay=False),
              help="The profile (TOML): engine or server, load, datasets, warm-up and measured seconds.")
@click.option("--baseline", "baselines", multiple=True, type=click.Path(dir_okay=False),
              help="Baseline archive (repeatable; default: the profile's).")
@click.option("--update-baseline", is_flag=True, help="Write the measured archive as the baseline; no comparison.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Also keep the measured archive here.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Also write JUnit XML here.")
@click.option("--markdown", type=click.Path(dir_okay=False), help="Also write a Markdown summary here.")
def run(profile_path, baselines, update_baseline, output, as_json, junit, markdown):
    """Run PROFILE's workload, measure it, and compare it with the baseline.

    With one baseline run no significance can be claimed (a warning says so);
    --update-baseline writes the first --baseline, so several runs make a
    baseline whose spread enters the test. Exits 0 when nothing got worse,
    1 on a regression, 2 on an error.
    """
    # check_cmd registers this command, so it is imported here
    from strata.cli.check_cmd import _percent, report, run_comparison, warn_few_baselines
    try:
        prof = check_profile.load(profile_path)
        threshold = _percent(prof.threshold)
    except (check_profile.ProfileError, click.BadParameter) as e:
        _fail(str(e.format_message() if isinstance(e, click.BadParameter) else e))
    baselines = list(baselines) or [str(b) for b in prof.baselines]
    if not baselines:
        _fail("no baseline: give --baseline FILE or set baseline = \"...\" in the profile")
    missing = [b for b in baselines if not os.path.exists(b)]
    if not update_baseline and missing:
        _fail(f"baseline {missing[0]} does not exist (make one with --update-baseline)")
    if os.geteuid() != 0:
        _fail("needs root (BPF probes); run it with sudo")

    scratch = Path(tempfile.mkdtemp(prefix="strata-check-"))
    try:
        candidate = str(scratch / "candidate.archive")
        try:
            with Teardown() as undo:
                measure(prof, scratch, candidate, undo)
        except KeyboardInterrupt:
            _say("interrupted; everything it started has been stopped and removed")
            sys.exit(130)
        except FAILURES as e:
            _fail(str(e))
        if output:
            shutil.copyfile(candidate, output)
        if update_baseline:
            Path(baselines[0]).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(candidate, baselines[0])
            _say(f"wrote baseline {baselines[0]} ({os.path.getsize(baselines[0]):,} bytes)")
            sys.exit(0)
        results, series = run_comparison(baselines, candidate, (), prof.metrics, threshold, prof.confidence)
        warn_few_baselines(len(baselines), threshold)
        report(results, series, baselines[0] if len(baselines) == 1 else baselines, output or candidate, as_json,
               junit, markdown)
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
        _say("writing the working set")
        setup = Load(work, "setup").start(arguments(host, nfsport, mountport, export, {**options, "setup_only": True}))
        undo.callback(setup.stop)
        setup.wait(timeout=600)
    total = prof.warmup + prof.duration + 2
    _say(f"{options['profile']} for {prof.warmup}s warm-up + {prof.duration}s measured")
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


def private_engine(prof, work: Path, undo, binary: str | None = None, delays: dict | None = None):
    """The profile's [engine] on a fresh pool in work (binary: which strata-engine),
    with the profile's inject_delay and then `delays` (tier -> duration) applied."""
    e = prof.engine
    vdevs = [str(work / f"vdev{i}") for i in range(int(e.get("vdevs", 1)))]
    lab_engine.mkpool(vdevs, str(e.get("pool_size", "256M")), str(e.get("recordsize", "128k")), binary)
    extra = [str(a) for a in e.get("args", [])]
    if "cache_size" in e:
        extra += ["--cache", f"{work}/cache0:{e['cache_size']}"]
    eng = lab_engine.Engine(work, binary)
    # mode=1777: strata-load's clients (uids 10000 and up) create their files in the export root
    # (an engine of a revision before mode= made such roots already: --a-rev of an old one)
    mode = ",mode=1777" if lab_engine.takes_export_mode(binary) else ""
    eng.start(vdevs, f"{EXPORT}:allow=127.0.0.0/8,allow=10.213.0.0/16,no_root_squash{mode}",
              str(e.get("arc_max", "256M")), extra)
    undo.callback(eng.stop)
    for tier, delay in {**e.get("inject_delay", {}), **(delays or {})}.items():
        click.echo(f"strata check: injecting {delay} into every {tier} {'reply' if tier == 'nfs' else 'I/O'}",
                   err=True)
        eng.ctl("inject-delay", tier, delay)
    return "127.0.0.1", eng.nfsport, eng.mountport, EXPORT, eng.pid
