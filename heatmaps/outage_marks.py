"""Outages on a breakdown, as the heat map shows them: the spans whose events were
collected as one record (the collector stalled, the archive could not be written)
shaded on the figure's time axis and named in a note (describe.outage_note) under
the title; the terminal and JSON carry the same note and spans."""
import datetime as dt

from . import describe


def shade(fig, spans, xaxis: str = "x"):
    """fig with each span shaded over the time axis xaxis (its whole height) and the note
    added below its title; fig itself."""
    note = describe.outage_note(spans)
    if not note:
        return fig
    y = "y" + xaxis[1:]
    for start, end, _ in spans:
        fig.add_shape(type="rect", xref=xaxis, yref=f"{y} domain", y0=0, y1=1, layer="below",
                      x0=dt.datetime.fromtimestamp(int(start)), x1=dt.datetime.fromtimestamp(int(end)),
                      fillcolor="#888", opacity=0.12, line_width=0)
    fig.layout.title.text += f"<br><span style='font-size:12px;color:#555'>{note}</span>"
    fig.layout.margin.t = (fig.layout.margin.t or 90) + 15
    return fig


def insert_note(lines: list, spans, after: int = 2) -> list:
    """The terminal graph's lines with the outage note after its two header lines."""
    note = describe.outage_note(spans)
    return lines[:after] + [note] + lines[after:] if note else lines


def to_json(spans) -> list:
    return [{"start": int(a), "end": int(b), "cause": c} for a, b, c in spans]
