"""Where the archive lives by default.

--archive PATH or $STRATA_ARCHIVE wins. Otherwise root uses
/var/lib/strata/archive.db and other users ~/.local/share/strata/archive.db
($XDG_DATA_HOME/strata/archive.db); a non-root reader whose own archive does
not exist reads the system one, so reading needs no root.
"""
import os
from pathlib import Path

SYSTEM = Path("/var/lib/strata/archive.db")


def user_archive() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "strata" / "archive.db"


def _present(path: Path) -> bool:
    """Whether path exists; a folder this user cannot search counts as present, so that
    opening it says "Permission denied" rather than that nothing is there."""
    try:
        return path.exists()
    except PermissionError:
        return True


def default_archive(for_reading: bool) -> str:
    """The archive path to use when none was given."""
    env = os.environ.get("STRATA_ARCHIVE")
    if env:
        return env
    if os.geteuid() == 0:
        return str(SYSTEM)
    mine = user_archive()
    if for_reading and not _present(mine) and _present(SYSTEM):
        return str(SYSTEM)
    return str(mine)
