"""`strata check` outputs for people and CI systems: a table, JSON, JUnit XML and a
Markdown step summary. Each takes the list of (dataset, KeyVerdict) pairs."""
from dataclasses import asdict, dataclass, field
import math
from xml.etree import ElementTree as ET

SYMBOL = {"worse": "❌ worse", "better": "✅ better", "same": "➖ same", "error": "⚠️ error",
          "inconclusive": "❔ inconclusive"}
EXIT = {"worse": 1, "error": 2, "inconclusive": 3}   # else 0


def json_body(results, baseline, candidate, extra: dict | None = None) -> dict:
    """The fields of the strata.check document (heatmaps/JSON.md). baseline/candidate:
    what was compared (paths, or A and B of `check ab`); extra: more top-level fields
    (the design of the check)."""
    return {
        "baseline": baseline, "candidate": candidate, **(extra or {}),
        "verdict": overall(results),
        "results": [{"dataset": d, **asdict(v)} for d, v in results],
    }


def overall(results) -> str:
    verdicts = {v.verdict for _, v in results}
    for worst in ("error", "worse", "inconclusive", "better"):
        if worst in verdicts:
            return worst
    return "same"


def print_table(results, console, unit: str = "runs", extra: dict | None = None) -> None:
    """unit: what the (baseline, candidate) counts are, runs or rounds; extra: the design's
    fields, whose noise floor (check ab) is said under the table."""
    from rich.table import Table

    floor, threshold = (extra or {}).get("noise_floor"), (extra or {}).get("threshold")
    seen = "unbounded" if floor is None or math.isinf(floor) else f"±{floor:.1%}"
    caption = None if "noise_floor" not in (extra or {}) else \
        f"noise floor {seen} (the p50 interval's half-width: the smallest change this check could see)" \
        + ("" if threshold is None else f", threshold {threshold:.1%}")
    table = Table(title="strata check", title_justify="left", caption=caption, caption_justify="left")
    for col in ("dataset", "key", "verdict", unit, "evidence"):
        table.add_column(col, overflow="fold")
    colour = {"worse": "red", "better": "green", "same": "dim", "error": "yellow", "inconclusive": "yellow"}
    for dataset, v in results:
        table.add_row(dataset, v.key or "(all)", f"[{colour[v.verdict]}]{v.verdict}[/]",
                      f"{v.intervals[0]} / {v.intervals[1]}", v.reason)
    console.print(table)


def write_junit(results, path: str) -> None:
    suite = ET.Element("testsuite", name="strata check", tests=str(len(results)),
                       failures=str(sum(v.verdict == "worse" for _, v in results)),
                       errors=str(sum(v.verdict == "error" for _, v in results)),
                       skipped=str(sum(v.verdict == "inconclusive" for _, v in results)))
    for dataset, v in results:
        case = ET.SubElement(suite, "testcase", classname=dataset, name=v.key or "(all)")
        if v.verdict == "worse":
            ET.SubElement(case, "failure", message=v.reason).text = v.reason
        elif v.verdict == "error":
            ET.SubElement(case, "error", message=v.reason).text = v.reason
        elif v.verdict == "inconclusive":
            ET.SubElement(case, "skipped", message=v.reason)
        else:
            ET.SubElement(case, "system-out").text = f"{v.verdict}: {v.reason}"
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def sparkline(values) -> str:
    """A one-line picture of a series: ▁▂▃▄▅▆▇█, blank where there is no data."""
    bars = "▁▂▃▄▅▆▇█"
    finite = [x for x in values if x == x]
    if not finite:
        return ""
    lo, hi = min(finite), max(finite)
    span = (hi - lo) or 1.0
    return "".join(" " if x != x else bars[min(7, int((x - lo) / span * 7.999))] for x in values)


def write_markdown(results, path: str, series=None) -> None:
    """A CI step summary; `series` maps (dataset, key) to (baseline p99s, candidate p99s),
    per second or per round."""
    lines = [f"## strata check: {SYMBOL[overall(results)]}", "",
             "| dataset | key | verdict | evidence | p99 baseline → candidate |",
             "|---|---|---|---|---|"]
    for dataset, v in results:
        spark = ""
        if series and (dataset, v.key) in series:
            a, b = series[(dataset, v.key)]
            spark = f"`{sparkline(a)}` → `{sparkline(b)}`"
        lines.append(f"| `{dataset}` | {v.key or '(all)'} | {SYMBOL[v.verdict]} | {v.reason} | {spark} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


@dataclass
class Verdict:
    """What a check found: the judged (dataset, KeyVerdict) pairs, the p99 series behind
    them (for the Markdown sparklines), what was compared, and the design's own fields."""
    results: list
    series: dict
    baseline: object
    candidate: object
    unit: str = "runs"                    # what each side's counts are: runs, rounds or blocks
    extra: dict = field(default_factory=dict)


def emit(verdict: Verdict, to_json, junit: str | None, markdown: str | None) -> int:
    """Prints the verdict (a table, or to_json(json_body) when given), writes the JUnit and
    Markdown files asked for, and returns the exit status: 0 same or better, 1 worse, 2 error,
    3 inconclusive (the check's noise floor could not rule out a threshold-sized change)."""
    if to_json:
        print(to_json(json_body(verdict.results, verdict.baseline, verdict.candidate, verdict.extra or None)))
    else:
        from rich.console import Console
        print_table(verdict.results, Console(), verdict.unit, verdict.extra)
    if junit:
        write_junit(verdict.results, junit)
    if markdown:
        write_markdown(verdict.results, markdown, verdict.series)
    return EXIT.get(overall(verdict.results), 0)

