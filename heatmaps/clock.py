"""The time zone every printed time is in: the local one (TZ), or UTC after use_utc()
(`--utc` on any command); zone() names it for headers and axis titles, typed() writes a
time as a command's --since/--until reads it back."""
import datetime as dt
import os
import time


def use_utc() -> None:
    """From now on, local time is UTC for this process (time.localtime, datetime.fromtimestamp)."""
    os.environ["TZ"] = "UTC"
    time.tzset()


def zone(t: float | None = None) -> str:
    """The zone's abbreviation at t (default now): 'UTC', 'CET', 'CEST'; the numeric
    offset ('+0530') where the zone has no abbreviation."""
    name = time.strftime("%Z", time.localtime(t))
    return name if name and not name[0] in "+-" else time.strftime("%z", time.localtime(t))


def typed(t: float) -> str:
    """Unix seconds t as local ISO 8601 with its offset, '2026-11-29T04:10:05+01:00': what a
    printed command's --since or --until reads back as the same second anywhere."""
    return dt.datetime.fromtimestamp(int(t)).astimezone().isoformat(timespec="seconds")
