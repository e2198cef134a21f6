"""The README's kernel table, written from the kernel matrix's results
(build/vm/matrix/KERNEL.json) between its two marker lines; never by hand."""
import json
import re
import time
from pathlib import Path

from . import kernels, matrix

BEGIN, END = "<!-- kernel-table: begin (make test-kernels writes it) -->", "<!-- kernel-table: end -->"
COLUMNS = matrix.VIEWS


def _cell(v: dict | None) -> str:
    if v is None:
        return "not run"
    if v["state"] == "ok":
        return "exact"
    if v["state"] == "refused":
        need = matrix.required_version(v["why"])
        return f"refused: needs {need[0]}.{need[1]}+" if need else "refused"
    return "**failed**"


def _nfsd_cell(r: dict) -> str:
    """tests/test_collect_nfsd.py's result for this kernel; a host without nfsd says so."""
    path = matrix.RESULTS / "nfsd" / f"{r['kernel']}.json"
    if path.exists() and json.loads(path.read_text())["release"] == r["release"]:
        return "exact"
    doctor = {c["name"]: c for c in (r.get("doctor") or {}).get("checks", [])}
    if "kernel nfsd" in doctor and not doctor["kernel nfsd"]["ok"] and r["kernel"] == "host":
        return "no nfsd in this kernel"
    return "not run"


def _described(key: str) -> str:
    """A kernel key as the table names it: "6.1 security build", "6.1 point release",
    "6.12 from bookworm-backports"."""
    series, suites = kernels.KERNELS[key]
    if key.endswith("-security"):
        return f"{series} security build"
    return f"{series} from {suites[0]}" if suites[0].endswith("-backports") else f"{series} point release"


def render() -> str:
    results = [json.loads(p.read_text()) for p in sorted(matrix.RESULTS.glob("*.json"))]
    results.sort(key=lambda r: tuple(int(n) for n in re.findall(r"\d+", r["release"])))
    lines = [BEGIN, "",
             "| kernel | " + " | ".join(COLUMNS + ["nfsd"]) + " | measured |",
             "|---|" + "---|" * (len(COLUMNS) + 2)]
    for r in results:
        where = "this host" if r["kernel"] == "host" else f"Debian {_described(r['kernel'])}"
        cells = [_cell(r["views"].get(c)) for c in COLUMNS] + [_nfsd_cell(r)]
        day = time.strftime("%Y-%m-%d", time.gmtime(r["measured"]))
        lines.append(f"| {r['release']} ({where}) | " + " | ".join(cells) + f" | {day} |")
    lines += ["", END]
    return "\n".join(lines)


def write(readme: Path) -> None:
    text = readme.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{readme}: no kernel table markers ({BEGIN})")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    readme.write_text(head + render() + tail)
