"""The Python package's folders import downward only (README, "Layout"): each folder
is a role, and a role may use the roles below it, never one above it nor a sibling
that is not listed. Read from the source with ast, so an import placed inside a
function counts as much as one at the top."""
import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# folder -> the folders it may import from (besides itself)
ALLOWED = {
    "posix": set(),
    "datasets": set(),
    "prometheus": {"datasets"},
    "collect": {"datasets", "posix"},
    "lab": {"datasets"},
    "checks": {"datasets", "lab"},
    "heatmaps": {"datasets", "posix"},   # a QueryResult only: test_heatmaps_take_only_query_results
    "views": {"datasets", "prometheus", "heatmaps"},
    "demos": {"datasets", "lab", "heatmaps", "views"},
    "web": {"datasets", "prometheus", "collect", "heatmaps", "views"},   # collect: its status and live feed
    "cli": {"datasets", "prometheus", "collect", "lab", "checks", "heatmaps", "views", "demos", "web"},
}
# what heatmaps/ (figures and renderers) may take from below: the QueryResult and the llhist
# buckets its heat maps hold
HEATMAPS_TAKE = {"strata.datasets", "strata.datasets.query", "strata.datasets.llhist"}


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


# The engine's C files call and include downward only.  A unit is a source with its
# headers (X.c with X.h, and a private X_impl.h); a header of no source is a unit
# of its own.  A arrows to B when A includes one of B's headers or names a function
# that B alone defines (read from the source, comments and strings out).
C_NOISE = re.compile(r"/\*.*?\*/|//[^\n]*|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.S)
C_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
C_FUNCTION = re.compile(r"^(?!static\b|extern\b|typedef\b|#)[A-Za-z_][\w \t*]*?\b([A-Za-z_]\w*)\s*\(", re.M)


def c_units(folder: Path):
    """{file: its unit} of a folder's C sources and headers (no tests or fuzzers)."""
    files = [p for p in sorted(folder.rglob("*.[ch]"))
             if not p.name.endswith("_test.c") and "fuzz" not in p.relative_to(folder).parts]
    sources = {p.stem for p in files if p.suffix == ".c"}

    def unit(p):
        owner = max((s for s in sources if p.stem == s or p.stem.startswith(s + "_")
                     and p.suffix == ".h" and p.stem not in sources), key=len, default=None)
        return owner or p.name
    return {p: unit(p) for p in files}


def c_arrows(folder: Path):
    """{(unit A, unit B): what A takes from B}."""
    units = c_units(folder)
    code = {p: C_NOISE.sub(" ", p.read_text()) for p in units}
    definers = {}
    for p in units:
        if p.suffix == ".c":
            for name in C_FUNCTION.findall(code[p]):
                definers.setdefault(name, set()).add(units[p])
    by_name = {p.name: units[p] for p in units}
    arrows = {}
    for p, a in units.items():
        taken = [(by_name.get(Path(inc).name), "#include " + inc) for inc in C_INCLUDE.findall(p.read_text())]
        if p.suffix == ".c":
            taken += [(next(iter(definers[name])), name) for name in set(re.findall(r"\b\w+\b", code[p]))
                      if len(definers.get(name, ())) == 1]
        for b, what in taken:
            if b and b != a:
                arrows.setdefault((a, b), set()).add(what)
    return arrows


def test_c_units_of_the_engine_form_no_cycle():
    arrows = c_arrows(REPO / "engine")
    after = {}
    for a, b in arrows:
        after.setdefault(a, set()).add(b)

    def reaches(start):
        seen, todo = set(), [start]
        while todo:
            for b in after.get(todo.pop(), ()):
                if b not in seen:
                    seen.add(b)
                    todo.append(b)
        return seen
    assert len({u for u, _ in arrows}) > 20, "the engine's C files were not read"
    cycles = [f"{a} -> {b} ({', '.join(sorted(arrows[a, b])[:4])}) and {b} reaches {a} back"
              for a, b in sorted(arrows) if a in reaches(b)]
    assert not cycles, "\n".join(cycles)


def test_heatmaps_take_only_query_results():
    """heatmaps/ draws a QueryResult; finding and reading one is views/'s."""
    taken = []
    for path in sorted((REPO / "heatmaps").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("strata.datasets"):
                mods = {node.module} if node.module != "strata.datasets" else \
                    {f"{node.module}.{a.name}" for a in node.names}
                taken += [f"{path.relative_to(REPO)}:{node.lineno} {m}" for m in mods - HEATMAPS_TAKE]
    assert not taken, "\n".join(taken)
