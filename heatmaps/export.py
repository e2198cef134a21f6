"""Writing plotly figures: self-contained HTML, or PNG/SVG through kaleido and Chromium."""
import os
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
IMAGE_SIZE = (1400, 800)


class ExportError(RuntimeError):
    """A figure could not be written; the message is one line for the user."""


def write_html(fig, path: str):
    """One HTML file with plotly.js inline: opens offline, zoom and hover work."""
    fig.write_html(path, include_plotlyjs=True, full_html=True,
                   config={"displaylogo": False, "responsive": True, "scrollZoom": False})


def write_image(fig, path: str, fmt: str, size=IMAGE_SIZE):
    """PNG or SVG via kaleido 1.x, driving Debian's Chromium unless BROWSER_PATH says otherwise."""
    if "BROWSER_PATH" not in os.environ and Path(CHROMIUM).exists():
        os.environ["BROWSER_PATH"] = CHROMIUM
    try:
        fig.write_image(path, format=fmt, width=size[0], height=size[1], scale=1 if fmt == "svg" else 2)
    except Exception as e:   # kaleido raises assorted errors when Chromium cannot start
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ExportError(f"cannot export {fmt.upper()} (kaleido/Chromium): {first}") from None


def write(fig, path: str, fmt: str):
    if fmt == "html":
        write_html(fig, path)
    elif fmt in ("png", "svg"):
        write_image(fig, path, fmt)
    else:
        raise ExportError(f"unknown format {fmt!r}")
