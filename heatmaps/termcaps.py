"""What the terminal can show: colour depth (truecolor, 256, none) and size."""
import os
import shutil

MODES = ("truecolor", "256", "none")


def colour_mode(stream, requested: str = "auto") -> str:
    """'truecolor', '256' or 'none'. NO_COLOR and non-TTY output mean 'none' unless forced."""
    if requested != "auto":
        return requested
    if os.environ.get("NO_COLOR"):
        return "none"
    if not (hasattr(stream, "isatty") and stream.isatty()):
        return "none"
    term = os.environ.get("TERM", "")
    if term in ("", "dumb"):
        return "none"
    if os.environ.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return "truecolor"
    return "256"


def size(default=(100, 30)) -> tuple:
    """(columns, lines) of the terminal; COLUMNS/LINES override; `default` when not a TTY."""
    cols, lines = shutil.get_terminal_size(default)
    return max(cols, 40), max(lines, 12)
