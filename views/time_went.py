"""The reading half of `strata show time:FAMILY` (heatmaps/time_went.py draws it): each
component statistic of the family read whole (any breakdown the archive holds summed,
datasets/derive.py) over the columns of the window, or None where the archive neither holds
nor derives it; for time:nfsd also the wire's and nfsd's statistics by op ("wire.latency[op]"),
to check that both views count the same ops, and the ops the wire sees that nfsd never serves
(MOUNT's procedures, from the catalogue); build() draws it."""
from strata.datasets import catalogue, derive
from strata.datasets.errors import ArchiveError
from strata.heatmaps import time_went
from strata.heatmaps.timebins import choose_bins

from .window import query

MOUNT_OP = 0x10000   # nfs_op key values: MOUNT's procedure p is MOUNT_OP + p


def read(reader, family: str, start: int, end: int, max_cols: int, bins=None) -> tuple:
    """(TimeBins, {statistic: QueryResult or None}) of the family's statistics over `bins`
    (the web page's live columns), else columns chosen for max_cols."""
    bins = bins or choose_bins(start, end, 1, max_cols)
    names = [s for _, statistics in time_went.FAMILIES[family]["parts"] for s in statistics]
    if any(name == time_went.NETWORK for name, _ in time_went.FAMILIES[family]["parts"]):
        names += [time_went.by_op(s) for s in time_went.COUNTED_TOGETHER]
    return bins, {name: _query(reader, name, start, end, bins.width) for name in names}


def mount_ops() -> frozenset:
    """MOUNT's procedures: the nfs_op key texts whose key values are 0x10000 + procedure
    (catalogue/statistics.def); mountd answers them, not nfsd."""
    return catalogue.load().texts_in("nfs_op", MOUNT_OP, MOUNT_OP + 0xffff)


def build(family: str, bins, results: dict):
    """The TimeWent of read()'s results (heatmaps/time_went.py), MOUNT's procedures left out
    of the network part's comparison."""
    return time_went.build(family, bins, results, uncounted=mount_ops())


def _query(reader, name: str, start: int, end: int, width: int):
    try:
        src = derive.resolve(reader, name)
    except ArchiveError:
        return None
    return query(reader, src, start, end, width)
