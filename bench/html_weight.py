"""What the demo's HTML pictures weigh on disk: the same seven figures written from a
demo's archive (strata demo -o DIR leaves DIR/archive.db and DIR/summary.json) with
plotly.js once beside them (the default) and inlined in each (--self-contained), so
the two are measured from the same data in the same run.

    .venv/bin/python bench/html_weight.py DEMO_DIR

Without DEMO_DIR (BENCH_SMOKE=1, the tests' smoke mode) it first runs a short demo
(10 s of reads, 64 MiB working set, no PNG) into a temporary folder.
"""
import json
import os
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path
from types import SimpleNamespace

from strata.demos import pictures
from strata.heatmaps import export


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.iterdir() if p.suffix in (".html", ".js"))


def main(demo_dir: str):
    facts = SimpleNamespace(**json.loads((Path(demo_dir) / "summary.json").read_text()))
    start, end = (facts.run_start or facts.load_start), facts.load_end + 1
    archive = str(Path(demo_dir) / "archive.db")
    sizes = {}
    writer = export.write_html
    for mode, self_contained in (("plotly.js beside", False), ("self-contained", True)):
        with tempfile.TemporaryDirectory() as out:
            pictures.export.write_html = partial(writer, self_contained=self_contained)
            written = pictures.write_files(archive, facts, start, end, Path(out), png=False)
            sizes[mode] = (len(written), folder_bytes(Path(out)))
    pictures.export.write_html = writer
    for mode, (n, size) in sizes.items():
        print(f"{mode:18} {n} HTML files, {size / 1e6:6.2f} MB (HTML + JS)")
    print(f"ratio self-contained / beside: {sizes['self-contained'][1] / sizes['plotly.js beside'][1]:.1f}")


def short_demo(folder: str) -> str:
    """A demo folder from a short run of the real demo (root: BPF probes)."""
    strata = Path(sys.executable).with_name("strata")
    subprocess.run([str(strata), "demo", "-o", folder, "--duration", "10", "--working-set", "64M",
                    "--arc-max", "16M", "--no-png"], check=True, stdout=subprocess.DEVNULL)
    return folder


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(sys.argv[1])
    elif os.environ.get("BENCH_SMOKE") == "1":
        with tempfile.TemporaryDirectory(prefix="strata-html-weight-") as scratch:
            main(short_demo(scratch))
    else:
        sys.exit("usage: bench/html_weight.py DEMO_DIR (a folder written by `strata demo -o DIR`)")
