"""The time zone every printed time is in: the local one (TZ), or UTC after use_utc()
(`--utc` on any command); zone() names it for headers and axis titles."""
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
