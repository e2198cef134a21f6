"""The data of a resolved name (views/lookup.py) over a window: the QueryResult sized
to the columns a picture has, a default window moved to where the data is, and the
newest data of an archive. Each query reads the dataset found once (derive.Source's
info), never its name again.

Every failure here is a ViewError (heatmaps/errors.py) carrying one line for the user.
"""
from strata.datasets import derive
from strata.datasets.archive import Archive
from strata.datasets.errors import ArchiveError
from strata.heatmaps.errors import ViewError
from strata.heatmaps.timebins import choose_bins

MIN_DEFAULT = 60      # the narrowest default window, in seconds


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
        whole = reader.read(source.info, start, end, resolution)
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
