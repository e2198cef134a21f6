"""Finds strata's compiled programs: build/bin of this checkout first, then PATH."""
import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BUILD_BIN = REPO / "build" / "bin"
BUILD_BPF = REPO / "build" / "bpf"


class MissingBinary(RuntimeError):
    """A strata program is neither built nor installed."""


def find_binary(name: str) -> str:
    """Path of `name` (strata-engine, strata-collect, strata-load), or MissingBinary."""
    override = os.environ.get("STRATA_BIN_DIR")
    for folder in ([Path(override)] if override else []) + [BUILD_BIN]:
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(name)
    if found:
        return found
    raise MissingBinary(f"{name} is not built: run `make` in {REPO}")
