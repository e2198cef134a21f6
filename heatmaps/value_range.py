"""Value ranges for drill-down: `--range A..B` on a latency, size or offset dataset.

A range is written LO..HI, either end may be left out (`10ms..`, `..200us`,
`1ms..5ms`, `64KiB..`, `..4k`). Values take the dataset's units (see
units.parse_value): time as ns, us (or µs), ms, s; sizes and offsets as bytes
with binary suffixes k/KiB, m/MiB, g/GiB, t/TiB, p/PiB, e/EiB (1024-based) or decimal kB,
MB, GB, TB, PB, EB (1000-based); a bare number is in the dataset's base unit (ns, bytes).
A value lies in the range when LO <= value < HI.

The data holds whole llhist buckets, so the range is widened to bucket edges:
LO moves down to the lower edge of its bucket, HI up to the upper edge of the
bucket it falls in (unless it is an edge already). The snapped range is exact:
every bucket lies wholly inside it or wholly outside.
"""
from dataclasses import dataclass

import numpy as np

from strata.datasets import llhist

from .units import family, format_value, parse_value

_LOWER = llhist.lower_bounds()
_UPPER = llhist.upper_bounds()


@dataclass(frozen=True)
class ValueRange:
    text: str                 # as the user wrote it
    asked: tuple              # (lo or None, hi or None) in the dataset's unit
    lo: int                   # snapped lower edge (0 when open)
    hi: int | None            # snapped upper edge; None = no upper end
    unit: str

    @property
    def snapped(self) -> bool:
        """True when an end given was moved to a bucket edge."""
        lo, hi = self.asked
        return (lo is not None and lo != self.lo) or (hi is not None and hi != self.hi)

    def label(self) -> str:
        """'10ms..∞', '0..200µs', '1ms..5ms' (the snapped edges)."""
        hi = "∞" if self.hi is None else format_value(self.hi, self.unit, sig=4)
        return f"{format_value(self.lo, self.unit, sig=4)}..{hi}"

    def note(self) -> str:
        """'1ms..5.1ms (snapped from 1ms..5.05ms)', or '1ms..5ms' when nothing moved."""
        return self.label() + (f" (snapped from {self.text.strip()})" if self.snapped else "")

    def buckets(self, ids: np.ndarray) -> np.ndarray:
        """Boolean mask over llhist bucket ids: the buckets inside the range."""
        ids = np.asarray(ids, dtype=np.int64)
        inside = _LOWER[ids] >= self.lo
        if self.hi is not None:
            inside &= _UPPER[ids] <= self.hi
        return inside

    def to_json(self) -> dict:
        return {"text": self.text, "asked": list(self.asked), "from": self.lo, "to": self.hi,
                "unit": self.unit, "snapped": self.snapped}


def snap_down(v: int) -> int:
    """The lower edge of v's bucket."""
    return llhist.lower(llhist.bucket(v))


def snap_up(v: int) -> int | None:
    """v when it is a bucket edge, else the upper edge of its bucket; None past the last bucket."""
    if v > llhist.U64_MAX:
        return None
    b = llhist.bucket(v)
    return v if llhist.lower(b) == v else llhist.upper(b)


def parse(text: str, unit: str) -> ValueRange:
    """A ValueRange from 'LO..HI'; ValueError with one line saying what is wrong."""
    if family(unit) == "count":
        raise ValueError(f"--range needs a latency, size or offset dataset, not one in {unit}")
    if text.count("..") != 1:
        raise ValueError(f"not a range: {text!r} (try 10ms.., ..200us, 1ms..5ms, 64KiB..)")
    left, right = (s.strip() for s in text.split(".."))
    if not left and not right:
        raise ValueError(f"the range {text!r} has no end: give LO.., ..HI or LO..HI")
    try:
        lo = parse_value(left, unit) if left else None
        hi = parse_value(right, unit) if right else None
    except ValueError as e:
        raise ValueError(f"in range {text!r}: {e}") from None
    if lo is not None and lo > llhist.U64_MAX:
        raise ValueError(f"in range {text!r}: {left} is beyond the largest value")
    if lo is not None and hi is not None and lo >= hi:
        raise ValueError(f"the range {text!r} is empty: {left} is not below {right}")
    if hi == 0:
        raise ValueError(f"the range {text!r} is empty: nothing lies below 0")
    return ValueRange(text=text, asked=(lo, hi), lo=0 if lo is None else snap_down(lo),
                      hi=None if hi is None else snap_up(hi), unit=unit)

