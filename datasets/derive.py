"""Query resolution: which dataset of an archive answers a dataset name, and how.

A name the archive holds is read as is. Otherwise it is derived, exactly, from a
dataset of the same statistic that the archive holds:
- summed: the same filters, broken down by some field; its keys summed
  (nfs.ops from nfs.ops[client]; nfs.latency[op=read] from nfs.latency[op=read][client]);
- one key: one filter F=V fewer, broken down by F; its key V
  (nfs.latency[op=read] from nfs.latency[op]).
A breakdown is never derived: a dataset keeps one breakdown, so the keys of
another field are gone from it (nfs.ops[op=read][client] is answered only by
itself). A summed source is preferred (it holds every event; a key may have been folded
into a bounded breakdown's "other"). The answer is a QueryResult named as asked,
its `derived` field saying where it came from. This layer sits above the record
decoding (reader.py): it reads the source through the archive's query() and
reduces the result. Works for any reader with datasets() and query() (Archive,
PrometheusReader).
"""
from dataclasses import dataclass, replace

import numpy as np

from . import catalogue, names
from .errors import ArchiveError
from .suggest import did_you_mean


@dataclass(frozen=True)
class Source:
    wanted: names.DatasetName
    info: object            # DatasetInfo of the dataset read
    how: str                # "held" | "summed" | "key"
    key: str = ""           # the key read, when how == "key"

    @property
    def note(self) -> str:
        """'' for a held dataset, else how the answer is derived (shown with it)."""
        if self.how == "summed":
            return f"summed from {self.info.name}"
        if self.how == "key":
            return f"{self.info.breakdown}={self.key} of {self.info.name}"
        return ""


def candidates(infos: list, wanted: names.DatasetName) -> list:
    """Every Source that answers `wanted` from `infos`, best first."""
    want = dict(wanted.filters)
    out = []
    for info in infos:
        if info.statistic != wanted.statistic:
            continue
        if info.name == str(wanted):
            out.append((0, Source(wanted, info, "held")))
            continue
        if wanted.breakdown or not info.breakdown or info.breakdown in info.filters:
            continue
        if info.filters == want:
            out.append((1, Source(wanted, info, "summed")))
        elif info.breakdown in want and dict(info.filters, **{info.breakdown: want[info.breakdown]}) == want:
            out.append((2, Source(wanted, info, "key", want[info.breakdown])))
    return [s for _, s in sorted(out, key=lambda o: (o[0], o[1].info.created))]


def resolve(reader, text, infos: list | None = None) -> Source:
    """The Source answering dataset name `text` (or a DatasetName already parsed) among
    infos (reader.datasets(), read here when not given); ArchiveError naming what the
    archive holds and how to get the dataset otherwise."""
    wanted = text if isinstance(text, names.DatasetName) else names.parse(text)
    infos = reader.datasets() if infos is None else infos
    found = candidates(infos, wanted)
    if found and found[0].how == "key":
        _check_key(found[0])
    if found:
        return found[0]
    raise ArchiveError(_not_held(reader, wanted, infos))


def _check_key(source: Source):
    """ArchiveError with the closest valid values when the key asked of a breakdown is no
    value its field takes (nfs.ops[op=reed]: did you mean read...)."""
    stat = catalogue.load().by_name().get(source.wanted.statistic)
    if stat is not None:
        catalogue.check_value(stat, source.info.breakdown, source.key, allow_absent_device=True)


def _not_held(reader, wanted: names.DatasetName, infos: list) -> str:
    """One line: why nothing held answers `wanted`, what the archive holds, and the command
    that collects it; a name `datasets create` would refuse is refused here the same way
    (did you mean), so the command given works."""
    statistics = catalogue.load().by_name()
    same = sorted(i.name for i in infos if i.statistic == wanted.statistic)
    if not same and wanted.statistic not in statistics:
        near = did_you_mean(str(wanted), sorted(i.name for i in infos)) or \
            did_you_mean(wanted.statistic, sorted(statistics), "`strata statistics`")
        return f"no dataset {wanted} in {reader.path}: {wanted.statistic} is no statistic{near}"
    names.validate(wanted, statistics)
    names.check_values(wanted, statistics, allow_absent_device=True)
    here = f"{wanted.statistic} datasets here: {', '.join(same)}" if same else \
        f"datasets here: {', '.join(sorted(i.name for i in infos)) or 'none'}"
    if wanted.breakdown:
        only = "".join(f"[{f}={v}]" for f, v in wanted.filters)
        why = (f" (a breakdown by {wanted.breakdown} is kept only by a dataset collected with it"
               + (f" and {only})" if only else ")"))
    else:
        why = ", nor one it can be derived from (a breakdown of it, or of it less one filter)"
    return (f"no dataset {wanted} in {reader.path}{why}; {here}; "
            f"to collect it: strata datasets create '{wanted}'")


def reduce(qr, source: Source):
    """The QueryResult of source.info reduced to source.wanted (summed, or one key)."""
    if source.how == "held":
        return qr
    if source.how == "key":
        pick = [i for i, k in enumerate(qr.keys) if k == source.key]
    else:
        pick = list(range(len(qr.keys)))
    n = len(qr.times)
    common = dict(name=str(source.wanted), keys=[""], breakdown="", derived=source.note)
    if qr.kind == "heatmap":
        counts = np.asarray(qr.counts)
        whole = (counts[pick].sum(axis=0, dtype=np.uint64) if pick and counts.size
                 else np.zeros((n, len(qr.buckets)), np.uint64))
        return replace(qr, counts=whole.reshape(1, n, len(qr.buckets)), **common)
    values = np.asarray(qr.values)
    if pick and values.size:
        whole = values[pick].sum(axis=0)
    else:
        whole = np.zeros(n, np.int64 if qr.kind == "counter" else np.float64)
    return replace(qr, values=whole.reshape(1, n), **common)


def query(reader, source: Source, start: int, end: int, resolution: int | None = None):
    """QueryResult of source.wanted over [start, end), read from source.info (its row not
    read again)."""
    return reduce(reader.read(source.info, start, end, resolution), source)
