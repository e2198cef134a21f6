"""Archive levels (second, minute, hour), the steps each stores, and how long each keeps data.

A retention is "all" (None) or at least N seconds, per level; coarser levels
must keep data at least as long as finer ones. The default bounds every level
(a week of seconds, 90 days of minutes, two years of hours), so an archive
nobody tends stops growing: its size then follows the number of datasets and
their breakdown keys (bounded by the collector), not the time it has run. Durations print as
30s, 90m, 48h, 7d, 2w, and read so or compound (1h30m) or as bare seconds (parse_duration).
"""
import re
from dataclasses import dataclass

from .errors import ArchiveError

LEVELS = ("second", "minute", "hour")
STEP = {"second": 1, "minute": 60, "hour": 3600}
# the record steps each level stores: the minute level also holds ten-minute sums of its
# minutes (step 600), written, kept, pruned and copied with it; no retention of their own
STORED = {"second": (1,), "minute": (60, 600), "hour": (3600,)}
TEN_MINUTES = 600
LEVEL_OF = {step: lv for lv, steps in STORED.items() for step in steps}
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
PARSE_UNITS = {**UNITS, "": 1, "sec": 1, "min": 60}
LONGEST = 100 * 365 * 86400   # the longest duration a user may give (100 years), here and in views


def too_long(text: str) -> str:
    """The one line refusing a duration longer than LONGEST."""
    return f"{text.strip()}: longer than 100 years"


def parse_duration(text: str, allow_all: bool = True):
    """Seconds in a duration, the one grammar of every command (`--last`, `--keep`, `prune
    --older-than`): a number of seconds ('90'), or numbers each with a unit s (sec), m (min),
    h, d or w, summed ('7d', '1h30m'); None for 'all' (when allowed)."""
    text = text.strip().lower()
    if allow_all and text == "all":
        return None
    parts = re.findall(r"(\d+)\s*([a-z]*)", text)
    if not parts or "".join(n + u for n, u in parts) != re.sub(r"\s+", "", text) or \
            any(u not in PARSE_UNITS or (not u and len(parts) > 1) for _, u in parts):
        raise ArchiveError(f"bad duration {text!r}: use numbers with units s/m/h/d/w, e.g. 7d or 1h30m"
                           + (", or 'all'" if allow_all else ""))
    seconds = sum(int(n) * PARSE_UNITS[u] for n, u in parts)
    if seconds == 0:
        raise ArchiveError(f"{text!r} is no time at all: give a positive duration, e.g. 1h or 7d")
    if seconds > LONGEST:
        raise ArchiveError(too_long(text) + (" (to keep everything: 'all')" if allow_all else ""))
    return seconds


def format_duration(seconds) -> str:
    if seconds is None:
        return "all"
    for unit in ("w", "d", "h", "m"):
        if seconds % UNITS[unit] == 0:
            return f"{seconds // UNITS[unit]}{unit}"
    return f"{seconds}s"


@dataclass(frozen=True)
class Retention:
    second: int | None = 7 * 86400
    minute: int | None = 90 * 86400
    hour: int | None = 104 * 7 * 86400

    def of(self, level: str):
        return getattr(self, level)

    def check(self) -> "Retention":
        inf = float("inf")
        keep = [inf if self.of(lv) is None else self.of(lv) for lv in LEVELS]
        for finer, coarser, a, b in zip(LEVELS, LEVELS[1:], keep, keep[1:]):
            if b < a:
                raise ArchiveError(f"retention: the {coarser} level must keep data at least as long "
                                   f"as the {finer} level ({format_duration(self.of(coarser))} < "
                                   f"{format_duration(self.of(finer))})")
        return self

    def __str__(self):
        return " ".join(f"{lv}={format_duration(self.of(lv))}" for lv in LEVELS)

    def short(self) -> str:
        """second/minute/hour durations, e.g. 7d/90d/104w."""
        return "/".join(format_duration(self.of(lv)) for lv in LEVELS)


def parse_keep(specs, base: Retention | None = None) -> Retention:
    """Apply LEVEL=DURATION specs (e.g. ['second=2d', 'minute=all']) to a retention."""
    base = base or Retention()
    values = {lv: base.of(lv) for lv in LEVELS}
    for spec in specs:
        level, sep, dur = spec.partition("=")
        if not sep or level not in LEVELS:
            raise ArchiveError(f"bad retention {spec!r}: use LEVEL=DURATION with LEVEL one of "
                               + ", ".join(LEVELS))
        values[level] = parse_duration(dur)
    return Retention(**values).check()
