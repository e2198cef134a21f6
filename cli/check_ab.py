"""`strata check ab`: two engines (or servers) under one profile's load, judged B
against A, in one of two modes:

- duet (the default, cli/check_duet.py): both serve at the same time and every
  request goes to both back to back; judged on short simultaneous blocks.
- rounds (this file): alternating short rounds (A B B A A B ...), one archive
  per round, judged on the pairs of adjacent rounds. For builds that cannot
  run side by side.

Both engines run side by side for the whole check, each on its own fresh pool
with its own collector (pointed at its pid), started in a random order. In
rounds mode the working set is written to each and warmed once, then the
rounds alternate so that the drift of a shared machine falls on both sides of
every pair. Each round's measured seconds are exported as a self-contained
archive (kept with -o DIR), and the statistics (strata.datasets.compare_rounds)
are computed from those archives alone.
Exit codes as `strata check`: 0 same or better, 1 regression, 2 error.

A side may instead be a server that is not the engine (--a-server CMD,
cli/check_servers.py). Then both sides are measured through the wire layer
(TC on lo, each collector following only its own side's ports), and the
profile's nfs.* datasets are read as their wire.* equivalents.
"""
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import click

from strata.cli import check_engines, check_profile, check_servers
from strata.cli.check_progress import CheckProgress
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
    label: str           # what the user gave: a path, a revision or a server command
    binary: str | None   # None: a foreign server
    work: Path
    delays: dict
    server: check_servers.Server | None = None
    export: str = EXPORT
    archive: str = ""
    host: str = ""
    ports: tuple = ()
    coll: Collection | None = None
    pid: int | None = None   # the server's process


@click.command("ab")
@click.option("--profile", "profile_path", required=True, type=click.Path(dir_okay=False),
              help="The profile (TOML): engine, load, datasets; [ab] sets the mode, its length and thresholds.")
@click.option("--a", "a_path", help="Engine A: a strata-engine binary or a build folder.")
@click.option("--b", "b_path", help="Engine B: a strata-engine binary or a build folder.")
@click.option("--a-rev", help="Engine A from this git revision, built in a temporary folder.")
@click.option("--b-rev", help="Engine B from this git revision, built in a temporary folder.")
@click.option("--a-server", help="Side A is this server command instead of an engine; it must listen on "
              "127.0.0.1:{nfsport} (placeholders {nfsport} {mountport} {dir} {export}, @TEMPLATE files).")
@click.option("--b-server", help="Side B is this server command (as --a-server).")
@click.option("--server-export", metavar="PATH", help="The path clients mount on a --a/--b-server "
              "(default {dir}/export, made world-writable).")
@click.option("--repo", default=".", show_default=True, help="The git checkout --a-rev/--b-rev come from.")
@click.option("--b-inject-delay", "b_delays", multiple=True, metavar="TIER:DUR",
              help="Plant a regression in B: `strata-engine ctl inject-delay TIER DUR` (e.g. nfs:20us).")
@click.option("--mode", type=click.Choice(check_profile.AB_MODES),
              help="duet: A and B serve at once, every request sent to both; rounds: they take turns "
                   "(default: the profile's [ab], duet).")
@click.option("--seconds", type=click.IntRange(6, 86400), help="duet: measured seconds (default 60).")
@click.option("--block-seconds", type=click.IntRange(1, 3600), help="duet: seconds per block (default 1).")
@click.option("--rounds", type=click.IntRange(6, 1000), help="rounds: rounds in all, even (default 24).")
@click.option("--round-seconds", type=click.IntRange(2, 3600), help="rounds: measured seconds per round (default 5).")
@click.option("--threshold", help="Smallest change that counts (default: the profile's [ab], 2%).")
@click.option("--confidence", type=click.FloatRange(0.5, 0.9999), help="Default: the profile's [ab], 0.99.")
@click.option("--correction", type=click.Choice(CORRECTIONS), help="Multiple-comparison control (default bh).")
@click.option("-o", "--output", type=click.Path(file_okay=False), help="Keep the measured archives in this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Also write JUnit XML here.")
@click.option("--markdown", type=click.Path(dir_okay=False), help="Also write a Markdown summary here.")
def ab(profile_path, a_path, b_path, a_rev, b_rev, a_server, b_server, server_export, repo, b_delays, mode, seconds,
       block_seconds, rounds, round_seconds, threshold, confidence, correction, output, as_json, junit, markdown):
    """Run A and B under PROFILE's load and judge B against A.

    In duet mode (the default) both serve at the same time and strata-load sends
    every READ to both, back to back in a random order, one request in flight
    per client; each block of seconds gives one B/A ratio per metric. In rounds
    mode they take turns (ABBA... rounds) and each pair of adjacent rounds gives
    one ratio. Either way a sign-flip permutation test over the blocks or pairs
    gives each metric's p-value and interval (p50, p99, p99.9, mean, shape; rate
    for counters), adjusted over all datasets, keys and metrics. B is worse where
    the adjusted p-value is below 1 - confidence and the effect exceeds the
    threshold. Needs root (BPF probes).

    A side given as --a-server/--b-server CMD is a server other than the engine:
    strata fills {nfsport}, {mountport}, {dir} and {export} in CMD (and in any
    @FILE word, a config template copied into {dir}), runs it with sh, waits for
    it to listen on 127.0.0.1:{nfsport}, and measures both sides from the wire
    (wire.* datasets; the profile's nfs.ops/latency/size are read as wire.*).
    Duet mode needs {mountport} in each server's command or template.

    Exits 0 when nothing got worse, 1 on a regression, 2 on an error.
    """
    from strata.cli.check_cmd import _percent, report
    try:
        prof = check_profile.load(profile_path)
        given = (("mode", mode), ("seconds", seconds), ("block_seconds", block_seconds), ("rounds", rounds),
                 ("round_seconds", round_seconds), ("threshold", threshold), ("confidence", confidence),
                 ("correction", correction))
        settings = {**prof.ab, **{k: v for k, v in given if v is not None}}
        pct = _percent(settings["threshold"])
        delays = parse_delays(b_delays)
    except (check_profile.ProfileError, click.BadParameter) as e:
        _fail(str(e.format_message() if isinstance(e, click.BadParameter) else e))
    duet = settings["mode"] == "duet"
    if not duet and settings["rounds"] % 2:
        _fail(f"--rounds must be even (pairs of A and B rounds), not {settings['rounds']}")
    if duet and settings["block_seconds"] * 6 > settings["seconds"]:
        _fail(f"--seconds {settings['seconds']} holds fewer than 6 blocks of {settings['block_seconds']}s")
    if duet and prof.load.get("profile") != "randread":
        _fail(f"duet mode sends each READ to both sides: it needs a randread load, not "
              f"{prof.load.get('profile')!r} (use --mode rounds)")
    if prof.server is not None:
        _fail("check ab starts both engines itself: give a profile with [engine], not [server]")
    servers = {"A": a_server, "B": b_server}
    for side, path, rev in (("A", a_path, a_rev), ("B", b_path, b_rev)):
        if sum(map(bool, (path, rev, servers[side]))) != 1:
            s = side.lower()
            _fail(f"give side {side} as --{s} PATH, --{s}-rev REV or --{s}-server CMD (one of them)")
    if delays and b_server:
        _fail("--b-inject-delay needs B to be an engine, not --b-server")
    if a_server or b_server:
        try:
            prof.datasets = check_servers.wire_datasets(prof.datasets)
        except check_servers.ServerError as e:
            _fail(str(e))
    if os.geteuid() != 0:
        _fail("needs root (BPF probes); run it with sudo")

    scratch = Path(tempfile.mkdtemp(prefix="strata-check-ab-"))
    outdir = Path(output) if output else scratch / ("duet" if duet else "rounds")
    try:
        try:
            outdir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            _fail(f"cannot make {outdir}: {e.strerror}")
        sides = _sides(a_path, b_path, a_rev, b_rev, servers, server_export, repo, delays, scratch)
        if duet and any(s.server and not s.server.uses_mountport for s in sides.values()):
            _fail("duet mode connects to both servers itself: put {mountport} in each --a/--b-server "
                  "command or template (or use --mode rounds)")
        try:
            with Teardown() as undo:
                if duet:
                    from strata.cli import check_duet   # it builds on this module's sides
                    results, series, extra = check_duet.run(prof, sides, settings, pct, undo, outdir,
                                                            bool(output))
                else:
                    results, series, extra = _rounds(prof, sides, settings, pct, undo, outdir, bool(output))
        except KeyboardInterrupt:
            _say("interrupted; everything it started has been stopped and removed")
            sys.exit(130)
        except (*FAILURES, check_servers.ServerError) as e:
            _fail(str(e))
        except ArchiveError as e:
            _fail(str(e))
        extra = {**extra, "threshold": pct, "confidence": settings["confidence"],
                 "correction": settings["correction"], "b_inject_delay": delays}
        report(results, series, sides["A"].label, sides["B"].label, as_json, junit, markdown,
               unit="blocks" if duet else "rounds", extra=extra)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _sides(a_path, b_path, a_rev, b_rev, servers, server_export, repo, delays, scratch) -> dict:
    """Side A and side B: engines from a path or a revision, or server commands."""
    sides = {}
    for name, path, rev, d in (("A", a_path, a_rev, {}), ("B", b_path, b_rev, delays)):
        work = scratch / name
        work.mkdir()
        try:
            if servers[name]:
                sides[name] = Side(name, servers[name], None, work, d,
                                   check_servers.Server(name, servers[name], work, server_export))
                continue
            if rev:
                _say(f"building engine {name} from {rev}")
                binary = check_engines.build_revision(check_engines.repo_root(repo), rev, scratch / f"src-{name}")
            else:
                binary = check_engines.from_path(path)
        except (check_engines.EngineSourceError, check_servers.ServerError) as e:
            _fail(str(e))
        sides[name] = Side(name, rev or path, binary, work, d)
    return sides


def _rounds(prof, sides, settings, pct, undo, outdir, keep) -> tuple:
    """Rounds mode: measures, exports one archive per round, judges the pairs."""
    order = round_order(settings["rounds"])
    windows = measure(prof, sides, order, settings, undo)
    archives = export_rounds(prof, sides, windows, outdir)
    results, series = judge_rounds(prof, archives, order, pct, settings["confidence"], settings["correction"])
    tests = sum(len(kv.metrics) for _, kv in results)
    needed = min_pairs(settings["confidence"], max(tests, 1))
    if len(order) // 2 < needed:
        _say(f"warning: {len(order) // 2} pairs cannot reach confidence {settings['confidence']} over "
             f"{tests} tests when one metric moves alone; {2 * needed}+ rounds can")
    return results, series, {"design": "ab", "mode": "rounds", "order": order,
                             "rounds": [str(a) if keep else a.name for a in archives]}


def start_sides(prof, sides: dict, undo):
    """Starts both sides and their collectors, in a random order (so neither side is
    always the one started first on a fresh machine), and waits for their first data."""
    options = {k: v for k, v in prof.load.items() if k != "setup"}
    wire = any(s.server for s in sides.values())
    for s in random.sample(list(sides.values()), len(sides)):
        if s.server:
            undo.callback(s.server.stop)
            s.server.start()
            s.host, s.ports, s.export, pid = check_servers.HOST, s.server.ports(), s.server.export, None
            s.pid = s.server.proc.pid
        else:
            s.host, nfsport, mountport, _, pid = private_engine(prof, s.work, undo, s.binary, s.delays)
            s.ports, s.pid = (nfsport, mountport), pid
        s.archive = str(s.work / "collect.db")
        create_datasets(s.archive, prof.datasets)
        s.coll = Collection(s.work, s.archive, pid, _wire_options(s, options) if wire else ()).start()
        undo.callback(s.coll.stop)
    for s in sides.values():
        s.coll.wait_for_data(prof.datasets[0])


def measure(prof, sides: dict, order: str, settings: dict, undo) -> list:
    """Starts both sides, writes and warms the working sets, runs the rounds; returns
    (side, start, end, strata-load's report) of each round."""
    options = {k: v for k, v in prof.load.items() if k != "setup"}
    start_sides(prof, sides, undo)
    for s in sides.values():
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
    with CheckProgress("rounds", len(order), warm + seconds + 2) as progress:
        for r, name in enumerate(order):
            began, sent = _run_load(sides[name], options, warm + seconds + 1, f"round{r + 1}", sides)
            start = math.ceil(began) + warm
            windows.append((name, start, start + seconds, sent))
            progress.update(r + 1, running_estimate(prof, sides, windows) if r % 2 else None)
    time.sleep(max(0.0, windows[-1][2] + 1.5 - time.time()))   # the collectors write second end-1
    for s in sides.values():
        s.coll.stop()
    return windows


def running_estimate(prof, sides: dict, windows: list):
    """(metric, effect, low, high) of p50 over the pairs of rounds done so far, read from the
    live archives: the mean log ratio with a normal 95% interval (a progress figure only; the
    verdict's test is compare_rounds'). The last round's final second may still be missing."""
    name = next((n for n in prof.datasets if ".latency" in n), None)
    if name is None or len(windows) < 6:
        return None
    d = []
    try:
        for k in range(0, len(windows) - 1, 2):
            values = {}
            for side, start, end, _ in windows[k:k + 2]:
                with Archive.open(sides[side].archive) as ar:
                    qr = ar.query(name, start, end)
                if not len(qr.buckets):
                    return None
                busiest = int(qr.counts.sum(axis=(1, 2)).argmax())
                pooled = qr.counts[busiest].sum(axis=0)[None]
                values[side] = float(interval_metric(pooled, qr.buckets, "p50")[0])
            d.append(math.log(values["B"] / values["A"]))
            if not math.isfinite(d[-1]):
                return None
    except (ArchiveError, ValueError, ZeroDivisionError):
        return None
    mean = sum(d) / len(d)
    half = 1.96 * math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1) / len(d))
    return "p50", math.expm1(mean), math.expm1(mean - half), math.expm1(mean + half)


def _wire_options(side: Side, options: dict) -> list:
    """The wire layer on lo (and the client namespaces' veths), following this side's ports only."""
    ifaces = ["lo"] + (["stl*"] if options.get("netns") else [])
    return [a for p in side.ports if p for a in ("--wire-port", p)] + [a for i in ifaces for a in ("--wire-iface", i)]


def _args(side: Side, options: dict) -> list:
    nfsport, mountport = side.ports
    return arguments(side.host, nfsport, mountport, side.export, options)


def _run_load(side: Side, options: dict, duration: int, tag: str, sides: dict) -> tuple:
    """Runs the load against one side for `duration` seconds; returns when it began and its report."""
    began = time.time()
    load = Load(side.work, tag).start(_args(side, {**options, "duration": duration}))
    try:
        while load.running():
            time.sleep(0.25)
            for s in sides.values():
                s.coll.check()
                if s.server:
                    s.server.check()
        report = load.wait(timeout=60)
    finally:
        load.stop()
    return began, report


def export_rounds(prof, sides: dict, windows: list, outdir: Path) -> list:
    """round-NN-S.archive per round, with strata-load's report of that round (the whole
    load, warm-up second included) beside it as round-NN-S.load.json."""
    out = []
    for r, (name, start, end, sent) in enumerate(windows):
        dest = outdir / f"round-{r + 1:02d}-{name}.archive"
        export_window(sides[name].archive, prof.datasets, start, end, str(dest))
        dest.with_suffix(".load.json").write_text(json.dumps(sent, indent=1))
        out.append(dest)
    return out


def whole(path, name):
    """All of dataset name in the archive file at path."""
    with Archive.open(str(path)) as ar:
        return ar.query_whole(name)


def judge_rounds(prof, archives: list, order: str, threshold: float, confidence: float, correction: str):
    """Reads the round archives back and judges B against A pair by pair."""
    from strata.cli.check_cmd import one_sided
    a_idx = [i for i, s in enumerate(order) if s == "A"]
    b_idx = [i for i, s in enumerate(order) if s == "B"]   # pair k: a_idx[k] with b_idx[k], adjacent
    results, series = [], {}
    for name in prof.datasets:
        runs = [whole(path, name) for path in archives]
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
