"""Where the time went (the figure; views/time_went.py reads it): for a family of datasets, per time column, the mean time per op
spent in each of its components, stacked (their sum is the op's mean time end to end),
with each component's own p99 beside it.

Families and components, each from the heat maps of one statistic the archive holds or
derives (any breakdown summed):
  nfsd  network (wire.latency less nfsd.queue and nfsd.latency: the network stack and
        socket around nfsd), queue (nfsd.queue: the call's wait for a thread), service
        (nfsd.latency less the file system's part), file system (nfsd.io.latency less the
        disk's part), disk (disk.queue + disk.latency)
  fs    file system (fs.latency less the disk's part), disk (disk.queue + disk.latency)
  disk  queue (disk.queue), device (disk.latency)
A component's time per op is its events' summed time (each at its bucket's midpoint) in the
column divided by the family's ops there (the events of its first statistic with events: nfsd.latency, fs.latency,
disk.latency); a part nested in another (the disk under the file system, the file system
under nfsd's service) is taken out of the one above it and never exceeds it, since the
disk's time in the same seconds may serve other processes too. A component whose statistic the
archive lacks is left out and named in `missing`.
The network part, per column and op kind the wire's mean less nfsd's queue and service
means, is exact only when the wire view and nfsd count the same ops: their counts over the
range are compared per op kind (where the archive keeps all three by op, else all ops as one;
MOUNT's procedures, which mountd answers, left out of the wire's), and where they differ by
more than the ops of its first and last columns (and SLACK) the part is left out with a line
in `notes` saying so."""
from dataclasses import dataclass, field

import numpy as np

from strata.datasets import llhist

from .breakdown import Breakdown, Row
from .errors import ViewError
from .rebin import column_histograms, percentile_of
from .timebins import collected_seconds

PREFIX = "time:"   # `strata show time:nfsd`
FAMILIES = {
    "nfsd": {"ops": "nfsd.latency", "parts": [("network", ("wire.latency",)), ("queue", ("nfsd.queue",)),
                                              ("service", ("nfsd.latency",)),
                                              ("file system", ("nfsd.io.latency",)),
                                              ("disk", ("disk.queue", "disk.latency"))]},
    "fs": {"ops": "fs.latency", "parts": [("file system", ("fs.latency",)), ("disk", ("disk.queue", "disk.latency"))]},
    "disk": {"ops": "disk.latency", "parts": [("queue", ("disk.queue",)), ("device", ("disk.latency",))]},
}
NESTED = ("service", "file system", "disk")   # each holds the ones after it (when present)
# the part that is the wire's time less nfsd's, the statistics read by op to check they count the same ops
NETWORK = "network"
COUNTED_TOGETHER = ("wire.latency", "nfsd.queue", "nfsd.latency")
SLACK = 2   # ops the views' counts of one kind may differ by over a range beyond its end columns' (below)
MIDPOINTS = llhist.midpoints()


@dataclass
class TimeWent:
    family: str
    mean: Breakdown          # stacked mean ns per op, a series per component
    p99: dict                # component -> (ncols,) p99 ns of its own events per column (NaN: none)
    p99_range: dict          # component -> p99 ns over the whole range
    missing: list            # components whose statistics the archive lacks
    notes: list = field(default_factory=list)   # one line per part left out for another reason


def family_of(text: str) -> str | None:
    """The family a `show` argument names (time:nfsd), or None for a dataset name."""
    if not text.startswith(PREFIX):
        return None
    family = text[len(PREFIX):]
    if family not in FAMILIES:
        raise ViewError(f"no time breakdown for {family!r}; families: "
                        + ", ".join(PREFIX + f for f in FAMILIES))
    return family


def _histograms(qr, bins):
    """(ncols, buckets) summed histograms of a QueryResult over the bins, its buckets and
    itself; None for a statistic the archive lacks."""
    if qr is None:
        return None
    return column_histograms(qr, bins), np.asarray(qr.buckets, dtype=np.int64), qr


def by_op(statistic: str) -> str:
    """The name read to compare a statistic's ops kind by kind (views/time_went.py reads it too)."""
    return f"{statistic}[op]"


def _groups(results: dict, uncounted: frozenset) -> tuple:
    """(QueryResults of COUNTED_TOGETHER, groups of op keys each compared and subtracted as
    one), the ops nfsd never serves (uncounted: MOUNT's procedures) left out: each op kind apart where all three are kept by op, all
    ops as one where nfsd keys COMPOUNDs "compound" (without its module's BTF) and the wire by
    their main op, or where one is kept whole; None when one is missing."""
    qrs = [results.get(by_op(s)) for s in COUNTED_TOGETHER]
    if any(q is None for q in qrs):
        qrs = [results.get(s) for s in COUNTED_TOGETHER]
        return (qrs, [None]) if all(q is not None for q in qrs) else (None, [])
    ops = [[k for k in q.keys if k not in uncounted] for q in qrs]
    if any("compound" in o for o in ops[1:]) and "compound" not in ops[0]:
        return qrs, [ops]
    return qrs, [[[k] if k in o else [] for o in ops] for k in sorted(set().union(*ops))]


def _events_and_time(qr, bins, keys) -> tuple:
    """((ncols,) events, (ncols,) summed ns at bucket midpoints) of qr's keys (None: all)."""
    if keys == [] or not len(qr.buckets):
        return np.zeros(bins.ncols), np.zeros(bins.ncols)
    h = column_histograms(qr, bins, keys)
    return h.sum(axis=1).astype(np.float64), (h * MIDPOINTS[np.asarray(qr.buckets)]).sum(axis=1)


def _network(results: dict, bins, uncounted: frozenset) -> tuple:
    """((ncols,) the network part's summed ns, or None; the note saying why it is None):
    per column and op kind, nfsd's requests times the wire's mean less nfsd.queue's and
    nfsd.latency's means, summed over the kinds, never below zero. Only where the views
    count the same ops over the range, to SLACK plus nfsd's ops in the range's first and last
    columns: each layer's maps are read apart, so a request at either end of the range may
    fall a second (on a stalled machine, a few) apart in the two views."""
    qrs, groups = _groups(results, uncounted)
    if qrs is None:
        return None, f"{NETWORK} left out: it needs nfsd.queue and nfsd.latency beside wire.latency"
    total = np.zeros(bins.ncols)
    for keys in groups:
        parts = [_events_and_time(q, bins, k if keys is not None else None) for q, k in
                 zip(qrs, keys if keys is not None else [None] * len(qrs))]
        counts = [int(n.sum()) for n, _ in parts]
        if max(counts) - min(counts) > SLACK + parts[2][0][0] + (parts[2][0][-1] if bins.ncols > 1 else 0):
            kind = next((f"{k[0]} " for k in keys if len(k) == 1), "") if keys is not None and len(groups) > 1 else ""
            what = ", ".join(f"{s} {n}" for s, n in zip(COUNTED_TOGETHER, counts))
            return None, (f"{NETWORK} left out: the views count different {kind}ops ({what}), so the wire's "
                          "mean less nfsd's is no time of the same ops")
        with np.errstate(divide="ignore", invalid="ignore"):
            means = [np.where(n > 0, t / n, np.nan) for n, t in parts]
            per_op = means[0] - means[1] - means[2]
        total += np.where(np.isfinite(per_op), per_op * parts[2][0], 0)
    return np.maximum(total, 0), None


def build(family: str, bins, results: dict, *, uncounted: frozenset) -> TimeWent:
    """The picture of family over bins from its statistics' QueryResults (views/time_went.py:
    {statistic: QueryResult or None}); uncounted: the op keys the wire sees and nfsd never
    serves, left out of the network part's comparison (views/time_went.py: MOUNT's procedures)."""
    start, end = bins.start, bins.end
    spec = FAMILIES[family]
    totals, p99, p99_range, missing, ops, ops_qr = {}, {}, {}, [], None, None
    for name, statistics in spec["parts"]:
        found = [h for h in (_histograms(results.get(s), bins) for s in statistics) if h is not None]
        if not found:
            missing.append(name)
            continue
        totals[name] = sum((h * MIDPOINTS[b]).sum(axis=1) if b.size else np.zeros(bins.ncols) for h, b, _ in found)
        # the p99 of the component's events (of its last statistic: the device's for the disk)
        h, b, qr = found[-1]
        p99[name] = percentile_of(b, h, 99.0) if b.size else np.full(bins.ncols, np.nan)
        p99_range[name] = float(percentile_of(b, h.sum(axis=0), 99.0)) if b.size else float("nan")
        if statistics[0] == spec["ops"]:
            ops, ops_qr = h.sum(axis=1).astype(np.float64), qr
    if ops is None:
        raise ViewError(f"{PREFIX}{family} needs {spec['ops']} in the archive (its ops); "
                        f"create it with `strata datasets create {spec['ops']}`")
    notes = []
    if NETWORK in totals:   # the wire's time is read above; the part is the wire's less nfsd's
        network, note = _network(results, bins, uncounted)
        if network is None:
            for d in (totals, p99, p99_range):
                d.pop(NETWORK)
            notes.append(note)
        else:
            totals[NETWORK], p99[NETWORK], p99_range[NETWORK] = network, np.full(bins.ncols, np.nan), float("nan")
    # nested parts: each less the ones it holds, never below zero
    present = [n for n in NESTED if n in totals]
    for outer, inner in zip(present, present[1:]):
        inner_total = np.minimum(totals[inner], totals[outer])
        totals[inner] = inner_total
        totals[outer] = totals[outer] - inner_total
    with np.errstate(divide="ignore", invalid="ignore"):
        keys = [n for n, _ in spec["parts"] if n in totals]
        series = np.array([np.where(ops > 0, totals[k] / ops, np.nan) for k in keys])
        whole = {k: totals[k].sum() / ops.sum() if ops.sum() else float("nan") for k in keys}
    rows = [Row(key=k, events=int(ops.sum()), rate=float(whole[k]), share=float("nan"),
                peak=float(np.nanmax(series[i])) if np.isfinite(series[i]).any() else float("nan"))
            for i, k in enumerate(keys)]
    seconds = collected_seconds(ops_qr, bins)
    mean = Breakdown(name=f"{PREFIX}{family}", statistic=spec["ops"], kind="heatmap", unit="ns", by="component",
                     bins=bins, span=(start, end), metric="mean", percentile=99.0, keys=keys, series=series, rows=rows,
                     folded=0, total_keys=len(keys), total_events=int(ops.sum()), style="stacked",
                     collected=None if seconds is None else int(seconds.sum()))
    return TimeWent(family, mean, p99, p99_range, missing, notes)


def to_json(t: TimeWent) -> dict:
    from .breakdown import to_json as breakdown_json

    def num(x):
        return None if not np.isfinite(x) else float(x)
    doc = breakdown_json(t.mean)
    doc["p99"] = [{"key": k, "values": [num(v) for v in t.p99[k]], "whole": num(t.p99_range[k])}
                  for k in t.mean.keys]
    doc["missing"] = t.missing
    doc["notes"] = t.notes
    return doc


def to_csv(t: TimeWent) -> str:
    """A column per component's mean ns per op, then one per component's p99."""
    from .table_csv import graph
    lines = graph(t.mean).split("\n")
    lines[0] += "".join(f",{k} p99" for k in t.mean.keys)
    for c in range(1, len(lines)):
        lines[c] += "".join("," + (f"{t.p99[k][c - 1]:.0f}" if np.isfinite(t.p99[k][c - 1]) else "")
                            for k in t.mean.keys)
    return "\n".join(lines)


def p99_line(t: TimeWent) -> str:
    from .units import format_value
    parts = [f"{k} {format_value(t.p99_range[k], 'ns')}" for k in t.mean.keys if np.isfinite(t.p99_range[k])]
    line = "p99 of each component's own events: " + (", ".join(parts) or "none")
    line += f"; not in the archive: {', '.join(t.missing)}" if t.missing else ""
    return "\n".join([line, *t.notes])


def render_text(t: TimeWent, fmt: str, mode: str, width: int, height: int) -> str:
    """The picture as text: the terminal's stacked graph and table (fmt term), --json or --csv."""
    if fmt == "json":
        from . import json_out
        return json_out.dumps(json_out.document("time_went", to_json(t)))
    if fmt == "csv":
        return to_csv(t)
    from . import term_breakdown
    table = term_breakdown.table(t.mean, mode, width)
    nlines = max(6, min(20, height - 10 - table.count("\n") - 2))
    return "\n".join(term_breakdown.graph(t.mean, mode, width, nlines)) + "\n\n" + table + "\n" + p99_line(t)
