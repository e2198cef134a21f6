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
The network part is exact for means only when the wire view and nfsd count the same ops:
their counts are compared per op kind (by op where the archive keeps every one of the three
by op, else whole; MOUNT's procedures, which mountd answers, left out of the wire's), and
where they differ the part is left out with a line in `notes` saying so."""
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
MOUNT_OPS = {"mnt_null", "mnt", "dump", "umnt", "umntall", "export"}   # catalogue/statistics.def: mountd's
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


def _op_counts(qr) -> dict | None:
    """{op: events} of a QueryResult ({"": events} without a breakdown), MOUNT's procedures
    left out; None for a statistic the archive lacks."""
    if qr is None:
        return None
    counts = np.asarray(qr.counts)
    per_key = counts.sum(axis=(1, 2)) if counts.size else np.zeros(len(qr.keys))
    return {k: int(n) for k, n in zip(qr.keys, per_key) if n and k not in MOUNT_OPS}


def _not_the_same_ops(results: dict) -> str | None:
    """Why the wire view and nfsd do not count the same ops (one line), or None when they do:
    by op where all three statistics are kept by op (a COMPOUND nfsd keys "compound", without
    its module's BTF, is keyed by its main op on the wire: then by their totals), else whole."""
    keyed = [_op_counts(results.get(by_op(s))) for s in COUNTED_TOGETHER]
    if any(c is None for c in keyed) or any("compound" in c for c in keyed[1:]) and "compound" not in keyed[0]:
        keyed = [{"all": sum(c.values())} for c in (_op_counts(results.get(s)) for s in COUNTED_TOGETHER)]
    for op in sorted(set().union(*keyed)):
        counts = [c.get(op, 0) for c in keyed]
        if len(set(counts)) > 1:
            what = ", ".join(f"{s} {n}" for s, n in zip(COUNTED_TOGETHER, counts))
            return (f"{NETWORK} left out: the views count different {op} ops ({what}), so the wire's mean "
                    "less nfsd's is no time of the same ops")
    return None


def _network(totals: dict, p99: dict, p99_range: dict, results: dict, bins) -> str | None:
    """The network part in place of the wire's whole time in totals (the wire's time, MOUNT's
    left out where kept by op, less nfsd's queue and service, per column, never below zero),
    or None and the part taken out; returns the note saying why it was taken out."""
    if NETWORK not in totals:
        return None
    why = None if "queue" in totals else f"{NETWORK} left out: it needs nfsd.queue beside wire.latency"
    why = why or _not_the_same_ops(results)
    if why:
        for d in (totals, p99, p99_range):
            d.pop(NETWORK)
        return why
    wire = results.get(by_op(COUNTED_TOGETHER[0]))
    if wire is not None and len(wire.buckets):
        keys = [k for k in wire.keys if k not in MOUNT_OPS]
        totals[NETWORK] = (column_histograms(wire, bins, keys) * MIDPOINTS[np.asarray(wire.buckets)]).sum(axis=1)
    totals[NETWORK] = np.maximum(totals[NETWORK] - totals["queue"] - totals["service"], 0)
    p99[NETWORK] = np.full(len(totals[NETWORK]), np.nan)   # no events of its own
    p99_range[NETWORK] = float("nan")
    return None


def build(family: str, bins, results: dict) -> TimeWent:
    """The picture of family over bins from its statistics' QueryResults (views/time_went.py:
    {statistic: QueryResult or None})."""
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
    notes = [n for n in [_network(totals, p99, p99_range, results, bins)] if n]
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
