"""Time and duration input of every command that reads: --last, --since, --until (and
stream's --since) read by one grammar, the archive's own (datasets/retention.py), so
`--last 1h30m` and `prune --older-than 1h30m` read alike.

A refusal is a ViewUsageError (heatmaps/errors.py): one line, exit 2.
"""
import datetime as dt
import re
import time

from strata.datasets import retention
from strata.datasets.errors import ArchiveError
from strata.heatmaps.errors import ViewUsageError

DEFAULT_LAST = 600
CLOCK = r"[0-9]{1,2}:[0-9]{2}(:[0-9]{2})?"   # HH:MM[:SS], today's, or yesterday's when still to come


def parse_duration(text: str) -> int:
    """'10m' -> 600, '1h30m' -> 5400, '90' -> 90 seconds: retention.parse_duration's grammar,
    'all' refused; its refusal a ValueError."""
    try:
        return retention.parse_duration(text, allow_all=False)
    except ArchiveError as e:
        raise ValueError(str(e)) from None


def parse_time(text: str, now: int) -> int:
    """Unix seconds from 'now', '-10m' / '10m ago', an epoch, 'HH:MM[:SS]' (today's; yesterday's
    when still to come) or ISO 8601."""
    t = text.strip().lower()
    if t == "now":
        return now
    m = re.fullmatch(r"-\s*(\S+)|(\S+)\s+ago", t)
    if m:
        return now - parse_duration(m.group(1) or m.group(2))
    if re.fullmatch(r"[0-9]{1,11}", t):       # unix seconds, 0 (1970) included, as dates from 1970 are
        return int(t)
    if re.fullmatch(CLOCK, t):
        today = dt.datetime.fromtimestamp(now).date().isoformat()
        try:
            value = int(dt.datetime.fromisoformat(f"{today}T{t.zfill(5) if len(t) == 4 else t}").timestamp())
        except ValueError as e:                 # 25:00: "hour must be in 0..23"
            raise ValueError(f"not a time: {text!r} ({e})") from None
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
                raise ViewUsageError(f"--since {since} is not before --until {until}{_yesterday(until, end, now)}"
                                     if until else
                                     f"--since {since} is in the future" if start > end else
                                     f"--since {since} is not before now")
            return start, end, True
        return end - DEFAULT_LAST, end, until is not None
    except ValueError as e:
        raise ViewUsageError(str(e)) from None


def _yesterday(text: str, value: int, now: int) -> str:
    """A note for an HH:MM[:SS] that parse_time took as yesterday's (it was still to come today)."""
    if re.fullmatch(CLOCK, text.strip()) and (dt.datetime.fromtimestamp(value).date()
                                              < dt.datetime.fromtimestamp(now).date()):
        return f" ({text} is still to come today, so it is yesterday's)"
    return ""
