"""Tables fit the terminal's width (COLUMNS=80): `datasets list`, `statistics` and
`stream` wrap or cut values, never the time with its zone (nor a heat map's header its
time range); at COLUMNS=20 `doctor` still shows each check's status. Table-driven: each case is a command, its width, and what must
still be read in its output."""
import re

import pytest

from heatmaps_util import T0, build_archive, histogram, run_strata

LONG = "nfs.latency[client=10.0.0.3][op=read][file]"   # as the archive spells it


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    return build_archive(tmp_path_factory.mktemp("widths") / "a.db", {
        LONG: lambda t: {"/export/some/rather/long/path/name.dat": histogram([10_000] * 5)},
        "nfs.ops[client]": lambda t: {"10.0.0.1": 3, "10.0.0.2": 30},
        "arc.size": lambda t: {"": float(64 << 20)},
    }, seconds=5)


def unwrapped(text):
    """The output with its wrapping undone: every run of spaces and line breaks one space."""
    return re.sub(r"\s+", "", text)


CASES = {
    "datasets list": (["datasets", "list"], 80, ["probecost:"]),
    "statistics": (["statistics"], 80, ["nfs.latency", "op,client,tier,file"]),
    "stream": (["stream", LONG, "nfs.ops[client]", "--since", str(T0), "--count", "1", "--utc"], 80,
               ["2025-11-22T08:00:00Z", "10.0.0.2", "30"]),
    "doctor": (["doctor"], 20, []),
    "heatmap at 80": (["heatmap", LONG, "--since", str(T0), "--until", str(T0 + 5), "--utc"], 80, []),
    "heatmap at 40": (["heatmap", LONG, "--since", str(T0), "--until", str(T0 + 5), "--utc"], 40, []),
}
RANGE = "2025-11-22 08:00:00 → 08:00:05 UTC (5s)"   # the heat map's header: cut the name, never this


@pytest.mark.parametrize("case", CASES)
def test_output_fits_the_terminal(archive, case):
    args, columns, facts = CASES[case]
    p = run_strata([*args, "--archive", str(archive)] if case != "statistics" and case != "doctor" else args,
                   env_extra={"COLUMNS": str(columns), "LINES": "24", "NO_COLOR": "1", "TERM": "dumb"})
    assert p.returncode in ((0, 1) if case == "doctor" else (0,)), p.stderr
    lines = p.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= columns, "\n".join(x for x in lines if len(x) > columns)
    for fact in facts:
        assert unwrapped(fact) in unwrapped(p.stdout), fact
    if case == "datasets list":   # the NAME column, read down, holds every name whole
        names = "".join(line[:lines[0].index("STATE")].strip() for line in lines[1:])
        assert LONG in names and "nfs.ops[client]" in names and "arc.size" in names, names
    if case == "stream":
        times = [line.split()[0] for line in lines[1:]]
        assert times and all(t == "2025-11-22T08:00:00Z" for t in times), "a time or its zone was cut"
    if case.startswith("heatmap"):
        assert any(line.endswith(RANGE) for line in lines[:2]), lines[:2]
    if case == "doctor":
        statuses = [line for line in lines if re.search(r"│ (ok|FAIL|absent|\w+ing)\s*│?$", line)]
        assert len(statuses) >= 10, p.stdout
