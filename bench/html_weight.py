"""What the demo's HTML pictures weigh on disk: the same seven figures written from a
demo's archive (strata demo -o DIR leaves DIR/archive.db and DIR/summary.json) with
plotly.js once beside them (the default) and inlined in each (--self-contained), so
the two are measured from the same data in the same run.

    .venv/bin/python bench/html_weight.py DEMO_DIR
"""
import json
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


if __name__ == "__main__":
    main(sys.argv[1])
