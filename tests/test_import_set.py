"""The static import set of `strata check ab`: the strata files its command module
(cli/check_cmd.py) imports, directly or through others, read from the source with ast
(an import inside a function counts too); package faces (__init__.py) are not counted.
The bound keeps the set from growing: a command pulls in only what it runs."""
import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHECK_AB_BOUND = 51   # checks/ 23 (layout, placement, sequential and noise: one address-space layout, the duet's CPU rotation, early stop, noise floor; duet_pairs and compare_pairs: fresh process pairs judged across; pools: the working sets written once, copied per pair), lab/ 9, datasets/ 17 (periods: the open rollup periods; derive: a --dataset the archives hold broken down), heatmaps/json_out.py (the --json envelope), cli/writable.py (report paths checked before the run): what the check runs in its own process


def file_of(module: str):
    """The file of module strata.X.Y (None outside strata or for a namespace)."""
    parts = module.split(".")
    if parts[0] != "strata" or len(parts) < 2:
        return None
    path = REPO.joinpath(*parts[1:])
    for f in (path / "__init__.py", path.with_suffix(".py")):
        if f.exists():
            return f
    return None


def imported_files(path: Path) -> set:
    """The strata files that `path` imports (a `from P import name` may name a module)."""
    rel = path.relative_to(REPO).with_suffix("").parts
    package = ["strata", *rel[:-1]]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{a.name}" for a in node.names)
    return {f for f in map(file_of, names) if f is not None}


def import_set(module: str) -> set:
    seen, todo = set(), [file_of(module)]
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo.extend(imported_files(f))
    return {f.relative_to(REPO).as_posix() for f in seen if f.name != "__init__.py"}


def test_check_ab_import_set_is_bounded():
    files = import_set("strata.cli.check_cmd") - {"cli/check_cmd.py"}
    assert len(files) <= CHECK_AB_BOUND, f"{len(files)} files:\n" + "\n".join(sorted(files))


def test_import_set_follows_relative_and_module_imports():
    files = import_set("strata.datasets.reader")
    assert {"datasets/codec.py", "datasets/varint.py", "datasets/query.py"} <= files
    assert not any(f.startswith(("cli/", "checks/", "lab/")) for f in files)


def import_graph() -> dict:
    """{file: strata files it imports} for every module of the project's packages (an import
    inside a function counts too)."""
    return {f.relative_to(REPO).as_posix(): {g.relative_to(REPO).as_posix() for g in imported_files(f)}
            for init in sorted(REPO.glob("*/__init__.py")) for f in sorted(init.parent.glob("*.py"))}


def test_no_import_cycle_in_any_package():
    graph = import_graph()
    done, path, cycles = set(), [], []

    def visit(f):
        if f in path:
            cycles.append(path[path.index(f):] + [f])
            return
        if f in done:
            return
        path.append(f)
        for g in sorted(graph.get(f, ())):
            if not g.endswith("__init__.py"):
                visit(g)
        path.pop()
        done.add(f)

    for f in graph:
        visit(f)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)

