"""Units: format values for axes and tables, parse user-given values (durations: views/times.py).

Latency is stored in nanoseconds and shown as ns / µs / ms / s; sizes and
offsets are stored in bytes and shown in binary units (KiB, MiB, ...);
everything else is a plain count with SI suffixes (k, M, G).
"""
import math
import re

TIME_UNITS = [(1e9, "s"), (1e6, "ms"), (1e3, "µs"), (1.0, "ns")]
BYTE_UNITS = [(1024.0 ** 6, "EiB"), (1024.0 ** 5, "PiB"), (1024.0 ** 4, "TiB"), (1024.0 ** 3, "GiB"), (1024.0 ** 2, "MiB"), (1024.0, "KiB"), (1.0, "B")]
SI_UNITS = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]

_PARSE_SCALE = {
    "ns": ("ns", 1), "us": ("ns", 1_000), "µs": ("ns", 1_000), "μs": ("ns", 1_000),
    "ms": ("ns", 1_000_000), "s": ("ns", 1_000_000_000),
    "b": ("bytes", 1), "k": ("bytes", 1024), "kib": ("bytes", 1024), "kb": ("bytes", 1000),
    "m": ("bytes", 1024 ** 2), "mib": ("bytes", 1024 ** 2), "mb": ("bytes", 1000 ** 2),
    "g": ("bytes", 1024 ** 3), "gib": ("bytes", 1024 ** 3), "gb": ("bytes", 1000 ** 3),
    "t": ("bytes", 1024 ** 4), "tib": ("bytes", 1024 ** 4), "tb": ("bytes", 1000 ** 4),
    "p": ("bytes", 1024 ** 5), "pib": ("bytes", 1024 ** 5), "pb": ("bytes", 1000 ** 5),
    "e": ("bytes", 1024 ** 6), "eib": ("bytes", 1024 ** 6), "eb": ("bytes", 1000 ** 6),
}


def family(unit: str) -> str:
    """'time' for ns, 'bytes' for byte sizes and offsets, 'count' otherwise."""
    if unit == "ns":
        return "time"
    if unit.startswith("bytes"):
        return "bytes"
    return "count"


def quantity_name(statistic: str, unit: str) -> str:
    """What the y axis measures, for axis titles: 'latency', 'size', 'offset'."""
    tail = statistic.rsplit(".", 1)[-1]
    if tail in ("latency", "size", "offset"):
        return tail
    return {"time": "latency", "bytes": "size"}.get(family(unit), tail)


def event_noun(statistic: str) -> str:
    """What one counted event is called: NFS operations, disk I/Os, or events."""
    layer = statistic.split(".", 1)[0]
    return {"nfs": "ops", "disk": "I/Os", "l2arc": "I/Os", "zil": "commits", "arc": "accesses"}.get(layer, "events")


def _trim(x: float, sig: int = 3) -> str:
    """x with at most `sig` significant digits and no trailing zeros."""
    if x == 0:
        return "0"
    digits = max(sig - 1 - int(math.floor(math.log10(abs(x)))), 0)
    text = f"{x:.{digits}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def _scaled(v: float, table, sig: int) -> str:
    for scale, suffix in table:
        if abs(v) >= scale:
            return _trim(v / scale, sig) + suffix
    return _trim(v, sig) + table[-1][1]


def format_value(v: float, unit: str, sig: int = 3) -> str:
    """A value in the dataset's unit as short text: '120µs', '4KiB', '1.2k'."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if v == 0:
        return {"time": "0", "bytes": "0"}.get(family(unit), "0")
    fam = family(unit)
    if fam == "time":
        return _scaled(v, TIME_UNITS, sig)
    if fam == "bytes":
        return _scaled(v, BYTE_UNITS, sig)
    return _scaled(v, SI_UNITS, sig)


def typed_value(v: float, unit: str) -> str:
    """A value as a command's --range reads it back: '2.223ms', '1.5MiB' (format_value's text
    to 4 digits, µ written u); a plain number for a unit with no suffixes."""
    if family(unit) not in ("time", "bytes"):
        return str(int(v))
    return format_value(v, unit, sig=4).replace("µ", "u")


def format_count(n: float) -> str:
    """A count or rate for panels and tables, at most 7 characters: 987, 1.23k, 45.6M; two
    decimals below 10, three significant digits below 0.1 (0.0123, 0.00123) and below
    0.001 two in exponent form (3.2e-7). Only an exact 0 reads "0"."""
    if n == 0:
        return "0"
    if abs(n) < 0.001:
        mantissa, exponent = f"{n:.1e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exponent)}"
    if abs(n) < 0.1:
        return _trim(n, 3)
    if abs(n) < 10 and n != int(n):
        return f"{n:.2f}".rstrip("0").rstrip(".")
    if abs(n) < 1000:
        return f"{n:.0f}" if n == int(n) or abs(n) >= 100 else f"{n:.1f}".rstrip("0").rstrip(".")
    return _scaled(n, SI_UNITS, 3)


def parse_value(text: str, unit: str) -> int:
    """'10ms' -> 10_000_000 (unit ns); '64KiB' -> 65536 (unit bytes); bare numbers are base units."""
    if re.fullmatch(r"\s*[+-]?(nan|inf|infinity)\s*[a-zA-Zµμ]*\s*", text, re.IGNORECASE):
        raise ValueError(f"{text.strip()}: not a finite number")
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-zA-Zµμ]*)\s*", text)
    if not m:
        raise ValueError(f"not a value: {text!r}")
    number, suffix = float(m.group(1)), m.group(2).lower()
    scale = 1
    if suffix:
        if suffix not in _PARSE_SCALE:
            raise ValueError(f"unknown unit {m.group(2)!r} in {text!r}")
        want, scale = _PARSE_SCALE[suffix]
        have = "bytes" if family(unit) == "bytes" else ("ns" if family(unit) == "time" else None)
        if have != want:
            raise ValueError(f"{text!r} is not a {'time' if have == 'ns' else 'size' if have else 'plain number'}")
    if not math.isfinite(number * scale):
        raise ValueError(f"{text.strip()}: too large")
    return int(round(number * scale))


def format_duration(seconds: float) -> str:
    """600 -> '10m', 5400 -> '1h30m', 45 -> '45s'."""
    s = int(round(seconds))
    out = []
    for scale, name in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
        if s >= scale:
            out.append(f"{s // scale}{name}")
            s %= scale
    return "".join(out[:2]) or "0s"
