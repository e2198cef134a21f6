"""Another git revision's Python code, beside this tree's, so a benchmark can time both in
one run: its datasets/ imported as the package strata_before (datasets_of), or its whole
`strata` runnable as a command (strata_of)."""
import importlib
import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LAUNCH = """import sys
sys.meta_path[:] = [f for f in sys.meta_path if "Editable" not in getattr(f, "__name__", type(f).__name__)]
sys.path.insert(0, {root!r})
from strata.cli.main import main
sys.exit(main())
"""


def unpack(rev: str, tree: Path, folders) -> None:
    """Revision rev's folders written under tree."""
    tree.mkdir(parents=True)
    tar = subprocess.run(["git", "-C", str(REPO), "archive", rev, *folders], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=tar.stdout, check=True)


def datasets_of(rev: str, folder) -> str:
    """Imports git revision rev's datasets/ (unpacked under folder/before) as the package
    strata_before; returns its name, for importlib.import_module("strata_before.MODULE")."""
    tree = Path(folder, "before")
    unpack(rev, tree, ["datasets"])
    spec = importlib.util.spec_from_file_location("strata_before", tree / "datasets" / "__init__.py",
                                                  submodule_search_locations=[str(tree / "datasets")])
    sys.modules["strata_before"] = module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return "strata_before"


def strata_of(rev: str, folder) -> list:
    """The command line of revision rev's `strata` (bench/web_weight.py --before): its Python
    packages (the top-level folders holding an __init__.py) unpacked under folder/REV, with
    plotly.js's cartesian bundle this tree built where that revision serves one, and a
    launcher that imports them in place of this tree's (the venv's editable install is
    taken out of the import path)."""
    root = Path(folder, rev.replace("/", "_"))
    tree = root / "strata"
    listed = subprocess.run(["git", "-C", str(REPO), "ls-tree", "-r", "--name-only", rev], capture_output=True,
                            text=True, check=True).stdout.split()
    unpack(rev, tree, sorted({p.split("/")[0] for p in listed if p.count("/") == 1 and p.endswith("/__init__.py")}))
    bundle = REPO / "web" / "static" / "plotly-cartesian.min.js"
    if (tree / "web" / "web.mk").exists() and bundle.exists():
        shutil.copy(bundle, tree / "web" / "static")
    return [sys.executable, "-c", LAUNCH.format(root=str(root))]
