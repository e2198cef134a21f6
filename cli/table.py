"""Tables and notes that fit the terminal's width: columns two spaces apart, the widest
flexible columns narrowed until the table fits and their values wrapped inside them
(after a comma, a space, a slash or a bracket where there is one), free text wrapped with an indent. Nothing
is cut: a narrow terminal gets more lines, not fewer facts. A pipe gets whole lines."""
import os
import re
import shutil
import sys
import textwrap

MIN_COLUMN = 8
UNLIMITED = 10_000   # output to a pipe or file, no COLUMNS: lines as long as their values


def width() -> int:
    """The terminal's columns (COLUMNS first); UNLIMITED when stdout is no terminal and
    COLUMNS is not set, so a script reading the output gets whole lines."""
    if "COLUMNS" not in os.environ and not sys.stdout.isatty():
        return UNLIMITED
    return shutil.get_terminal_size((80, 24)).columns


def _wrap(text: str, w: int) -> list:
    """text in lines of at most w characters, broken after ',', ' ', '/' or ']' where possible."""
    lines, line = [], ""
    for piece in re.findall(r"[^, /\]]*[, /\]]?", text):
        while len(line) + len(piece) > w:
            if line:
                lines.append(line.rstrip())
                line = ""
            else:
                lines.append(piece[:w])
                piece = piece[w:]
        line += piece
    return lines + [line.rstrip()] if line.strip() or not lines else lines


def lines(rows: list, flexible: tuple, total: int | None = None) -> list:
    """rows (the header first) as lines of at most total columns (default: the terminal's);
    only the columns indexed in flexible are narrowed, the widest first."""
    total = total or width()
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    while sum(widths) + 2 * (len(widths) - 1) > total:
        c = max(flexible, key=lambda i: widths[i])
        if widths[c] <= MIN_COLUMN:
            break
        widths[c] -= 1
    out = []
    for r in rows:
        cells = [_wrap(cell, w) for cell, w in zip(r, widths)]
        for i in range(max(len(c) for c in cells)):
            out.append("  ".join((c[i] if i < len(c) else "").ljust(w) for c, w in zip(cells, widths)).rstrip())
    return out


def note(text: str, total: int | None = None) -> str:
    """A line of free text wrapped to the terminal, its continuation lines indented."""
    return textwrap.fill(text, total or width(), subsequent_indent="  ", break_on_hyphens=False)
