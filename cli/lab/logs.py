"""The last line of a child process's log: what one-line lab errors quote."""
from pathlib import Path


def last_line(path: Path, missing: str = "no output") -> str:
    """The log's last non-empty line, or `missing` when it is absent or empty."""
    try:
        lines = Path(path).read_text(errors="replace").strip().splitlines()
    except OSError:
        return missing
    return lines[-1] if lines else missing
