"""Shared pytest setup: paths to the checkout and its build outputs."""
import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
sys.path.insert(0, str(Path(__file__).resolve().parent))

# Debian's chromium for plotly's static export (kaleido) and browser tests.
os.environ.setdefault("BROWSER_PATH", "/usr/bin/chromium")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def build_dir() -> Path:
    return BUILD


def built(relpath: str) -> Path:
    """A build output that `make` must have produced; fails (never skips) when missing."""
    path = BUILD / relpath
    if not path.exists():
        pytest.fail(f"{path} is not built: run `make` first")
    return path
