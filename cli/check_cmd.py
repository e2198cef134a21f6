"""`strata check`: did a change move the latency distribution? The commands only:
the checks themselves are the library in checks/ (baselines.py: a candidate against
stored runs; run.py: measure a profile, then that; ab.py: two builds side by side).
Exit codes: 0 same or better, 1 regression, 2 error (one line on stderr), 3 inconclusive
(`check ab` only: its noise floor could not rule out a threshold-sized change).
"""
import os
import sys

import click

from strata.checks import profile
from strata.cli.writable import check_writable
from strata.checks.ab import AbSettings, run_ab
from strata.checks.baselines import compare_archives, few_baselines_warning, parse_percent
from strata.checks.compare import CORRECTIONS, METRICS
from strata.checks.errors import FAILURES
from strata.checks.report import emit
from strata.checks.run import run_profile
from strata.datasets import catalogue, names
from strata.datasets.errors import ArchiveError
from strata.heatmaps import json_out
from strata.lab.logs import say


def _outcome(command: str, work):
    """Runs work(); its Verdict is printed and decides the exit status, a one-line error
    exits 2 and Ctrl-C 130, after everything the check started is stopped."""
    try:
        return work()
    except KeyboardInterrupt:
        say(command, "interrupted; everything it started has been stopped and removed")
        sys.exit(130)
    except FAILURES as e:
        say(command, str(e))
        sys.exit(2)


def _writable_reports(command: str, junit, markdown):
    """A --junit or --markdown file that cannot be written: one line and exit 2 before
    the check runs (`check ab` runs for minutes), not a traceback after it."""
    for path in (junit, markdown):
        if path:
            try:
                check_writable(path)
            except click.ClickException as e:
                say(command, e.message)
                sys.exit(2)


def _check_document(body: dict) -> str:
    return json_out.dumps(json_out.document("check", body))


def _report(verdict, as_json, junit, markdown):
    sys.exit(emit(verdict, _check_document if as_json else None, junit, markdown))


@click.group(invoke_without_command=True)
@click.option("--baseline", "baselines", multiple=True, type=click.Path(dir_okay=False),
              help="Archive of a reference run (repeatable: 3+ runs let their spread enter the test).")
@click.option("--candidate", type=click.Path(dir_okay=False), help="Archive of the run under test.")
@click.option("--dataset", "datasets", multiple=True, help="Compare only this dataset (repeatable). Default: all in both.")
@click.option("--metric", "metrics", default=",".join(METRICS), show_default=True,
              help="Per-run metrics to test, comma-separated (p50, p99, p99.9, mean).")
@click.option("--threshold", default="5%", show_default=True, help="Smallest change that counts as a regression.")
@click.option("--confidence", default=0.99, show_default=True, type=click.FloatRange(0.5, 0.9999),
              help="Confidence required before calling a change.")
@click.option("--correction", type=click.Choice(CORRECTIONS), default="bh", show_default=True,
              help="Multiple-comparison control over all datasets, keys and metrics: "
                   "Benjamini-Hochberg or Holm.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Also write JUnit XML here.")
@click.option("--markdown", type=click.Path(dir_okay=False), help="Also write a Markdown summary here.")
@click.pass_context
def check(ctx, baselines, candidate, datasets, metrics, threshold, confidence, correction, as_json, junit,
          markdown):
    """Compare the latency distributions of a run with stored baseline runs.

    Each run gives one value per metric (p50, p99, p99.9, mean of its pooled
    histogram, and a shape distance on log latency that catches a new slow
    mode when p99 does not move). With 3+ baseline runs the candidate is
    tested against their spread (t prediction interval), with Benjamini-Hochberg
    or Holm control over all datasets, keys and metrics. With fewer baseline
    runs no significance can be claimed: a warning is printed and changes are
    called on the threshold alone. For a verdict that holds on a noisy machine,
    use `strata check ab` (interleaved rounds of both builds).

    Exits 0 when nothing got worse, 1 on a regression, 2 on an error.
    """
    if ctx.invoked_subcommand:
        return
    if not baselines or not candidate:
        raise click.UsageError("give --baseline FILE and --candidate FILE (or use `strata check run`)")
    _writable_reports("check", junit, markdown)
    statistics = catalogue.by_name()
    for name in datasets:   # a typo (nfs.ops[op=reed], nfs.opz) is named as `datasets create` names it
        try:
            names.check_values(names.parse(name, statistics), statistics, allow_absent_device=True)
        except ArchiveError as e:
            raise click.BadParameter(str(e), param_hint="--dataset") from None
    metric_list = [m.strip() for m in metrics.split(",") if m.strip()]
    unknown = [m for m in metric_list if m not in METRICS]
    if unknown:
        raise click.BadParameter(f"unknown metric {unknown[0]!r}; choose from {', '.join(METRICS)}", param_hint="--metric")

    if any(os.path.exists(b) and os.path.exists(candidate) and os.path.samefile(b, candidate) for b in baselines):
        say("check", f"warning: the candidate {candidate} is also a baseline: a run compared with itself is "
                     "always 'same'; give the archive of another run as --candidate")

    def work():
        pct = parse_percent(threshold)
        verdict = compare_archives(list(baselines), candidate, datasets, metric_list, pct, confidence, correction)
        warning = few_baselines_warning(len(baselines), pct)
        if warning:
            say("check", warning)
        return verdict
    _report(_outcome("check", work), as_json, junit, markdown)


@check.command("run")
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
    _writable_reports("check run", junit, markdown)
    verdict = _outcome("check run", lambda: run_profile(profile_path, list(baselines), update_baseline, output))
    if verdict is None:
        sys.exit(0)
    _report(verdict, as_json, junit, markdown)


@check.command("ab")
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
@click.option("--mode", type=click.Choice(profile.AB_MODES),
              help="duet: A and B serve at once, every request sent to both; rounds: they take turns "
                   "(default: the profile's [ab], duet).")
@click.option("--seconds", type=click.IntRange(6, 86400),
              help="duet: measured seconds, split over the pairs (default 28).")
@click.option("--block-seconds", type=click.IntRange(1, 3600), help="duet: seconds per block (default 1).")
@click.option("--pairs", type=click.IntRange(1, 100), help="duet: fresh pairs of engines (or servers), one after another, judged "
              "across (default 14; 1: one pair, judged on its blocks).")
@click.option("--rounds", type=click.IntRange(6, 1000), help="rounds: rounds in all, even (default 24).")
@click.option("--round-seconds", type=click.IntRange(2, 3600), help="rounds: measured seconds per round (default 5).")
@click.option("--early-stop/--no-early-stop", default=None,
              help="duet: stop once the p50 is decided (default on).")
@click.option("--threshold", help="Smallest change that counts (default: the profile's [ab], 2%).")
@click.option("--confidence", type=click.FloatRange(0.5, 0.9999), help="Default: the profile's [ab], 0.99.")
@click.option("--correction", type=click.Choice(CORRECTIONS), help="Multiple-comparison control (default bh).")
@click.option("-o", "--output", type=click.Path(file_okay=False), help="Keep the measured archives in this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Also write JUnit XML here.")
@click.option("--markdown", type=click.Path(dir_okay=False), help="Also write a Markdown summary here.")
def ab(profile_path, a_path, b_path, a_rev, b_rev, a_server, b_server, server_export, repo, b_delays, output,
       as_json, junit, markdown, **design):
    """Run A and B under PROFILE's load and judge B against A.

    In duet mode (the default) both serve at the same time and strata-load sends
    every READ to both, back to back in a random order, one request in flight
    per client; each block of seconds gives one B/A ratio per metric. In rounds
    mode they take turns (ABBA... rounds) and each pair of adjacent rounds gives
    one ratio. A test across the duet's pairs (below), or with --pairs 1 and in
    rounds a sign-flip permutation test over the blocks or round pairs, gives
    each metric's p-value and interval (p50, p99, p99.9, mean, shape; rate for
    counters), adjusted over all datasets, keys and metrics. B is worse where
    the adjusted p-value is below 1 - confidence and the effect exceeds the
    threshold. Needs root (BPF probes).

    A side given as --a-server/--b-server CMD is a server other than the engine:
    strata fills {nfsport}, {mountport}, {dir} and {export} in CMD (and in any
    @FILE word, a config template copied into {dir}), runs it with sh, waits for
    it to listen on 127.0.0.1:{nfsport}, and measures both sides from the wire
    (wire.* datasets; the profile's nfs.ops/latency/size are read as wire.*).
    Duet mode needs {mountport} in each server's command or template.

    The p50 interval is the check's noise floor: a key is "same" only when its
    interval lies inside +-threshold, else "inconclusive" unless it is worse or
    better. A duet runs --pairs fresh pairs of engine processes one after
    another and judges across them (each pair keeps a bias of its own), with a
    20 %-trimmed t-test over the pairs' means; it looks after half its pairs and
    at the end, spending the error rate O'Brien-Fleming-style (nearly all of it
    at the end), and stops at the first that decides.

    Exits 0 when nothing got worse, 1 on a regression, 2 on an error, 3 when
    inconclusive (the floor is too high for the threshold: run longer or on a
    quieter machine).
    """
    _writable_reports("check ab", junit, markdown)
    sides = {"A": (a_path, a_rev, a_server), "B": (b_path, b_rev, b_server)}
    verdict = _outcome("check ab", lambda: run_ab(AbSettings.build(profile_path, sides, design, b_delays,
                                                                   server_export, repo, output)))
    _report(verdict, as_json, junit, markdown)
