"""A candidate run against stored baseline runs (`strata check`, `strata check run`):
dataset by dataset and key by key, each run reduced to one value per metric
(checks/compare_runs.py); a key only one side has is judged by its share of events.
With 3+ baseline runs their spread is the noise of the test; with fewer no
significance can be claimed, which few_baselines_warning says."""
import numpy as np

from strata.checks.compare import KeyVerdict, align_buckets, interval_metric, judge, stack
from strata.checks.compare_runs import MIN_RUNS, compare_runs_counts, compare_runs_histograms
from strata.checks.errors import CheckError
from strata.checks.report import Verdict
from strata.datasets import derive
from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError

NEW_KEY_SHARE = 0.01   # a key only one run has is a change when it holds this share of its events


def parse_percent(text: str) -> float:
    """'2%' or '0.02' -> 0.02; CheckError on anything else."""
    text = str(text).strip()
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise CheckError(f"{text!r} is not a number or a percentage") from None


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


def few_baselines_warning(n: int, threshold: float) -> str | None:
    """The warning printed when n baseline runs are too few for a significance test."""
    if n >= MIN_RUNS:
        return None
    return (f"warning: {n} baseline run{'s' if n > 1 else ''}: the spread between runs is unknown, so no "
            f"significance is claimed and changes are called on the threshold ({threshold:.0%}) alone; it must "
            f"exceed the run-to-run spread measured on this machine (bench/check_ab_power.py). Give {MIN_RUNS}+ "
            f"--baseline runs, or use `strata check ab`.")


def _whole(path: str, name: str, side: str):
    """All the data of dataset `name` in the archive at path: held, or derived from a dataset
    it holds (datasets/derive.py: nfs.latency summed from nfs.latency[op])."""
    with Archive.open(path) as ar:
        try:
            source = derive.resolve(ar, name)
        except ArchiveError:
            raise ArchiveError(f"dataset {name!r} is not in the {side} archive {path}, nor derivable from "
                               "one it holds (a breakdown of it)") from None
        return derive.reduce(ar.query_whole(source.info.name), source)


def compare_archives(baselines: list, candidate: str, datasets, metrics, threshold, confidence,
                     correction="bh") -> Verdict:
    """The candidate archive judged against the baseline archives, over the datasets named
    (default: every dataset all of them hold; a name given may be derived, as views derive it).
    ArchiveError for an unreadable archive or a dataset one of them can neither read nor derive."""
    names_of = {}
    for path in [*baselines, candidate]:
        with Archive.open(path) as ar:
            names_of[path] = {d.name for d in ar.datasets()}
    names = list(datasets) or sorted(set.intersection(*names_of.values()))
    if not names:
        raise ArchiveError("the archives have no dataset in common")
    results, series = [], {}
    for name in names:
        bases = [_whole(path, name, "baseline") for path in baselines]
        cand = _whole(candidate, name, "candidate")
        out, s = compare_dataset(name, bases, cand, metrics, threshold, confidence)
        results += out
        series.update(s)
    return Verdict(judge(results, threshold, confidence, correction), series,
                   baselines[0] if len(baselines) == 1 else list(baselines), candidate)
