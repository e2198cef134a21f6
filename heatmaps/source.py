"""Where the heat-map commands get their data: which dataset of an archive (or
Prometheus server), with drill-down to one breakdown key, and which time range.

Every failure here is a ClickException carrying one line for the user.
"""
import datetime as dt
import re
import time

import click

from strata.datasets import catalogue, names
from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError
from strata.datasets.prometheus import PrometheusReader

from .breakdown import compute
from .timebins import choose_bins
from .units import parse_duration

DEFAULT_LAST = 600


def resolve(archive: Archive, text: str, key: str | None = None) -> tuple:
    """(DatasetInfo, keys or None) for a dataset name.

    'nfs.latency[client=10.0.0.3]' is that dataset when it exists; otherwise, when
    'nfs.latency[client]' exists, the key 10.0.0.3 of it (drill-down). --key K
    selects key K of a dataset with a breakdown.
    """
    try:
        wanted = names.parse(text)
        infos = archive.datasets()
    except ArchiveError as e:
        raise click.ClickException(str(e)) from None
    if not infos:
        if isinstance(archive, PrometheusReader):
            raise click.ClickException(f"Prometheus at {archive.path} holds no strata series "
                                       "(does it scrape `strata collect --metrics`?)")
        raise click.ClickException(f"the archive {archive.path} holds no datasets "
                                   "(create one with `strata dataset create`)")
    by_name = {i.name: i for i in infos}
    found, keys = by_name.get(str(wanted)), None
    if found is None and wanted.filters and not wanted.breakdown:
        for fld, value in wanted.filters:
            rest = tuple(f for f in wanted.filters if f[0] != fld)
            broader = str(names.DatasetName(wanted.statistic, rest, fld))
            if broader in by_name:
                found, keys = by_name[broader], [value]
                break
    if found is None:
        have = ", ".join(sorted(by_name))
        raise click.ClickException(f"no dataset {wanted} in {archive.path}; datasets here: {have}")
    if key is not None:
        if not found.breakdown:
            raise click.ClickException(f"--key needs a dataset with a breakdown; {found.name} has none")
        if keys is not None and keys != [key]:
            raise click.ClickException(f"--key {key} contradicts the filter in {text}")
        keys = [key]
    return found, keys


def _drill_by() -> tuple:
    """Breakdowns a drill-down looks for, clients first, then the catalogue's order."""
    fields = [f for f in catalogue.load().dimensions if f != "hit/miss"]
    return tuple(sorted(fields, key=lambda f: f != "client"))


def drill_target(archive, info) -> str | None:
    """The dataset that breaks info's statistic (same filters) down by key: info itself when
    it has a breakdown, else the first breakdown the archive holds (clients first)."""
    if info.breakdown:
        return info.name
    try:
        have = {i.name for i in archive.datasets()}
    except ArchiveError:
        return None
    filters = tuple(sorted(info.filters.items()))
    for by in _drill_by():
        name = str(names.DatasetName(info.statistic, filters, by))
        if name in have:
            return name
    return None


def parse_time(text: str, now: int) -> int:
    """Unix seconds from 'now', '-10m' / '10m ago', an epoch, 'HH:MM[:SS]' (today) or ISO 8601."""
    t = text.strip().lower()
    if t == "now":
        return now
    m = re.fullmatch(r"-\s*(\S+)|(\S+)\s+ago", t)
    if m:
        return now - parse_duration(m.group(1) or m.group(2))
    if re.fullmatch(r"[0-9]{9,11}", t):
        return int(t)
    if re.fullmatch(r"[0-9]{1,2}:[0-9]{2}(:[0-9]{2})?", t):
        today = dt.datetime.fromtimestamp(now).date().isoformat()
        value = int(dt.datetime.fromisoformat(f"{today}T{t.zfill(5) if len(t) == 4 else t}").timestamp())
        return value - 86400 if value > now else value
    try:
        parsed = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"not a time: {text!r} (try 'now', '-1h', '09:30', 2025-11-22T09:30 "
                         "or unix seconds)") from None
    return int(parsed.timestamp())


def time_range(last, since, until, now: int | None = None) -> tuple:
    """(start, end, explicit): from --last or --since/--until; explicit is False for the default."""
    now = int(time.time()) if now is None else int(now)
    try:
        if last is not None and since is not None:
            raise click.UsageError("give --last or --since, not both")
        end = parse_time(until, now) if until else now
        if last is not None:
            return end - parse_duration(last), end, True
        if since is not None:
            start = parse_time(since, now)
            if start >= end:
                raise click.UsageError(f"--since {since} is not before --until {until or 'now'}")
            return start, end, True
        return end - DEFAULT_LAST, end, until is not None
    except ValueError as e:
        raise click.UsageError(str(e)) from None


def query(archive: Archive, info, start: int, end: int, resolution: int | None):
    try:
        return archive.query(info.name, start, end, resolution)
    except ArchiveError as e:
        raise click.ClickException(str(e)) from None


def query_window(archive: Archive, info, start: int, end: int, max_cols: int, explicit: bool) -> tuple:
    """(query result, start, end): the window in bins for max_cols columns; a window the user
    did not set (explicit False) that holds no data moves back to end at the newest data."""
    resolution = choose_bins(start, end, 1, max_cols).width
    qr = query(archive, info, start, end, resolution)
    if not explicit and not qr.present.any():
        latest = latest_data(archive, info, end)
        if latest is not None:   # nothing lately: show the newest data instead of an empty view
            start, end = latest - (end - start), latest
            qr = query(archive, info, start, end, resolution)
    return qr, start, end


def latest_data(archive: Archive, info, now: int) -> int | None:
    """End (exclusive) of the newest data: found in the hour rollups, then refined in that hour.
    None for a Prometheus server, whose range the user chooses."""
    if not isinstance(archive, Archive):
        return None
    hours = query(archive, info, min(info.created, now) - 3600, now + 1, 3600)
    if not (hours.present.size and hours.present.any()):
        return None
    hour = int(hours.times[hours.present.nonzero()[0][-1]])
    fine = query(archive, info, hour, hour + hours.step, None)
    if fine.present.size and fine.present.any():
        return int(fine.times[fine.present.nonzero()[0][-1]]) + fine.step
    return hour + hours.step


def breakdown(archive: Archive, info, keys, start: int, end: int, explicit: bool, *, max_cols: int,
              top: int, percentile: float, value_range=None):
    """(Breakdown, start, end): what `strata breakdown` shows of info over [start, end), of the
    events in value_range (drill-down) when one is given; the page's drag reads the same."""
    qr, start, end = query_window(archive, info, start, end, max_cols, explicit)
    b = compute(qr, start, end, max_cols=max_cols, top=top, percentile=percentile, keys=keys,
                by=info.breakdown, value_range=value_range)
    return b, start, end
