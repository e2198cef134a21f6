"""Reading datasets back from a Prometheus server that scraped `strata collect --metrics`.

The reader answers the two questions the heat-map commands ask of an archive,
datasets() and query(name, start, end, resolution), from Prometheus' HTTP API, so
`strata heatmap --prometheus URL` draws a fleet's data with the same code
(DESIGN.md, "Beyond one machine"). The exposition is prometheus/openmetrics.py.

Series of one key from several collectors (Prometheus' `instance` label) add up, so
a dataset that every server of a fleet collects is drawn fleet-wide.

A column [t, t + step) holds what the collector counted over it, from its cumulative
series: each is read at the column edges (query_range), with the time of the sample
each edge found (`timestamp()`), to one edge past the range (whose sample may hold
its last seconds), and the increase between two consecutive samples is spread evenly
over the seconds between them (spread.py: whole integers, totals exact, no rate()
extrapolation). strata's exposition stamps each sample with the end of the
last second it holds, so where every second was scraped each column is the archive's,
exactly, at any width; a late or missed scrape shares its seconds' increase evenly
between them instead of leaving one column empty and doubling the next. A drop in a
cumulative value is a collector restart: the count starts again from zero. A series'
first sample counts from its `_created` time: a key's series is born at its first
event, so that sample holds only what it counted since (were Prometheus started long
after the collector, it would hold everything before: not counted). Gauges are the
column's closing sample. Histogram `le`
bounds are llhist's (upper(b) - 1 in the statistic's unit), mapped back to buckets
exactly; a series whose bounds are not llhist's is refused. A histogram exported with
one significant digit (le_digits="1") has its counts spread evenly over the buckets
each bound stands for. Native histograms (Prometheus with native histograms on)
are read back by native_reader.py and added to the classic series of the same
dataset, if any.
"""
import json
import urllib.error
import urllib.parse
import urllib.request

import numpy as np

from strata.datasets import catalogue, llhist, names
from strata.prometheus import native_reader
from strata.prometheus.spread import spread
from strata.datasets.archive import DatasetInfo
from strata.datasets.errors import ArchiveError
from strata.prometheus.openmetrics import escape, exported_unit, family_name, label_name
from strata.datasets.query import QueryResult

PART = "strata_part"     # marks the sample times and created times in a combined answer
MAX_POINTS = 11_000      # Prometheus refuses a query_range of more points per series
TIMEOUT_S = 30


class PrometheusReader:
    """Datasets that a Prometheus server at `url` holds, read through its HTTP API."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        self.path = self.url          # what messages call the source
        self.statistics = catalogue.by_name()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def _get(self, endpoint: str, params: dict):
        url = f"{self.url}/api/v1/{endpoint}?{urllib.parse.urlencode(params, doseq=True)}"
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_S) as r:
                body = json.load(r)
        except urllib.error.HTTPError as e:
            try:
                body = json.load(e)
            except ValueError:
                raise ArchiveError(f"Prometheus at {self.url}: HTTP {e.code}") from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise ArchiveError(f"cannot reach Prometheus at {self.url}: {reason}") from None
        except ValueError:
            raise ArchiveError(f"{self.url} did not answer as a Prometheus API") from None
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error", "unexpected answer") if isinstance(body, dict) else "unexpected answer"
            raise ArchiveError(f"Prometheus at {self.url}: {error}")
        return body.get("data")

    def datasets(self) -> list:
        """A DatasetInfo for every strata dataset name the server has series of."""
        found = self._get("label/dataset/values", {"match[]": '{__name__=~"strata_.+"}'}) or []
        out = []
        for i, name in enumerate(sorted(found)):
            try:
                parsed = names.parse(name, self.statistics)
            except ArchiveError:
                continue    # not a strata dataset name: another exporter's label
            stat = self.statistics[parsed.statistic]
            out.append(DatasetInfo(i + 1, str(parsed), parsed.statistic, parsed.breakdown,
                                   dict(parsed.filters), stat.kind, stat.unit, stat.probe, "active",
                                   0, 0, None, {}))
        return out

    def dataset(self, name: str) -> DatasetInfo:
        for info in self.datasets():
            if info.name == name:
                return info
        raise ArchiveError(f"no dataset {name} in Prometheus at {self.url}")

    def _range(self, query: str, start: int, step: int, n: int) -> list:
        """The result of a range query over the n + 1 edges start + i * step."""
        if n + 1 > MAX_POINTS:
            raise ArchiveError(f"query too large for Prometheus ({n} columns): use a coarser resolution")
        data = self._get("query_range", {"query": query, "start": start, "end": start + n * step, "step": step})
        try:
            return list(data["result"])
        except (KeyError, TypeError):
            raise ArchiveError(f"Prometheus at {self.url} answered a range query malformed") from None

    def _points(self, result, start: int, step: int, n: int) -> list:
        """[(labels, values at start + i * step for i in 0..n, NaN where absent)] of a result's float series."""
        out = []
        try:
            for series in result:
                values = np.full(n + 1, np.nan)
                for t, v in series["values"]:
                    i = int(round((float(t) - start) / step))
                    if 0 <= i <= n:
                        values[i] = float(v)
                out.append((dict(series["metric"]), values))
        except (KeyError, TypeError, ValueError, OverflowError):
            raise ArchiveError(f"Prometheus at {self.url} answered a range query malformed") from None
        return out

    def _edges(self, selector: str, start: int, step: int, n: int) -> list:
        """[(labels, values at start + i * step for i in 0..n, NaN where absent)]."""
        return self._points(self._range(selector, start, step, n), start, step, n)

    def _cumulative(self, selector: str, timed: str, created: str, start: int, step: int, n: int):
        """(_edges of selector, {identity: time of the sample each edge found, from timed's series},
        {identity: its _created value at each edge}) in one query, so all three come from one
        state of the server (a series' PART label says which it is)."""
        query = f'{selector} or {_part(f"timestamp({timed})", "time")} or {_part(created, "created")}'
        series, parts = [], {"time": {}, "created": {}}
        for labels, v in self._edges(query, start, step, n):
            if PART in labels:
                parts[labels[PART]][_identity(labels)] = v
            else:
                series.append((labels, v))
        return series, parts["time"], parts["created"]

    def _natives(self, family: str, info, start: int, step: int, n: int) -> list:
        """The dataset's native-histogram series as (labels, native_reader.parse's buckets, time
        of the sample each edge found), read from one edge before the range: a series with a
        sample there began before it, so what its first sample in the range holds is an increase
        (the protobuf exposition's created time does not reach Prometheus' API)."""
        selector = f'{family}{{dataset="{escape(info.name)}"}}'
        result = self._range(f'{selector} or {_part(f"timestamp({selector})", "time")}', start - step, step, n + 1)
        timed = [s for s in result if isinstance(s, dict) and PART in s.get("metric", {})]
        times = {_identity(labels): v for labels, v in self._points(timed, start - step, step, n + 1)}
        parsed = native_reader.parse(result, start - step, step, n + 1, info.name)
        nothing = np.full(n + 2, np.nan)
        return [(labels, buckets, times.get(_identity(labels), nothing)) for labels, buckets in parsed]

    def query(self, name: str, start: int, end: int, resolution: int | None = None) -> QueryResult:
        return self.read(self.dataset(name), start, end, resolution)

    def read(self, info: DatasetInfo, start: int, end: int, resolution: int | None = None) -> QueryResult:
        """query() of a dataset already found (a DatasetInfo of datasets())."""
        step = max(1, int(resolution or 1))
        start -= start % step
        n = max(1, -(-(end - start) // step))
        family = family_name(info.statistic, info.unit, info.kind)
        selector = {"heatmap": f"{family}_bucket", "counter": f"{family}_total"}.get(info.kind, family)
        dataset = f'dataset="{escape(info.name)}"'
        if info.kind == "gauge":
            series, times, created = self._edges(f"{selector}{{{dataset}}}", start, step, n), {}, {}
        else:      # to one edge past the range: a sample after its end may hold its last seconds
            timed = f'{selector}{{{dataset},le="+Inf"}}' if info.kind == "heatmap" else f"{selector}{{{dataset}}}"
            series, times, created = self._cumulative(f"{selector}{{{dataset}}}", timed,
                                                      f"{family}_created{{{dataset}}}", start, step, n + 1)
        natives = self._natives(family, info, start, step, n + 1) if info.kind == "heatmap" else []
        grid = (times, created, start, step, n)
        key_label = label_name(info.breakdown) if info.breakdown else None
        per = exported_unit(info.unit, info.kind)[1]
        result = QueryResult(name=info.name, statistic=info.statistic, kind=info.kind, unit=info.unit,
                             breakdown=info.breakdown or "",
                             step=step, times=start + step * np.arange(n, dtype=np.int64), keys=[],
                             level="prometheus")
        key_of = (lambda labels: labels.get(key_label, "")) if key_label else (lambda labels: "")
        result.keys = sorted({key_of(labels) for labels, *_ in series + natives}) or \
            ([""] if not info.breakdown else [])
        sampled = {key_of(labels) for labels, v in series if (~np.isnan(v[:n + 1])).any()} | \
            {key_of(labels) for labels, _, t in natives if (~np.isnan(t[:n + 2])).any()}
        index = {k: i for i, k in enumerate(result.keys)}
        rows = [index[key_of(labels)] for labels, _ in series]
        if info.kind == "gauge":
            result.values, present = _gauges(series, rows, len(result.keys), n, per)
        elif info.kind == "counter":
            result.values, present = _counters(series, rows, len(result.keys), grid)
        else:
            result.buckets, result.counts, present = _histograms(series, index, key_of, grid, per, info.name)
            if natives:
                result.buckets, result.counts, present = _add_natives(
                    natives, index, key_of, per, grid, result.buckets, result.counts, present)
        result.present = present
        return _sampled(result, sampled)


def _gauges(series, rows, nkeys, n, per):
    """Gauge values per key and column: the column's closing sample, summed over collectors."""
    values, present = np.full((nkeys, n), np.nan), np.zeros(n, bool)
    for (labels, v), row in zip(series, rows):
        value = v[1:] * per
        old = values[row]
        values[row] = np.where(np.isnan(old), value, np.where(np.isnan(value), old, old + value))
        present |= ~np.isnan(value)
    return values, present


def _counters(series, rows, nkeys, grid):
    """Events per key and column, summed over collectors."""
    times, created, start, step, n = grid
    values, present = np.zeros((nkeys, n), np.int64), np.zeros(n, bool)
    for (labels, v), row in zip(series, rows):
        identity, nothing = _identity(labels), np.full(len(v), np.nan)
        counts, seen = spread(v[None, :], times.get(identity, nothing), created.get(identity, nothing),
                              start, step, n)
        values[row] += counts[0]
        present |= seen
    return values, present


def _histograms(series, index, key_of, grid, per, name):
    """(buckets, counts per key, column and bucket, present) from _bucket series: each
    histogram (a collector's key) turned from cumulative over le into per-bucket counts."""
    times, created, start, step, n = grid
    bounds = _bounds(per)
    histograms = {}
    for labels, v in series:
        histograms.setdefault(_identity(labels), []).append((labels.get("le"), v))
    buckets = set()
    for identity, items in histograms.items():
        listed = {_bucket_of(le, bounds, name) for le, _ in items if le != "+Inf"}
        if dict(identity).get("le_digits") == "1":
            listed = {j for b in listed for j in _leading_digit_group(b)}
        buckets |= listed
    buckets = np.array(sorted(buckets), dtype=np.int64)
    pos = {int(b): j for j, b in enumerate(buckets)}
    counts = np.zeros((len(index), n, len(buckets)), np.uint64)
    present = np.zeros(n, bool)
    for identity, items in histograms.items():
        row = index[key_of(dict(identity))]
        ordered = sorted((_bucket_of(le, bounds, name), v) for le, v in items if le != "+Inf")
        if not ordered:
            continue
        # cumulative over le -> each bucket's own count; a bucket not listed yet holds none, so its
        # cumulative count is the listed bound's below it (the maximum below: counts grow with le)
        cumulative = np.fmax.accumulate(np.nan_to_num(np.array([v for _, v in ordered])), axis=0)
        own = np.diff(cumulative, axis=0, prepend=0.0)
        nothing = np.full(own.shape[1], np.nan)
        column_counts, seen = spread(own, times.get(identity, nothing), created.get(identity, nothing),
                                     start, step, n)
        present |= seen
        if dict(identity).get("le_digits") != "1":
            for (b, _), c in zip(ordered, column_counts):
                counts[row, :, pos[b]] += c.astype(np.uint64)
            continue
        for (b, _), c in zip(ordered, column_counts):
            group = _leading_digit_group(b)
            for j, share in zip(group, _spread(c, len(group))):
                counts[row, :, pos[j]] += share
    return buckets, counts, present


def _add_natives(natives, index, key_of, per, grid, buckets, counts, present):
    """The native series' counts added to the classic ones (a Prometheus may have scraped a
    collector either way over a range): per native bucket, counts per column spread from the
    edge before the range (whose column is dropped), and over the bins it stands for."""
    start, step, n = grid[2:]
    added = {}
    for labels, native_buckets, times in natives:
        if not native_buckets:
            continue
        row = index[key_of(labels)]
        keys = list(native_buckets)
        column_counts, seen = spread(np.array([native_buckets[k] for k in keys]), times,
                                     np.full(len(times), np.nan), start - step, step, n + 1)
        present |= seen[1:]
        for key, c in zip(keys, column_counts):
            bins = native_reader.bins_of(key, per)
            for b, share in zip(bins, _spread(c[1:], len(bins))):
                into = added.setdefault(int(b), np.zeros((len(index), n), np.uint64))
                into[row] += share
    merged = np.array(sorted(set(buckets.tolist()) | set(added)), dtype=np.int64)
    out = np.zeros((len(index), n, len(merged)), np.uint64)
    pos = {int(b): j for j, b in enumerate(merged)}
    for j, b in enumerate(buckets.tolist()):
        out[:, :, pos[b]] += counts[:, :, j]
    for b, c in added.items():
        out[:, :, pos[b]] += c
    return merged, out, present


def _sampled(result: QueryResult, sampled: set) -> QueryResult:
    """result without the keys of series first sampled past its end that hold nothing in it."""
    if result.kind == "gauge" or not len(result.keys):
        return result
    held = result.values if result.kind == "counter" else result.counts.sum(axis=(1, 2))
    keep = [i for i, k in enumerate(result.keys) if k in sampled or held[i].any()]
    if len(keep) < len(result.keys):
        result.keys = [result.keys[i] for i in keep]
        if result.kind == "counter":
            result.values = result.values[keep]
        else:
            result.counts = result.counts[keep]
    return result


def _part(expression: str, part: str) -> str:
    """expression's series marked as PART `part` of a combined answer."""
    return f'label_replace({expression}, "{PART}", "{part}", "", "")'


def _identity(labels: dict) -> tuple:
    """What names one series of a family, whatever its sample: labels but __name__, le and PART."""
    return tuple(sorted((k, v) for k, v in labels.items() if k not in ("__name__", "le", PART)))


_BOUNDS = {}


def _bounds(per: float) -> dict:
    """{le as strata exports it, as a float: llhist bucket} for a unit's divisor."""
    if per not in _BOUNDS:
        uppers = llhist.upper_bounds()
        _BOUNDS[per] = {float((uppers[b] - 1) / per): b for b in range(llhist.NBUCKETS)}
    return _BOUNDS[per]


def _bucket_of(le, bounds: dict, name: str) -> int:
    """The llhist bucket whose exported `le` this is; ArchiveError if none."""
    try:
        return bounds[float(le)]
    except (KeyError, TypeError, ValueError, OverflowError):
        raise ArchiveError(f"{name}: le={le!r} is not an llhist bucket bound (was it exported by strata?)") \
            from None


def _leading_digit_group(b: int) -> list:
    """The llhist buckets an le exported with one significant digit stands for: those
    sharing b's leading digit (b is the last of them), or b alone below 10."""
    if b < 10:
        return [b]
    first = b - (b - 10) % 90 % 10
    return list(range(first, b + 1))


def _spread(counts: np.ndarray, parts: int) -> list:
    """Integer counts per column split over `parts` buckets as evenly as integers allow
    (the remainder from the middle bucket outwards): what one bound cannot tell apart."""
    base, rest = np.divmod(counts.astype(np.int64), parts)
    order = sorted(range(parts), key=lambda i: (abs(2 * i - (parts - 1)), i))
    rank = {i: r for r, i in enumerate(order)}
    return [(base + (rank[i] < rest)).astype(np.uint64) for i in range(parts)]
