"""Where the views get their data: which dataset of an archive (or Prometheus
server) answers a name, held or derived (datasets/derive.py), the keys selected,
and which time range.

Every failure here is a ViewError (heatmaps/errors.py) carrying one line for the user.
"""
import datetime as dt
import re
import time

from strata.datasets import catalogue, derive, names
from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError
from strata.prometheus.reader import PrometheusReader

from .errors import ViewError, ViewUsageError
from .timebins import choose_bins
from .units import parse_duration

DEFAULT_LAST = 600
MIN_DEFAULT = 60      # the narrowest default window, in seconds


def resolve(reader, text: str, keys=None) -> tuple:
    """(derive.Source, keys or None) for a dataset name and the keys asked for (--key).

    A name the archive does not hold is derived when it can be: nfs.latency[client=10.0.0.3]
    is key 10.0.0.3 of nfs.latency[client], nfs.ops the sum of nfs.ops[client].
    """
    try:
        if not reader.datasets():
            if isinstance(reader, PrometheusReader):
                raise ViewError(f"Prometheus at {reader.path} holds no strata series "
                                "(does it scrape `strata collect --metrics`?)")
            raise ViewError(f"the archive {reader.path} holds no datasets "
                            "(create one with `strata datasets create`)")
        parse_name(reader, text)
        found = derive.resolve(reader, text)
    except ArchiveError as e:
        raise ViewError(str(e)) from None
    if keys:
        keys = list(dict.fromkeys(keys))
        if found.how != "held" or not found.info.breakdown:
            raise ViewUsageError(f"--key needs a dataset with a breakdown; {found.wanted} has none"
                                 + breakdown_hint(reader, found.wanted, " (its keys: {})"))
        _check_closed_keys(found.info, keys)
    return found, keys or None


def _check_closed_keys(info, keys):
    """A --key of a field whose values are a closed set (op, tier, hit/miss) is checked as a
    filter value is: one outside the set is a typo, answered with the closest values."""
    cat = catalogue.load()
    stat = cat.by_name().get(info.statistic)
    kind = cat.dimensions.get(info.breakdown, "")
    if stat is None or (stat.ops if kind == "op" else kind) not in cat.keysets:
        return
    try:
        for key in keys:
            catalogue.check_value(stat, info.breakdown, key)
    except ArchiveError as e:
        raise ViewError(str(e)) from None


def parse_name(reader, text: str) -> names.DatasetName:
    """The name `text` parses to, checked against the catalogue before any command reads,
    derives or suggests from it: a filter value outside its field's closed set (op, tier,
    hit/miss) is a typo, one line with the closest values (nfs.ops[op=reed]: did you mean
    read...?), never a dataset to create. A statistic the catalogue lacks is answered as
    derive answers it (did you mean a dataset held here) unless the reader holds it."""
    try:
        parsed = names.parse(text)
        statistics = catalogue.load().by_name()
        if parsed.statistic not in statistics:
            derive.resolve(reader, text)
            return parsed
        _breakdown_only(parsed, statistics[parsed.statistic])
        names.validate(parsed, statistics)
        names.check_values(parsed, statistics, allow_absent_device=True)
    except ArchiveError as e:
        raise ViewError(str(e)) from None
    return parsed


def _breakdown_only(parsed, stat):
    """A filter by a field the statistic only breaks down by (arc.accesses[hit/miss=hit]):
    one line pointing to that key of the breakdown (--key)."""
    for fld, value in parsed.filters:
        if fld not in stat.filters and fld in stat.breakdowns and not parsed.breakdown:
            catalogue.check_value(stat, fld, value, allow_absent_device=True)
            whole = names.DatasetName(parsed.statistic, tuple(f for f in parsed.filters if f[0] != fld), fld)
            raise ViewError(f"{parsed.statistic} cannot be filtered by {fld}, only broken down by it; "
                            f"its key {value}: strata show '{whole}' --key {value}")


def held_fields(reader, wanted) -> list:
    """breakdown_fields(wanted) that the archive can answer: the breakdowns of the name it
    holds (a breakdown is never derived, datasets/derive.py)."""
    infos = reader.datasets()
    return [by for by in breakdown_fields(wanted)
            if derive.candidates(infos, names.DatasetName(wanted.statistic, wanted.filters, by))]


def breakdown_hint(reader, wanted, held_text: str) -> str:
    """held_text with the command that breaks `wanted` down by the fields the archive
    holds, or, when it holds none, the command that collects the first ('' when the
    statistic has no breakdown)."""
    fields = breakdown_fields(wanted)
    if not fields:
        return ""
    held = held_fields(reader, wanted)
    if held:
        return held_text.format(f"strata breakdown '{wanted}' --by {'|'.join(held)}")
    first = names.DatasetName(wanted.statistic, wanted.filters, fields[0])
    return f"; no breakdown of it is held here (to collect one: strata datasets create '{first}')"


def breakdown_fields(wanted) -> list:
    """The fields a dataset name can still be broken down by: its statistic's breakdowns
    that it does not filter by, clients first."""
    stat = catalogue.load().by_name().get(wanted.statistic)
    filtered = dict(wanted.filters)
    fields = [f for f in (stat.breakdowns if stat else []) if f not in filtered and f != "hit/miss"]
    return sorted(fields, key=lambda f: f != "client")


def drill_target(reader, source) -> str | None:
    """The dataset that breaks the source's events down by key, within its filters: the name
    itself when it has a breakdown, else the first breakdown of it (clients first) the
    archive holds or can derive; a filtered name without one (a key of a dataset broken
    down by the field it filters) is its own target: the events of that key, whole."""
    wanted = source.wanted
    if wanted.breakdown:
        return str(wanted)
    for by in breakdown_fields(wanted):
        name = str(names.DatasetName(wanted.statistic, wanted.filters, by))
        try:
            derive.resolve(reader, name)
        except ArchiveError:
            continue
        return name
    return str(wanted) if wanted.filters else None


def parse_time(text: str, now: int) -> int:
    """Unix seconds from 'now', '-10m' / '10m ago', an epoch, 'HH:MM[:SS]' (today) or ISO 8601."""
    t = text.strip().lower()
    if t == "now":
        return now
    m = re.fullmatch(r"-\s*(\S+)|(\S+)\s+ago", t)
    if m:
        return now - parse_duration(m.group(1) or m.group(2))
    if re.fullmatch(r"[0-9]{1,11}", t):       # unix seconds, 0 (1970) included, as dates from 1970 are
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
            raise ViewUsageError("give --last or --since, not both")
        end = parse_time(until, now) if until else now
        if last is not None:
            return end - parse_duration(last), end, True
        if since is not None:
            start = parse_time(since, now)
            if start >= end:
                raise ViewUsageError(f"--since {since} is not before --until {until}" if until else
                                     f"--since {since} is in the future" if start > end else
                                     f"--since {since} is not before now")
            return start, end, True
        return end - DEFAULT_LAST, end, until is not None
    except ValueError as e:
        raise ViewUsageError(str(e)) from None


def query(reader, source, start: int, end: int, resolution: int | None):
    """The QueryResult of source (derive.Source) over [start, end)."""
    try:
        return derive.query(reader, source, start, end, resolution)
    except ArchiveError as e:
        raise ViewError(str(e)) from None


def query_window(reader, source, start: int, end: int, max_cols: int, explicit: bool) -> tuple:
    """(query result, start, end): the window in bins for max_cols columns. A window the user
    did not set (explicit False) that holds no data moves back to end at the newest data, and
    starts no earlier than the dataset's creation (at least MIN_DEFAULT seconds wide), so the
    first picture of a young dataset or a finished run is its data, not an empty width.
    A key of a breakdown asked for by a filter with no events in the window is a ViewError
    naming the keys that have some (a typo shows no empty picture)."""
    if not explicit:
        start = _not_before_creation(source, start, end)
    resolution = choose_bins(start, end, 1, max_cols).width
    qr = query(reader, source, start, end, resolution)
    if not explicit and not qr.present.any():
        latest = latest_data(reader, source, end)
        if latest is not None:   # nothing lately: show the newest data instead of an empty view
            start, end = _not_before_creation(source, latest - (end - start), latest), latest
            resolution = choose_bins(start, end, 1, max_cols).width
            qr = query(reader, source, start, end, resolution)
    if source.how == "key" and qr.present.any():
        _check_key(reader, source, start, end, resolution)
    return qr, start, end


def _not_before_creation(source, start: int, end: int) -> int:
    """start, or the dataset's creation when later (keeping MIN_DEFAULT seconds before end)."""
    created = getattr(source.info, "created", None) or start
    return min(max(start, int(created)), end - MIN_DEFAULT) if created > start else start


def _check_key(reader, source, start, end, resolution):
    try:
        whole = reader.query(source.info.name, start, end, resolution)
    except ArchiveError as e:
        raise ViewError(str(e)) from None
    if source.key not in whole.keys:
        seen = ", ".join(whole.keys[:10]) + (" ..." if len(whole.keys) > 10 else "") if whole.keys else "none"
        raise ViewError(f"no data for {source.info.breakdown}={source.key} in {source.info.name} in this "
                        f"range; keys with data: {seen}")


def latest_data(reader, source, now: int) -> int | None:
    """End (exclusive) of the newest data: found in the hour rollups, then refined in that hour.
    None for a Prometheus server, whose range the user chooses."""
    if not isinstance(reader, Archive):
        return None
    hours = query(reader, source, min(source.info.created, now) - 3600, now + 1, 3600)
    if not (hours.present.size and hours.present.any()):
        return None
    hour = int(hours.times[hours.present.nonzero()[0][-1]])
    fine = query(reader, source, hour, hour + hours.step, None)
    if fine.present.size and fine.present.any():
        return int(fine.times[fine.present.nonzero()[0][-1]]) + fine.step
    return hour + hours.step
