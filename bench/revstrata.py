"""Another git revision's `strata` (bench/web_weight.py --before), runnable beside this
tree's: the revision's Python packages unpacked under a folder, with plotly.js's cartesian
bundle this tree built where that revision serves one, and a launcher that imports them in
place of this tree's (the venv's editable install is taken out of the import path)."""
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("checks", "cli", "datasets", "demos", "heatmaps", "lab", "prometheus", "web")
LAUNCH = """import sys
sys.meta_path[:] = [f for f in sys.meta_path if "Editable" not in getattr(f, "__name__", type(f).__name__)]
sys.path.insert(0, {root!r})
from strata.cli.main import main
sys.exit(main())
"""


def strata_of(rev: str, folder) -> list:
    """The command line of revision rev's `strata` (unpacked under folder/REV)."""
    root = Path(folder, rev.replace("/", "_"))
    tree = root / "strata"
    tree.mkdir(parents=True)
    names = [p for p in PACKAGES if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{rev}:{p}"],
                                                   capture_output=True).returncode == 0]
    tar = subprocess.run(["git", "-C", str(REPO), "archive", rev, *names], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=tar.stdout, check=True)
    bundle = REPO / "web" / "static" / "plotly-cartesian.min.js"
    if (tree / "web" / "web.mk").exists() and bundle.exists():
        shutil.copy(bundle, tree / "web" / "static")
    return [sys.executable, "-c", LAUNCH.format(root=str(root))]
