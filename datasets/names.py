"""Dataset names in the appliance's bracket style: `statistic[field=value]...[breakdown]`.

Filters come first, sorted by field; the breakdown, if any, comes last:
`nfs.ops[op=read][client=10.0.0.3][file]` is canonically
`nfs.ops[client=10.0.0.3][op=read][file]`. parse() checks the statistic and
fields against the catalogue, and check_values() the filter values, naming the valid
ones when they are wrong.
"""
import re
from dataclasses import dataclass

from . import catalogue
from .errors import ArchiveError
from .suggest import did_you_mean

_STAT = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+")
_PART = re.compile(r"\[([a-z][a-z0-9_/]*)(?:=([^\[\]\s=]+))?\]")


@dataclass(frozen=True)
class DatasetName:
    statistic: str
    filters: tuple = ()        # ((field, value), ...) sorted by field
    breakdown: str = ""        # "" for none

    def __str__(self):
        parts = [f"[{f}={v}]" for f, v in self.filters]
        if self.breakdown:
            parts.append(f"[{self.breakdown}]")
        return self.statistic + "".join(parts)


def parse(text: str, statistics: dict | None = None) -> DatasetName:
    """Parse (and, given {name: Statistic}, validate) a dataset name; ArchiveError if bad."""
    text = text.strip()
    m = _STAT.match(text)
    if not m:
        raise ArchiveError(f"bad dataset name {text!r}: expected STATISTIC[FIELD=VALUE]...[BREAKDOWN], "
                           "e.g. nfs.latency[op=read][client]")
    statistic, pos, filters, breakdown = m.group(0), m.end(), {}, ""
    while pos < len(text):
        p = _PART.match(text, pos)
        if not p and pos == m.end() and text[pos] != "[":      # in the statistic: a typo, a letter it cannot hold
            head = text.split("[")[0]
            raise ArchiveError(f"bad dataset name {text!r}: {head!r} is no statistic (a-z, 0-9, '.', '_')" +
                               (did_you_mean(head, catalogue.load().by_name(), "strata statistics") or
                                "; `strata statistics` lists them"))
        if not p:
            raise ArchiveError(f"bad dataset name {text!r}: cannot read {text[pos:]!r} "
                               "(expected [FIELD=VALUE] or [BREAKDOWN])")
        fld, value = p.group(1), p.group(2)
        if breakdown:
            raise ArchiveError(f"bad dataset name {text!r}: the breakdown [{breakdown}] must come last, "
                               "and there can be only one")
        if fld in filters:
            raise ArchiveError(f"bad dataset name {text!r}: field {fld!r} appears twice")
        if value is None:
            breakdown = fld
        else:
            filters[fld] = value
        pos = p.end()
    if breakdown in filters:
        raise ArchiveError(f"bad dataset name {text!r}: {breakdown!r} is both filtered and broken down")
    name = DatasetName(statistic, tuple(sorted(filters.items())), breakdown)
    if statistics is not None:
        validate(name, statistics)
    return name


def validate(name: DatasetName, statistics: dict):
    stat = statistics.get(name.statistic)
    if stat is None:
        hint = did_you_mean(name.statistic, sorted(statistics), "`strata statistics`")
        raise ArchiveError(f"unknown statistic {name.statistic!r}" + (hint or "; valid statistics: "
                                                                      + ", ".join(sorted(statistics))))
    for fld, _ in name.filters:
        if fld not in stat.filters:
            valid = ", ".join(stat.filters) if stat.filters else "none"
            raise ArchiveError(f"{name.statistic} cannot be filtered by {fld!r}; valid filters: {valid}")
    if name.breakdown and name.breakdown not in stat.breakdowns:
        valid = ", ".join(stat.breakdowns) if stat.breakdowns else "none"
        raise ArchiveError(f"{name.statistic} has no breakdown {name.breakdown!r}; valid breakdowns: {valid}")


def checked(text: str, allow_absent_device: bool = False) -> DatasetName:
    """The name `datasets create` takes: parsed and checked against this package's catalogue,
    filter values included; ArchiveError naming what is wrong."""
    statistics = catalogue.by_name()
    name = parse(text, statistics)
    check_values(name, statistics, allow_absent_device)
    return name


def check_values(name: DatasetName, statistics: dict, allow_absent_device: bool = False):
    """ArchiveError naming the valid values unless every filter value is one its field takes
    (a device: one this host has, unless allow_absent_device)."""
    for fld, value in name.filters:
        catalogue.check_value(statistics[name.statistic], fld, value, allow_absent_device)
