"""Stopping a duet early (checks/duet.py) once its p50 is already decided, with the
error rate stated: an asymptotic confidence sequence for the mean log ratio of
the blocks, valid at every block at once, so looking after each block and
stopping at the first decisive one keeps the miscoverage at most alpha
(Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas, "Time-uniform central limit
theory and asymptotic confidence sequences", Annals of Statistics 2024: the
Gaussian-mixture boundary with the sample variance plugged in, its mixing
parameter tuned to be tightest at the planned number of blocks).

A fixed-length check's interval looked at after every block would miss far more
often than 1 − confidence (the peeking problem); this sequence is wider than that
interval by a factor of about 1.5 at the planned length, and the check only stops
on it, the verdict itself still coming from the test over the blocks measured."""
import math

import numpy as np

MIN_BLOCKS = 20        # fewer: the sample variance is too rough for the asymptotic sequence


def half_width(n: int, sd: float, alpha: float, planned: int) -> float:
    """Half-width of the sequence for the mean of n values with standard deviation sd."""
    rho2 = (-2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)) / planned
    v = n * rho2 + 1
    return sd / n * math.sqrt(v / rho2 * math.log(v / alpha ** 2))


def confidence_sequence(d, alpha: float, planned: int) -> tuple:
    """(mean, low, high) of the log ratios d so far; None before MIN_BLOCKS."""
    d = np.asarray(d, np.float64)
    d = d[np.isfinite(d)]
    if len(d) < MIN_BLOCKS:
        return None
    mean = float(d.mean())
    h = half_width(len(d), float(d.std(ddof=1)), alpha, planned)
    return mean, mean - h, mean + h


def decided(d, threshold: float, alpha: float, planned: int) -> str | None:
    """"worse"/"better" when the sequence excludes 0 with its mean beyond the threshold,
    "same" when it lies inside ±threshold, else None (keep measuring)."""
    cs = confidence_sequence(d, alpha, planned)
    if cs is None:
        return None
    return verdict(*(math.expm1(x) for x in cs), threshold)


def verdict(effect: float, lo: float, hi: float, threshold: float) -> str | None:
    """"worse"/"better" when the interval [lo, hi] of a relative effect excludes 0 with the
    effect beyond the threshold, "same" when it lies inside ±threshold, else None."""
    if lo > 0 and effect > threshold:
        return "worse"
    if hi < 0 and effect < -threshold:
        return "better"
    if -threshold < lo and hi < threshold:
        return "same"
    return None
