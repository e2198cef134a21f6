"""The reading half of `strata show time:FAMILY` (heatmaps/time_went.py draws it): each
component statistic of the family read whole (any breakdown the archive holds summed,
datasets/derive.py) over the columns of the window, or None where the archive neither holds
nor derives it."""
from strata.datasets import derive
from strata.datasets.errors import ArchiveError
from strata.heatmaps import time_went
from strata.heatmaps.timebins import choose_bins

from .window import query


def read(reader, family: str, start: int, end: int, max_cols: int) -> tuple:
    """(TimeBins, {statistic: QueryResult or None}) of the family's statistics."""
    bins = choose_bins(start, end, 1, max_cols)
    results = {}
    for _, statistics in time_went.FAMILIES[family]["parts"]:
        for statistic in statistics:
            try:
                src = derive.resolve(reader, statistic)
            except ArchiveError:
                results[statistic] = None
                continue
            results[statistic] = query(reader, src, start, end, bins.width)
    return bins, results
