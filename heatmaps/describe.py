"""The words around a heat map: title, time range, totals, crop and outage notes (all renderers)."""
import time

import numpy as np

from .breakdown import OTHER
from .clock import zone
from .units import event_noun, format_count, format_duration, format_value, quantity_name


def counted(n: int, noun: str) -> str:
    """'1 key', '1,204 keys': a count and its noun, plural but for one."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def selection(name: str, keys: list) -> str:
    """'nfs.latency[client=10.0.0.3]' for one key of nfs.latency[client]; the name otherwise."""
    if len(keys) != 1 or not name.endswith("]"):
        return name if not keys else f"{name} ({counted(len(keys), 'key')})"
    head, _, dim = name[:-1].rpartition("[")
    return f"{head}[{dim}={keys[0]}]" if "=" not in dim else name


def derived(fig) -> str:
    """' (summed from nfs.ops[client])' when the archive derived the name shown, else ''."""
    return f" ({fig.derived})" if getattr(fig, "derived", "") else ""


def time_range(start: int, end: int) -> str:
    """'2025-11-22 09:00:00 → 09:10:00 CET (10m)' in local time (clock.py), its zone named."""
    a, b = time.localtime(start), time.localtime(end)
    right = "%H:%M:%S" if (a.tm_year, a.tm_yday) == (b.tm_year, b.tm_yday) else "%Y-%m-%d %H:%M:%S"
    return (f"{time.strftime('%Y-%m-%d %H:%M:%S', a)} → {time.strftime(right, b)} {zone(end)} "
            f"({format_duration(end - start)})")


def totals(grid) -> str:
    """'1.23M ops · 2.05k ops/s average'."""
    noun = event_noun(grid.statistic)
    if grid.total == 0:
        return f"no {noun} in this range"
    return f"{format_count(grid.total)} {noun} · {format_count(grid.total / grid.seconds)} {noun}/s average"


def whole_percentiles(grid) -> str:
    """'p50 312µs · p99 1.98ms · p99.9 2ms over the range (selected keys)', or '' when empty."""
    if not grid.whole:
        return ""
    said = " · ".join(f"{percentile_label(p)} {format_value(v, grid.unit)}" for p, v in grid.whole.items())
    return f"{said} over the range" + (" (selected keys)" if grid.keys else "")


def bands(grid) -> str:
    """'tier bands: cache at 4.1µs (93%) · disk at 1.2ms (7%)': each band's name where its
    median sits, for a map broken down by tier (rebin.tier_bands), or ''."""
    if not grid.bands:
        return ""
    return "tier bands: " + " · ".join(f"{k} at {format_value(m, grid.unit)} ({percent(100 * share)})"
                                       for k, m, share in grid.bands)


def same_lines(b) -> str:
    """'10.0.0.1 and 10.0.0.2 draw the same line (one hides the other)' for the keys of a line
    graph whose series are equal, or ''."""
    if b.style != "line":
        return ""
    twins = []
    for i in range(len(b.keys)):
        for j in range(i):
            if np.array_equal(b.series[i], b.series[j], equal_nan=True):
                twins.append(f"{b.keys[j] or '-'} and {b.keys[i] or '-'}")
                break
    return "; ".join(twins) + (" draw the same line (one hides the other)" if twins else "")


def y_range(grid) -> str:
    """'linear 0–12ms (auto)' / 'log 1µs–10ms (set)'."""
    lo, hi = format_value(grid.edges[0], grid.unit), format_value(grid.edges[-1], grid.unit)
    how = {"auto": "auto", "set": "set", "outliers": f"outliers cut at p{grid.crop.get('percentile', 0):g}"}
    return f"{grid.axis} {quantity_name(grid.statistic, grid.unit)} {lo}–{hi} ({how[grid.crop['mode']]})"


def cropped(grid) -> str:
    """What lies outside the y-range: '1,020 ops (0.08%) above 12ms; p99.9 = 10.4ms', or ''."""
    noun = event_noun(grid.statistic)
    parts = []
    if grid.above:
        share = 100.0 * grid.above / max(grid.total, 1)
        parts.append(f"{grid.above:,} {noun} ({share:.2g}%) above {format_value(grid.edges[-1], grid.unit)}")
    if grid.below:
        share = 100.0 * grid.below / max(grid.total, 1)
        parts.append(f"{grid.below:,} {noun} ({share:.2g}%) below {format_value(grid.edges[0], grid.unit)}")
    if grid.crop["mode"] == "outliers":
        parts.append(f"p{grid.crop['percentile']:g} = {format_value(grid.crop['value'], grid.unit)}")
    return "; ".join(parts)


CAUSES = {"stall": "the collector stalled", "archive": "the archive could not be written",
          "clock": "the wall clock stepped back"}


def outages(grid, most: int = 3) -> str:
    """'outage 12:00:03–12:01:05 (1m2s, the collector stalled): events spread evenly (one record
    each, none lost)', or '': the outages whose events were collected as one record."""
    return outage_note(grid.spans, most)


def outage_note(spans, most: int = 3) -> str:
    """outages() of a list of (start, end, cause) spans (a heat map's, a breakdown's query's)."""
    if not spans:
        return ""
    parts = []
    for start, end, cause in spans[:most]:
        clock = f"{time.strftime('%H:%M:%S', time.localtime(start))}–{time.strftime('%H:%M:%S', time.localtime(end))}"
        parts.append(f"{clock} ({format_duration(end - start)}, {CAUSES.get(cause, cause)})")
    more = f" and {len(spans) - most} more" if len(spans) > most else ""
    what = "outage" if len(spans) == 1 else "outages"
    return f"{what} {', '.join(parts)}{more}: events spread evenly (one record each, none lost)"


def by(b) -> str:
    """' by client' for a graph broken down by a field, '' for a dataset's one series."""
    return f" by {b.by}" if b.by else ""


def key_count(b) -> str:
    """'12 keys · ' ('1 key · ', '3 components · ' for a time:FAMILY graph) for a graph broken
    down by a field, '' for a dataset's one series."""
    noun = "component" if b.by == "component" else "key"
    return f"{counted(b.total_keys, noun)} · " if b.by else ""


def other(b) -> str:
    """'other (4 keys)', 'other (1 key)': the name of the series summing the keys past the top N."""
    return f"{OTHER} ({counted(b.folded, 'key')})"


def range_of(b) -> str:
    """', latency 10ms..∞' for a breakdown of the events in a value range, else ''."""
    if b.value_range is None:
        return ""
    return f", {quantity_of(b)} {b.value_range.note()}"


def percent(share) -> str:
    """'12.5%', or '-' when there is nothing to divide by."""
    return "-" if share is None else f"{share:.1f}%"


def percentile_label(p: float) -> str:
    return f"p{p:g}"


def quantity_of(b) -> str:
    """'latency' / 'size' for a breakdown or grid."""
    return quantity_name(b.statistic, b.unit)
