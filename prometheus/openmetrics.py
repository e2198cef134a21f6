"""The collector's datasets as OpenMetrics, for Prometheus to scrape (DESIGN.md, "Beyond one machine").

Scrapers that prefer protobuf get the same state as native histograms instead
(native_exposition.py); per dataset only the top keys by events are shown, the
rest under `other` (topkeys.py).

`strata collect --metrics ADDRESS:PORT` serves GET /metrics (metrics_server.py). Every second the
collector archives is also added here, after the archive accepted it, so a scrape
shows the archive's counts since the collector started:

  heat map  -> histogram  strata_<statistic>_<unit>{dataset, filters, breakdown, le}
  counter   -> counter    strata_<statistic>_total{dataset, filters, breakdown}
  gauge     -> gauge      strata_<statistic>_<unit>{dataset, filters}  (last second's value)

Names: `nfs.latency` becomes `strata_nfs_latency_seconds`; nanoseconds are shown in
seconds, other units as they are. Every series carries `dataset` (its strata name,
so two breakdowns of one statistic never add up twice), one label per filter and
one for the breakdown field ("hit/miss" becomes hit_miss).

Buckets are llhist's (DESIGN.md, bucket maths): bucket b holds the integers
[lower(b), upper(b)), so its `le` is upper(b) - 1 in the statistic's unit, exact
under Prometheus' "less than or equal". With --metrics-digits 1 only the bounds with
one significant digit are exported (1, 2, ... 9 x 10^k: 9 a decade instead of 90),
a tenth of the series for large fleets; they are llhist bounds still, and such
histograms say so with the label le_digits="1" (the reader spreads their counts over
the buckets of each bound instead of placing them at its top). A dataset lists the union of the buckets any
of its keys has used, for every key, so `sum by (le)` over keys stays cumulative,
and a bucket once listed stays listed. Histograms carry no _sum (llhist keeps no
exact sum, and OpenMetrics allows _count only beside _sum): the event count is the
`le="+Inf"` bucket. A suspended or destroyed dataset's series
disappear with it; resumed, it counts from zero under a new `_created` time. A
series' `_created` is the start of the first second its key counted: the reader
(prometheus/reader.py) counts a series' first sample from it.

Counter and histogram samples carry a timestamp: the end of the last second of the
dataset they hold. Prometheus (with `honor_timestamps`, its default) then stores
each count at the second the collector closed rather than at the scrape's time, so a
reader knows exactly which seconds lie between two samples, however late a scrape
was (prometheus/spread.py); a scrape that finds no new second gets the same sample
again, which Prometheus stores once. A stamp never goes back: after the wall clock
steps back, samples keep the last stamp (Prometheus keeps the first of them) until a
later second closes, whose sample holds what came between. Gauges carry none: a
level read at the scrape, whose series Prometheus ends at once (with a staleness
marker) when they go away. It writes no staleness markers for timestamped series:
one that goes away (a suspended dataset, a key leaving the top, a stopped collector)
stays visible to instant queries at its last value for the lookback (5 minutes),
increasing by nothing; from Prometheus 2.48 `track_timestamps_staleness: true` in
the scrape job ends them at once too.
"""
import math
import re
import threading
import time

import numpy as np

from strata.datasets import llhist
from strata.prometheus import native_buckets
from strata.prometheus.topkeys import TopKeys

CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
DEFAULT_TOP = 20      # keys shown per dataset: 21 series, inside the ~100 a metric per target
# strata unit -> (OpenMetrics unit, units per OpenMetrics unit). Values are divided, not
# multiplied by 1e-9: a correctly rounded quotient prints as 1.999e-06, not 1.9990000000000003e-06.
UNITS = {"ns": ("seconds", 1e9), "bytes": ("bytes", 1)}


def exported_unit(unit: str, kind: str) -> tuple:
    """(OpenMetrics unit or None, strata units per it): counters count events, in no unit."""
    return (None, 1) if kind == "counter" else UNITS.get(unit, (None, 1))


def family_name(statistic: str, unit: str, kind: str) -> str:
    """`nfs.latency`, "ns", "heatmap" -> strata_nfs_latency_seconds."""
    name = "strata_" + re.sub(r"[^a-zA-Z0-9_]", "_", statistic)
    om_unit = exported_unit(unit, kind)[0]
    return f"{name}_{om_unit}" if om_unit else name


def label_name(field: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_]", "_", field)


def escape(value: str) -> str:
    """A label value (or PromQL string) with backslash, quote and newline escaped."""
    return value.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n")


def _labels(pairs) -> str:
    return ",".join(f'{k}="{escape(str(v))}"' for k, v in pairs)


def _number(v: float) -> str:
    return repr(float(v)) if not math.isinf(v) else "+Inf"


def exported_buckets(digits: int) -> np.ndarray:
    """For each llhist bucket, the bucket whose bound is exported as its `le`: itself with
    llhist's two significant digits; with one, the last bucket of its leading digit
    (10-19 -> 19, 20-29 -> 29, ...; 9 bounds a decade instead of 90)."""
    b = np.arange(llhist.NBUCKETS)
    if digits == 2:
        return b
    if digits != 1:
        raise ValueError(f"bucket bounds have 1 or 2 significant digits, not {digits}")
    d, m = np.divmod(b - 10, 90)
    return np.where(b < 10, b, np.minimum(10 + 90 * d + m // 10 * 10 + 9, llhist.NBUCKETS - 1))


class _Dataset:
    """Counts of one dataset since the collector started (or it was resumed)."""

    def __init__(self, info, digits: int, top: int):
        self.info, self.exported = info, exported_buckets(digits)
        self.shown = TopKeys(top if info.breakdown else 0)
        self.created = {}                              # shown key -> when its series began
        self.family = family_name(info.statistic, info.unit, info.kind)
        self.per = exported_unit(info.unit, info.kind)[1]
        self.key_label = label_name(info.breakdown) if info.breakdown else None
        taken = {"dataset", "le", "le_digits", self.key_label}          # a filter never shadows these
        self.fixed = [("dataset", info.name)]
        for f, v in sorted(info.filters.items()):
            if label_name(f) not in taken:
                taken.add(label_name(f))
                self.fixed.append((label_name(f), v))
        if info.kind == "heatmap" and digits == 1:
            self.fixed.append(("le_digits", "1"))
        self.keys = {}                                 # key -> counts (ndarray, int or float)
        self.closed = 0                                # when the last second added ended
        self.used = np.zeros(llhist.NBUCKETS, bool)    # heat map buckets any key has used

    def add(self, data: dict, start: int, seconds: int):
        kind = self.info.kind
        self.closed = max(self.closed, start + seconds)
        for key, value in data.items():
            events = sum(value.values()) if kind == "heatmap" else value
            key, dropped = self.shown.route(key, events, time.monotonic())
            for gone in dropped:
                self.keys.pop(gone, None)
                self.created.pop(gone, None)
            self.created.setdefault(key, start)
            if kind == "heatmap":
                counts = self.keys.setdefault(key, np.zeros(llhist.NBUCKETS, np.uint64))
                for b, c in value.items():
                    counts[int(b)] += np.uint64(c)
                    self.used[self.exported[int(b)]] = True
            elif kind == "counter":
                self.keys[key] = self.keys.get(key, 0) + value
            else:
                self.keys[key] = float(value)

    def label_pairs(self, key: str) -> list:
        """[(label, value)] of key's series (a classic histogram adds le)."""
        return self.fixed + ([(self.key_label, key)] if self.key_label else [])

    def labels(self, key: str) -> str:
        """The label pairs of key's series, without braces."""
        return _labels(self.label_pairs(key))

    def lines(self, uppers: np.ndarray) -> list:
        """This dataset's samples (the family's TYPE, UNIT and HELP are written by the caller)."""
        out, kind, f, at = [], self.info.kind, self.family, self.closed
        if kind == "heatmap":
            used = np.flatnonzero(self.used)
            les = [_number((uppers[b] - 1) / self.per) for b in used]
            for key, counts in sorted(self.keys.items()):
                labels = self.labels(key)
                cum = np.cumsum(counts)[used].tolist()
                head = f'{f}_bucket{{{labels},le="'
                out += [f'{head}{le}"}} {c} {at}' for le, c in zip(les, cum)]
                out.append(f'{head}+Inf"}} {int(counts.sum())} {at}')
                out.append(f"{f}_created{{{labels}}} {self.created[key]} {at}")
        elif kind == "counter":
            for key, n in sorted(self.keys.items()):
                labels = self.labels(key)
                out.append(f"{f}_total{{{labels}}} {n} {at}")
                out.append(f"{f}_created{{{labels}}} {self.created[key]} {at}")
        else:
            for key, v in sorted(self.keys.items()):
                out.append(f"{f}{{{self.labels(key)}}} {_number(v / self.per)}")
        return out


class Exposition:
    """What GET /metrics returns; fed by the collector, read by the HTTP server's threads."""

    def __init__(self, digits: int = 2, top: int = 0, schema: int = None):
        self.lock = threading.Lock()
        self.datasets = {}            # dataset id -> _Dataset
        self.uppers = llhist.upper_bounds()
        self.digits = digits          # of the exported bounds: 2 (llhist's) or 1
        self.top = top                # keys shown per dataset (topkeys.py); 0: all
        self.schema = native_buckets.DEFAULT_SCHEMA if schema is None else schema   # of native histograms
        self.version = 0              # counts changes: a body is rendered once per change
        self.rendered = {}            # protobuf? -> (version, body)

    def add(self, info, data: dict, start: int, seconds: int = 1):
        """One archived record of dataset `info` (its "data" object, already validated), of the
        seconds from `start` on."""
        with self.lock:
            ds = self.datasets.get(info.id)
            if ds is None:
                ds = self.datasets[info.id] = _Dataset(info, self.digits, self.top)
            ds.add(data, start, seconds)
            self.version += 1

    def keep(self, ids):
        """Forgets the datasets no longer collected."""
        with self.lock:
            for gone in set(self.datasets) - set(ids):
                del self.datasets[gone]
                self.version += 1

    def body(self, protobuf: bool) -> bytes:
        """What a scrape gets, rendered once per change however many scrapers ask."""
        version, body = self.rendered.get(protobuf, (None, None))
        if version != self.version:
            with self.lock:
                version = self.version
            body = self.protobuf() if protobuf else self.text().encode()
            self.rendered[protobuf] = (version, body)
        return body

    def _families(self) -> list:
        """[((family, kind), [its _Datasets])], by name; call with the lock held."""
        families = {}
        for ds in sorted(self.datasets.values(), key=lambda d: d.info.name):
            families.setdefault((ds.family, ds.info.kind), []).append(ds)
        return sorted(families.items())

    def protobuf(self) -> bytes:
        """The delimited protobuf exposition: heat maps as native histograms."""
        from . import native_exposition   # here: only scrapers that ask need the generated classes
        with self.lock:
            return native_exposition.encode(self._families(), self.schema)

    def text(self) -> str:
        with self.lock:
            out = []
            for (family, kind), members in self._families():
                info = members[0].info
                om_kind = {"heatmap": "histogram"}.get(kind, kind)
                out.append(f"# TYPE {family} {om_kind}")
                om_unit = exported_unit(info.unit, kind)[0]
                if om_unit:
                    out.append(f"# UNIT {family} {om_unit}")
                help_text = f"strata statistic {info.statistic} ({info.unit}, {kind})"
                out.append(f"# HELP {family} " + help_text.replace("\\", "\\\\").replace("\n", "\\n"))
                for ds in members:
                    out += ds.lines(self.uppers)
            out.append("# EOF")
            return "\n".join(out) + "\n"
