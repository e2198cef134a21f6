"""Lines for people: the last line of a child process's log (what one-line lab errors
quote), and a command's own progress and warning lines on stderr."""
import sys
from pathlib import Path


def last_line(path: Path, missing: str = "no output") -> str:
    """The log's last non-empty line, or `missing` when it is absent or empty."""
    try:
        lines = Path(path).read_text(errors="replace").strip().splitlines()
    except OSError:
        return missing
    return lines[-1] if lines else missing


def say(command: str, text: str) -> None:
    """One progress or warning line of a strata command on stderr: `strata COMMAND: text`."""
    print(f"strata {command}: {text}", file=sys.stderr, flush=True)
