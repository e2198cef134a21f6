"""`strata check ab`: two engines under one profile's load, in alternating short
rounds (A B B A A B ...), one archive per round, judged on the paired rounds.

Both engines run side by side for the whole check, each on its own fresh pool
with its own collector (pointed at its pid); the working set is written to
each and warmed once, then the rounds alternate so that the drift of a shared
machine falls on both sides of every pair. Each round's measured seconds are
exported as a self-contained archive (kept with -o DIR), and the statistics
(strata.datasets.compare_rounds) are computed from those archives alone.
Exit codes as `strata check`: 0 same or better, 1 regression, 2 error.
"""
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import click

from strata.cli import check_engines, check_profile
from strata.cli.check_run import EXPORT, FAILURES, private_engine
from strata.cli.lab.collect import Collection, create_datasets
from strata.cli.lab.load import Load, arguments
from strata.cli.lab.teardown import Teardown
from strata.cli.lab.window import export_window
from strata.datasets.archive import Archive
from strata.datasets.compare import CORRECTIONS, interval_metric, judge, stack
from strata.datasets.compare_rounds import compare_rounds_counts, compare_rounds_histograms, min_pairs
from strata.datasets.errors import ArchiveError


def _say(text: str):
    click.echo(f"strata check ab: {text}", err=True)


def _fail(text: str):
    click.echo(f"strata check ab: {text}", err=True)
    sys.exit(2)


def round_order(rounds: int) -> str:
    """'ABBAABBA...': pair k is AB for even k, BA for odd k, so a steady drift cancels."""
    return "".join("AB" if k % 2 == 0 else "BA" for k in range(rounds // 2))


def parse_delays(specs) -> dict:
    """['nfs:10us', ...] -> {'nfs': '10us'}; BadParameter on a bad one."""
    out = {}
    for spec in specs:
        tier, sep, dur = spec.partition(":")
        if not sep or tier not in check_profile.DELAY_TIERS or not dur:
            raise click.BadParameter(f"{spec!r}: give TIER:DURATION, TIER one of "
                                     f"{', '.join(sorted(check_profile.DELAY_TIERS))} (e.g. nfs:20us)",
                                     param_hint="--b-inject-delay")
        out[tier] = dur
    return out


@dataclass
class Side:
    name: str            # A or B
    label: str           # what the user gave: a path or a revision
    binary: str
    work: Path
    delays: dict
    archive: str = ""
    host: str = ""
    ports: tuple = ()
    coll: Collection | None = None


@click.command("ab")
@click.option("--profile", "profile_path", required=True, type=click.Path(dir_okay=False),
              help="The profile (TOML): engine, load, datasets; [ab] sets rounds and thresholds.")
@click.option("--a", "a_path", help="Engine A: a strata-engine binary or a build folder.")
@click.option("--b", "b_path", help="Engine B: a strata-engine binary or a build folder.")
@click.option("--a-rev", help="Engine A from this git revision, built in a temporary folder.")
@click.option("--b-rev", help="Engine B from this git revision, built in a temporary folder.")
@click.option("--repo", default=".", show_default=True, help="The git checkout --a-rev/--b-rev come from.")
@click.option("--b-inject-delay", "b_delays", multiple=True, metavar="TIER:DUR",
              help="Plant a regression in B: `strata-engine ctl inject-delay TIER DUR` (e.g. nfs:20us).")
@click.option("--rounds", type=click.IntRange(6, 1000), help="Rounds in all, even (default: the profile's, 24).")
@click.option("--round-seconds", type=click.IntRange(2, 3600), help="Measured seconds per round (default 5).")
@click.option("--threshold", help="Smallest change that counts (default: the profile's [ab], 2%).")
@click.option("--confidence", type=click.FloatRange(0.5, 0.9999), help="Default: the profile's [ab], 0.99.")
@click.option("--correction", type=click.Choice(CORRECTIONS), help="Multiple-comparison control (default bh).")
@click.option("-o", "--output", type=click.Path(file_okay=False), help="Keep the per-round archives in this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Also write JUnit XML here.")
@click.option("--markdown", type=click.Path(dir_okay=False), help="Also write a Markdown summary here.")
def ab(profile_path, a_path, b_path, a_rev, b_rev, repo, b_delays, rounds, round_seconds, threshold, confidence,
       correction, output, as_json, junit, markdown):
    """Run engines A and B in alternating rounds under PROFILE's load and judge B against A.

    Each metric (p50, p99, p99.9, mean, shape; rate for counters) gives one B/A
    ratio per pair of adjacent rounds; a sign-flip permutation test over the
    pairs gives its p-value and interval, adjusted over all datasets, keys and
    metrics. B is worse where the adjusted p-value is below 1 - confidence and
    the effect exceeds the threshold. Needs root (BPF probes).

    Exits 0 when nothing got worse, 1 on a regression, 2 on an error.
    """
    from strata.cli.check_cmd import _percent, report
    try:
        prof = check_profile.load(profile_path)
        settings = {**prof.ab, **{k: v for k, v in (("rounds", rounds), ("round_seconds", round_seconds),
                                                    ("threshold", threshold), ("confidence", confidence),
                                                    ("correction", correction)) if v is not None}}
        pct = _percent(settings["threshold"])
        delays = parse_delays(b_delays)
    except (check_profile.ProfileError, click.BadParameter) as e:
        _fail(str(e.format_message() if isinstance(e, click.BadParameter) else e))
    if settings["rounds"] % 2:
        _fail(f"--rounds must be even (pairs of A and B rounds), not {settings['rounds']}")
    if prof.server is not None:
        _fail("check ab starts both engines itself: give a profile with [engine], not [server]")
    for side, path, rev in (("A", a_path, a_rev), ("B", b_path, b_rev)):
        if bool(path) == bool(rev):
            _fail(f"give engine {side} as --{side.lower()} PATH or --{side.lower()}-rev REV (one of them)")
    if os.geteuid() != 0:
        _fail("needs root (BPF probes); run it with sudo")

    scratch = Path(tempfile.mkdtemp(prefix="strata-check-ab-"))
    outdir = Path(output) if output else scratch / "rounds"
    try:
        try:
            outdir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            _fail(f"cannot make {outdir}: {e.strerror}")
        sides = {}
        for name, path, rev, d in (("A", a_path, a_rev, {}), ("B", b_path, b_rev, delays)):
            work = scratch / name
            work.mkdir()
            try:
                if rev:
                    _say(f"building engine {name} from {rev}")
                    binary = check_engines.build_revision(check_engines.repo_root(repo), rev, scratch / f"src-{name}")
                else:
                    binary = check_engines.from_path(path)
            except check_engines.EngineSourceError as e:
                _fail(str(e))
            sides[name] = Side(name, rev or path, binary, work, d)
        order = round_order(settings["rounds"])
        try:
            with Teardown() as undo:
                windows = measure(prof, sides, order, settings, undo)
                archives = export_rounds(prof, sides, windows, outdir)
        except KeyboardInterrupt:
            _say("interrupted; everything it started has been stopped and removed")
            sys.exit(130)
        except FAILURES as e:
            _fail(str(e))
        try:
            results, series = judge_rounds(prof, archives, order, pct, settings["confidence"],
                                           settings["correction"])
        except ArchiveError as e:
            _fail(str(e))
        tests = sum(len(kv.metrics) for _, kv in results)
        needed = min_pairs(settings["confidence"], max(tests, 1))
        if len(order) // 2 < needed:
            _say(f"warning: {len(order) // 2} pairs cannot reach confidence {settings['confidence']} over "
                 f"{tests} tests when one metric moves alone; {2 * needed}+ rounds can")
        extra = {"design": "ab", "order": order, "rounds": [str(a) if output else a.name for a in archives],
                 "threshold": pct, "confidence": settings["confidence"], "correction": settings["correction"],
                 "b_inject_delay": delays}
        report(results, series, sides["A"].label, sides["B"].label, as_json, junit, markdown, unit="rounds",
               extra=extra)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def measure(prof, sides: dict, order: str, settings: dict, undo) -> list:
    """Starts both engines and collectors, writes and warms the working sets, runs
    the rounds; returns (side, start, end) of each round's measured seconds."""
    options = {k: v for k, v in prof.load.items() if k != "setup"}
    for s in sides.values():
        host, nfsport, mountport, _, pid = private_engine(prof, s.work, undo, s.binary, s.delays)
        s.host, s.ports = host, (nfsport, mountport)
        s.archive = str(s.work / "collect.db")
        create_datasets(s.archive, prof.datasets)
        s.coll = Collection(s.work, s.archive, pid).start()
        undo.callback(s.coll.stop)
    for s in sides.values():
        s.coll.wait_for_data(prof.datasets[0])
        if prof.load.get("setup"):
            _say(f"writing the working set of {s.name}")
            setup = Load(s.work, "setup").start(_args(s, {**options, "setup_only": True}))
            undo.callback(setup.stop)
            setup.wait(timeout=600)
        if prof.warmup:
            _say(f"warming {s.name} for {prof.warmup}s")
            _run_load(s, options, prof.warmup, "warmup", sides)
    warm, seconds = settings["round_warmup"], settings["round_seconds"]
    _say(f"{len(order)} rounds ({order[:8]}...) of {warm}s warm-up + {seconds}s measured, "
         f"{options['profile']}")
    windows = []
    for r, name in enumerate(order):
        began = _run_load(sides[name], options, warm + seconds + 1, f"round{r + 1}", sides)
        start = math.ceil(began) + warm
        windows.append((name, start, start + seconds))
    time.sleep(max(0.0, windows[-1][2] + 1.5 - time.time()))   # the collectors write second end-1
    for s in sides.values():
        s.coll.stop()
    return windows


def _args(side: Side, options: dict) -> list:
    nfsport, mountport = side.ports
    return arguments(side.host, nfsport, mountport, EXPORT, options)


def _run_load(side: Side, options: dict, duration: int, tag: str, sides: dict) -> float:
    """Runs the load against one side for `duration` seconds; returns when it began."""
    began = time.time()
    load = Load(side.work, tag).start(_args(side, {**options, "duration": duration}))
    try:
        while load.running():
            time.sleep(0.25)
            for s in sides.values():
                s.coll.check()
        load.wait(timeout=60)
    finally:
        load.stop()
    return began


def export_rounds(prof, sides: dict, windows: list, outdir: Path) -> list:
    out = []
    for r, (name, start, end) in enumerate(windows):
        dest = outdir / f"round-{r + 1:02d}-{name}.archive"
        export_window(sides[name].archive, prof.datasets, start, end, str(dest))
        out.append(dest)
    return out


def _whole(path, name):
    with Archive.open(str(path)) as ar:
        first, last = ar.extent(name)
        return ar.query(name, first, last + 1)


def judge_rounds(prof, archives: list, order: str, threshold: float, confidence: float, correction: str):
    """Reads the round archives back and judges B against A pair by pair."""
    from strata.cli.check_cmd import one_sided
    a_idx = [i for i, s in enumerate(order) if s == "A"]
    b_idx = [i for i, s in enumerate(order) if s == "B"]   # pair k: a_idx[k] with b_idx[k], adjacent
    results, series = [], {}
    for name in prof.datasets:
        runs = [_whole(path, name) for path in archives]
        a_runs, b_runs = [runs[i] for i in a_idx], [runs[i] for i in b_idx]
        keys = sorted(set().union(*(qr.keys for qr in runs)))
        for key in keys:
            a_have = [qr for qr in a_runs if key in qr.keys]
            b_have = [qr for qr in b_runs if key in qr.keys]
            if not a_have or not b_have:
                results.append((name, one_sided(key, (a_have or a_runs)[0], (b_have or b_runs)[0], threshold)))
                continue
            buckets, rows = stack(a_runs + b_runs, key)
            a, b = rows[:len(a_runs)], rows[len(a_runs):]
            if runs[0].kind == "heatmap":
                results.append((name, compare_rounds_histograms(key, a, b, buckets, prof.metrics, confidence)))
                series[(name, key)] = (interval_metric(a, buckets, "p99"), interval_metric(b, buckets, "p99"))
            elif runs[0].kind == "counter":
                results.append((name, compare_rounds_counts(key, a, b, confidence)))
    return judge(results, threshold, confidence, correction), series
