"""The query result contract between the archive and its readers (heatmaps/, check).

Archive.query(name, start, end, resolution) returns a QueryResult: a time axis,
the breakdown keys, and either llhist bucket counts (heat-map statistics) or one
value per key and column (counters, gauges). Only buckets that hold data appear,
so a day of per-second data stays small.
"""
from dataclasses import dataclass, field

import numpy as np

from .retention import STEP


@dataclass
class QueryResult:
    name: str                 # dataset name, e.g. "nfs.latency[client]"
    statistic: str            # e.g. "nfs.latency"
    kind: str                 # "heatmap" | "counter" | "gauge"
    unit: str                 # "ns", "bytes", "ops", "bytes-offset", ...
    step: int                 # seconds per column
    times: np.ndarray         # int64 (n,): start of each column, unix seconds
    keys: list                # breakdown keys (str); [""] when there is no breakdown
    buckets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # heatmap: sorted llhist bucket ids present (m,); counts uint64 (len(keys), n, m)
    counts: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0), np.uint64))
    # counter: int64 (len(keys), n) events per column; gauge: float64 (len(keys), n), NaN = no sample
    values: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    level: str = "second"     # archive level the data came from: second | minute | hour
    # added by datasets/: bool (n,), True where the column holds at least one collected record
    # (a False column was not collected: a gap, not zeros). Empty when the producer does not know.
    present: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    # added by datasets/: int64 (n,), how many seconds of each column were collected (a rate is
    # events per collected second; datasets/collected.py says how rollups count). Empty when
    # the producer does not count them (Prometheus: a series is known from its first event on).
    collected: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # added by datasets/: (start, end, cause) of each outage overlapping the range whose events
    # were collected as one record (cause "stall": the collector stalled; "archive": the archive
    # could not be written; "clock": the wall clock stepped back). At the second level its events are spread evenly over [start, end).
    spans: list = field(default_factory=list)
    # added by datasets/derive.py: how a name the archive does not hold was answered,
    # e.g. "summed from nfs.latency[op=read][client]"; "" when read as held
    derived: str = ""
    breakdown: str = ""       # the field the keys are values of ("client", "tier"); "" for none

    def counted_span(self, start: int, end: int) -> tuple:
        """(first, last) unix seconds this result counted of [start, end), which a title
        names: from its first column's edge (whole columns from a multiple of their width)
        to the end of the last record read (a minute's or an hour's record counts all of it)."""
        step = max(int(self.step), 1)
        stored = STEP.get(self.level, step)
        start, end = int(start), int(end)
        return start - start % step, end + (-end) % stored

    def seconds_collected(self):
        """int64 (n,): the collected seconds of each column; None when the producer does not
        count them (a rate is then per second of the columns' width)."""
        return np.asarray(self.collected, dtype=np.int64) if len(self.collected) else None
