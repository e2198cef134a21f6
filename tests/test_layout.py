"""The Python package's folders import downward only (README, "Layout"): each folder
is a role, and a role may use the roles below it, never one above it nor a sibling
that is not listed. Read from the source with ast, so an import placed inside a
function counts as much as one at the top."""
import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# folder -> the folders it may import from (besides itself)
ALLOWED = {
    "datasets": set(),
    "prometheus": {"datasets"},
    "lab": {"datasets"},
    "checks": {"datasets", "lab"},
    "heatmaps": {"datasets", "prometheus"},
    "demos": {"datasets", "lab", "heatmaps"},
    "web": {"datasets", "prometheus", "heatmaps"},
    "cli": {"datasets", "prometheus", "lab", "checks", "heatmaps", "demos", "web"},
}


def imports_of(path: Path):
    """(line, strata subpackage) of every `strata.X` import in the file."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "strata" and len(parts) > 1:
                yield node.lineno, parts[1]


def test_every_package_folder_has_a_rank():
    folders = {p.parent.name for p in REPO.glob("*/__init__.py")}
    assert folders <= set(ALLOWED), f"a new package folder needs its place in ALLOWED: {folders - set(ALLOWED)}"


@pytest.mark.parametrize("folder", sorted(ALLOWED))
def test_imports_run_downward(folder):
    upward = [f"{path.relative_to(REPO)}:{line} imports strata.{target}"
              for path in sorted((REPO / folder).rglob("*.py")) if not path.name.endswith("_pb2.py")
              for line, target in imports_of(path)
              if target != folder and target not in ALLOWED[folder]]
    assert not upward, "\n".join(upward)
