"""The noise floor of a `strata check ab` and its "inconclusive" verdict.

Each latency key's p50 interval (from the test over the check's own blocks or
pairs of rounds) says how far the check can tell a change from none: its
half-width is the smallest change this check could have seen (the floor). A key
is called "same" only when that interval lies inside ±threshold, i.e. a change
as large as the threshold is ruled out (an equivalence test at the check's
confidence); a key whose interval reaches past the threshold without being
called worse or better is "inconclusive", with the reason and what would help.
So a noisy machine never gives "same" by chance, and a floor above the
threshold is said, never hidden."""
import math

FLOOR_METRIC = "p50"


def floor_of(m) -> float:
    """The half-width of one metric's interval (inf when the test could not bound it)."""
    return max(m.ci_high - m.effect, m.effect - m.ci_low)


def apply_floor(results: list, threshold: float) -> float | None:
    """Turns "same" keys whose p50 interval is not inside ±threshold into "inconclusive";
    returns the check's floor (the largest p50 half-width over its keys), None without one."""
    floors = []
    for _, kv in results:
        m = next((m for m in kv.metrics if m.metric == FLOOR_METRIC), None)
        if m is None:
            continue
        floor = floor_of(m)
        floors.append(floor)
        if kv.verdict != "same":
            continue
        if -threshold < m.ci_low and m.ci_high < threshold:
            kv.reason = f"p50 {m.effect:+.1%} [{m.ci_low:+.1%}, {m.ci_high:+.1%}] is inside ±{threshold:.1%}, " \
                        f"noise floor ±{floor:.1%}; {kv.reason}"
            continue
        kv.verdict = "inconclusive"
        if floor >= threshold:
            why = f"noise floor ±{floor:.1%} (p50 {m.effect:+.1%} [{m.ci_low:+.1%}, {m.ci_high:+.1%}]) is " \
                  f"above the {threshold:.1%} threshold"
        else:
            why = f"p50 {m.effect:+.1%} [{m.ci_low:+.1%}, {m.ci_high:+.1%}] reaches past the {threshold:.1%} " \
                  f"threshold without being significantly beyond it"
        kv.reason = f"inconclusive: {why}; {kv.reason}"
    return max(floors) if floors else None


def advice(floor: float | None, threshold: float, mode: str) -> str:
    """The one line printed with an inconclusive verdict: why, and what to do."""
    more = "--seconds (more blocks)" if mode == "duet" else "--rounds"
    seen = "an unbounded" if floor is None or math.isinf(floor) else f"±{floor:.1%}"
    return f"inconclusive: this check could only see changes beyond {seen} around its estimate, and cannot rule " \
           f"out a {threshold:.1%} change; run it longer ({more}), on a quieter runner, or with a larger --threshold"
