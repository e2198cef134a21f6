"""`strata check`: did a change move the latency distribution?

Compares a candidate archive with one or more baseline archives (written by
`strata datasets archive` or `strata check run -o`) dataset by dataset and key
by key, each run reduced to one value per metric (strata.datasets.compare_runs):
with 3+ baseline runs their spread is the noise of the test; with fewer no
significance can be claimed, says so, and calls changes on the threshold alone.
`strata check ab` (cli/check_ab.py) is the paired A/B design.
Exit codes: 0 same or better, 1 regression, 2 error.
"""
import sys

import click
import numpy as np

from strata.cli import check_report
from strata.cli.archive_option import archive_errors
from strata.datasets.archive import Archive
from strata.datasets.compare import CORRECTIONS, METRICS, KeyVerdict, align_buckets, interval_metric, judge, stack
from strata.datasets.compare_runs import MIN_RUNS, compare_runs_counts, compare_runs_histograms
from strata.datasets.errors import ArchiveError


def _percent(text: str) -> float:
    text = text.strip()
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a number or a percentage")


NEW_KEY_SHARE = 0.01   # a key only one run has is a change when it holds this share of its events


def _per_interval(qr, i) -> np.ndarray:
    """Events of key i in each interval."""
    if qr.kind == "heatmap":
        return qr.counts[i].sum(axis=1)
    return np.nan_to_num(qr.values[i]) if qr.kind == "counter" else np.zeros(len(qr.times))


def _events(qr, i) -> int:
    return int(_per_interval(qr, i).sum())


def one_sided(key: str, base, cand, threshold) -> KeyVerdict:
    """A key that only one run has: a new key carrying a real share of the candidate's
    events (a new tier, client or op) is worse; one that went away is judged by its
    share too, as better; a handful of stray events is the same."""
    side, qr = ("candidate", cand) if key in cand.keys else ("baseline", base)
    i = qr.keys.index(key)
    n, intervals = _events(qr, i), int((_per_interval(qr, i) > 0).sum())
    total = sum(_events(qr, i) for i in range(len(qr.keys))) or 1
    share = n / total
    changed = share >= max(NEW_KEY_SHARE, threshold / 10)
    verdict = ("worse" if side == "candidate" else "better") if changed else "same"
    where = "new in the candidate" if side == "candidate" else "gone from the candidate"
    return KeyVerdict(key, verdict, (0, intervals) if side == "candidate" else (intervals, 0),
                      reason=f"key {where}: {n:,} events, {share:.1%} of the {side}'s")


def compare_dataset(name: str, bases: list, cand, metrics, threshold, confidence):
    """(dataset, KeyVerdict) for every key of one dataset (verdicts still unjudged),
    and per-second p99 series of the first baseline and the candidate for pictures."""
    out, series = [], {}
    keys = sorted(set().union(*(qr.keys for qr in bases)) | set(cand.keys))
    for key in keys:
        having = [qr for qr in bases if key in qr.keys]
        if not having or key not in cand.keys:
            out.append((name, one_sided(key, having[0] if having else bases[0], cand, threshold)))
            continue
        buckets, rows = stack([*bases, cand], key)
        if cand.kind == "heatmap":
            out.append((name, compare_runs_histograms(key, rows[:-1], rows[-1], buckets, metrics, confidence)))
            first = having[0]
            ub, a, b = align_buckets(first.buckets, first.counts[first.keys.index(key)],
                                     cand.buckets, cand.counts[cand.keys.index(key)])
            series[(name, key)] = (interval_metric(a, ub, "p99"), interval_metric(b, ub, "p99"))
        elif cand.kind == "counter":
            out.append((name, compare_runs_counts(key, rows[:-1], rows[-1], confidence)))
    return out, series


def warn_few_baselines(n: int, threshold: float):
    if n < MIN_RUNS:
        click.echo(f"strata check: warning: {n} baseline run{'s' if n > 1 else ''}: the spread between runs is "
                   f"unknown, so no significance is claimed and changes are called on the threshold "
                   f"({threshold:.0%}) alone; it must exceed the run-to-run spread measured on this machine "
                   f"(bench/check_ab.py). Give {MIN_RUNS}+ --baseline runs, or use `strata check ab`.", err=True)


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
    metric_list = [m.strip() for m in metrics.split(",") if m.strip()]
    unknown = [m for m in metric_list if m not in METRICS]
    if unknown:
        raise click.BadParameter(f"unknown metric {unknown[0]!r}; choose from {', '.join(METRICS)}", param_hint="--metric")
    pct = _percent(threshold)
    results, series = run_comparison(baselines, candidate, datasets, metric_list, pct, confidence, correction)
    warn_few_baselines(len(baselines), pct)
    report(results, series, baselines[0] if len(baselines) == 1 else list(baselines), candidate, as_json, junit,
           markdown)


def run_comparison(baselines, candidate, datasets, metrics, threshold, confidence, correction="bh"):
    """Judged (dataset, KeyVerdict) pairs and p99 series; an archive that cannot be read,
    or datasets missing, are one-line errors with exit status 2."""
    with archive_errors(exit_code=2):
        return _compare_archives(baselines, candidate, datasets, metrics, threshold, confidence, correction)


def _compare_archives(baselines, candidate, datasets, metrics, threshold, confidence, correction):
    names_of = {}
    for path in [*baselines, candidate]:
        with Archive.open(path) as ar:
            names_of[path] = {d.name for d in ar.datasets()}
    names = list(datasets) or sorted(set.intersection(*names_of.values()))
    if not names:
        raise ArchiveError("the archives have no dataset in common")
    results, series = [], {}
    for name in names:
        for path, have in names_of.items():
            if name not in have:
                side = "candidate" if path == candidate else "baseline"
                raise ArchiveError(f"dataset {name!r} is not in the {side} archive {path}")
        bases = []
        for path in baselines:
            with Archive.open(path) as ar:
                bases.append(ar.query_whole(name))
        with Archive.open(candidate) as ar:
            cand = ar.query_whole(name)
        out, s = compare_dataset(name, bases, cand, metrics, threshold, confidence)
        results += out
        series.update(s)
    return judge(results, threshold, confidence, correction), series


def report(results, series, baseline, candidate, as_json, junit, markdown, unit="runs", extra=None):
    if as_json:
        click.echo(check_report.as_json(results, baseline, candidate, extra))
    else:
        from rich.console import Console
        check_report.print_table(results, Console(), unit)
    if junit:
        check_report.write_junit(results, junit)
    if markdown:
        check_report.write_markdown(results, markdown, series)
    verdict = check_report.overall(results)
    sys.exit({"worse": 1, "error": 2}.get(verdict, 0))


from strata.cli.check_run import run as _check_run  # noqa: E402  `strata check run` (cli/check_run.py)
from strata.cli.check_ab import ab as _check_ab      # noqa: E402  `strata check ab` (cli/check_ab.py)
check.add_command(_check_run)
check.add_command(_check_ab)
