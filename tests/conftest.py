"""Shared pytest setup: paths to the checkout and its build outputs."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
BUILD = REPO / "build"
sys.path.insert(0, str(Path(__file__).resolve().parent))
from vm.matrix import VIEW_LAYERS  # noqa: E402  (tests/ is on the path from here on)

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


# --- the kernel matrix (tests/vm/, tests/test_kernels.py) ---
# A test marked @pytest.mark.view("nfs") proves that view counts exactly on the kernel
# it runs on; the matrix runs the marked tests in a guest of each kernel. In the guest
# (STRATA_GUEST=1, one emulated CPU) work runs about ten times slower, so floors on how
# much load a test got are ten times lower there, and waits ten times longer; what it
# counted must still be exact.
IN_GUEST = os.environ.get("STRATA_GUEST") == "1"


def pytest_configure(config):
    config.addinivalue_line("markers", "view(name): a test of the kernel matrix proving that view "
                            f"({', '.join(VIEW_LAYERS)}) counts exactly")


def load_floor(n: int) -> int:
    """The least load a test expects: n on a host, n / 10 in the matrix's emulated guest."""
    return n // 10 if IN_GUEST else n


def patience(seconds: float) -> float:
    """How long to wait for something the host does in `seconds`: ten times longer in the
    emulated guest (the verifier alone takes 10-40 s there for the wire programs)."""
    return seconds * 10 if IN_GUEST else seconds


_catalogue = None


def _layer_support(layer: str) -> tuple[bool, str]:
    """Whether strata-collect can collect this layer here, and why not (its --catalogue)."""
    global _catalogue
    if _catalogue is None:
        from strata.datasets import catalogue
        out = subprocess.run([str(BUILD / "bin" / "strata-collect"), "--catalogue"], capture_output=True,
                             text=True, timeout=60).stdout
        _catalogue = catalogue.with_support(out)
    for s in _catalogue:
        if s.layer == layer:
            return s.supported, s.reason
    return False, f"no statistic of layer {layer} in the catalogue"


@pytest.fixture(autouse=True)
def _view(request, record_property):
    """For a view test: records its view (the matrix reads it from the JUnit report) and
    skips, saying why, when this kernel lacks what the view needs."""
    marker = request.node.get_closest_marker("view")
    if marker is None:
        return
    view = marker.args[0]
    record_property("view", view)
    ok, why = _layer_support(VIEW_LAYERS[view])
    if not ok and "kernel lacks" in why:
        pytest.skip(f"{view} view refused on this kernel: {why}")


@pytest.hookimpl(trylast=True)     # after -k and -m have deselected: a deselected test starts nothing
def pytest_collection_modifyitems(session, config, items):
    """Tests that wait for a guest (their module defines start_guest) start it now, in the
    background (tests/vm/jobs.py), and run last: the guest runs beside the suite."""
    waiting = [i for i in items if hasattr(i.module, "start_guest")]
    if not config.option.collectonly:
        for item in waiting:
            item.module.start_guest(item)
    items[:] = [i for i in items if i not in waiting] + waiting
