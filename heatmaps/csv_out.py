"""`--format csv` of a breakdown: its series (a time column, one column per key,
wide as spreadsheets want) or its top-N table; numbers as in JSON (json_out.clean)."""
import csv
import io

from .json_out import clean


def _text(rows) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().rstrip("\n")


def _cell(x):
    v = clean(x)
    return "" if v is None else v


def breakdown_series(doc: dict) -> str:
    """From breakdown.to_json: time, then one column per key in the unit ('ops/s', 'ns')."""
    head = ["time"] + [f"{s['key']} ({doc['unit']})" for s in doc["series"]]
    rows = [[t] + [_cell(s["values"][i]) for s in doc["series"]] for i, t in enumerate(doc["times"])]
    return _text([head] + rows)


def breakdown_table(doc: dict) -> str:
    """From breakdown.to_json: one line per key of the table, its columns as in JSON."""
    if not doc["table"]:
        return _text([["key"]])
    head = list(doc["table"][0])
    return _text([head] + [[_cell(r.get(c)) for c in head] for r in doc["table"]])
