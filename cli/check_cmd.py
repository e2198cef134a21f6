"""`strata check`: did a change move the latency distribution?

Compares two archives (written by `strata datasets archive`) dataset by dataset
and key by key with the statistics of strata.datasets.compare, and prints a
verdict per key. Exit codes: 0 same or better, 1 regression, 2 error.
"""
import sys

import click
import numpy as np

from strata.cli import check_report
from strata.cli.archive_option import open_archive
from strata.datasets.archive import Archive
from strata.datasets.compare import METRICS, KeyVerdict, align_buckets, compare_counts, compare_histograms, interval_metric
from strata.datasets.errors import ArchiveError


def _percent(text: str) -> float:
    text = text.strip()
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a number or a percentage")


def _whole(archive: Archive, name: str):
    first, last = archive.extent(name)
    return archive.query(name, first, last + 1)


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


def compare_dataset(name: str, base, cand, metrics, threshold, confidence):
    """(dataset, KeyVerdict) for every key of one dataset, and p99 series for pictures."""
    out, series = [], {}
    keys = sorted(set(base.keys) | set(cand.keys))
    for key in keys:
        if key not in base.keys or key not in cand.keys:
            out.append((name, one_sided(key, base, cand, threshold)))
            continue
        i, j = base.keys.index(key), cand.keys.index(key)
        if base.kind == "heatmap":
            buckets, a, b = align_buckets(base.buckets, base.counts[i], cand.buckets, cand.counts[j])
            out.append((name, compare_histograms(key, a, b, buckets, metrics, threshold, confidence)))
            series[(name, key)] = (interval_metric(a, buckets, "p99"), interval_metric(b, buckets, "p99"))
        elif base.kind == "counter":
            out.append((name, compare_counts(key, base.values[i], cand.values[j], threshold, confidence)))
    return out, series


@click.group(invoke_without_command=True)
@click.option("--baseline", type=click.Path(dir_okay=False), help="Archive of the reference run.")
@click.option("--candidate", type=click.Path(dir_okay=False), help="Archive of the run under test.")
@click.option("--dataset", "datasets", multiple=True, help="Compare only this dataset (repeatable). Default: all in both.")
@click.option("--metric", "metrics", default=",".join(METRICS), show_default=True,
              help="Per-interval metrics to test, comma-separated (p50, p99, p99.9, mean).")
@click.option("--threshold", default="5%", show_default=True, help="Smallest change that counts as a regression.")
@click.option("--confidence", default=0.99, show_default=True, type=click.FloatRange(0.5, 0.9999),
              help="Confidence required before calling a change.")
@click.option("--json", "as_json", is_flag=True, help="Print the verdicts as JSON.")
@click.option("--junit", type=click.Path(dir_okay=False), help="Also write JUnit XML here.")
@click.option("--markdown", type=click.Path(dir_okay=False), help="Also write a Markdown summary here.")
@click.pass_context
def check(ctx, baseline, candidate, datasets, metrics, threshold, confidence, as_json, junit, markdown):
    """Compare the latency distributions of two runs.

    Each dataset and key is judged better, same or worse from per-interval
    percentiles (Mann-Whitney U, bootstrap intervals) and from the shape of
    the whole distribution (Wasserstein distance on log latency, permutation
    test), so a new slow mode is caught even when p99 does not move.

    Exits 0 when nothing got worse, 1 on a regression, 2 on an error.
    """
    if ctx.invoked_subcommand:
        return
    if not baseline or not candidate:
        raise click.UsageError("give --baseline FILE and --candidate FILE (or use `strata check run`)")
    metric_list = [m.strip() for m in metrics.split(",") if m.strip()]
    unknown = [m for m in metric_list if m not in METRICS]
    if unknown:
        raise click.BadParameter(f"unknown metric {unknown[0]!r}; choose from {', '.join(METRICS)}", param_hint="--metric")
    results, series = run_comparison(baseline, candidate, datasets, metric_list, _percent(threshold), confidence)
    report(results, series, baseline, candidate, as_json, junit, markdown)


def run_comparison(baseline, candidate, datasets, metrics, threshold, confidence):
    """Verdicts and p99 series for the datasets of two archives; an archive that cannot be
    read, or datasets missing, are one-line errors with exit status 2."""
    with open_archive(baseline, exit_code=2) as base_ar, open_archive(candidate, exit_code=2) as cand_ar:
        base_names = {d.name for d in base_ar.datasets()}
        cand_names = {d.name for d in cand_ar.datasets()}
        names = list(datasets) or sorted(base_names & cand_names)
        if not names:
            raise ArchiveError("the two archives have no dataset in common")
        results, series = [], {}
        for name in names:
            for side, have in (("baseline", base_names), ("candidate", cand_names)):
                if name not in have:
                    raise ArchiveError(f"dataset {name!r} is not in the {side} archive")
            out, s = compare_dataset(name, _whole(base_ar, name), _whole(cand_ar, name), metrics, threshold, confidence)
            results += out
            series.update(s)
    return results, series


def report(results, series, baseline, candidate, as_json, junit, markdown):
    if as_json:
        click.echo(check_report.as_json(results, baseline, candidate))
    else:
        from rich.console import Console
        check_report.print_table(results, Console())
    if junit:
        check_report.write_junit(results, junit)
    if markdown:
        check_report.write_markdown(results, markdown, series)
    verdict = check_report.overall(results)
    sys.exit({"worse": 1, "error": 2}.get(verdict, 0))


from strata.cli.check_run import run as _check_run  # noqa: E402  `strata check run` (cli/check_run.py)
check.add_command(_check_run)
