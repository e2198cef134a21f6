"""Another git revision's datasets/ package, imported beside this tree's (as strata_before),
so a benchmark can time both in one run."""
import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def datasets_of(rev: str, folder) -> str:
    """Imports git revision rev's datasets/ (unpacked under folder/before) as the package
    strata_before; returns its name, for importlib.import_module("strata_before.MODULE")."""
    tree = Path(folder, "before")
    tree.mkdir()
    tar = subprocess.run(["git", "-C", str(REPO), "archive", rev, "datasets"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=tar.stdout, check=True)
    spec = importlib.util.spec_from_file_location("strata_before", tree / "datasets" / "__init__.py",
                                                  submodule_search_locations=[str(tree / "datasets")])
    sys.modules["strata_before"] = module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return "strata_before"
