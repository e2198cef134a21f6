"""Bad input through the real CLI: one line in the user's own units, the right exit
code, and a "did you mean" of at most three names instead of every choice."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from heatmaps_util import T0, build_archive, histogram, run_strata
from strata.heatmaps import units, value_range

STRATA = str(Path(sys.executable).parent / "strata")


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("msg") / "a.db"
    return build_archive(path, {
        "nfs.latency[client]": lambda t: {"10.0.0.1": histogram([50_000, 2_000_000])},
        "nfs.ops[client]": lambda t: {"10.0.0.1": 2},
    }, seconds=30)


def run(archive, *args, **kw):
    return run_strata(list(args) + ["--archive", str(archive)], **kw)


def one_line(p, code):
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr, p.stderr
    return lines[0]


def test_units_reach_exbibytes_both_ways():
    assert units.format_value(2 ** 64, "bytes") == "16EiB"
    assert units.format_value(3 * 2 ** 50, "bytes") == "3PiB"
    assert units.parse_value("1PiB", "bytes") == 2 ** 50 and units.parse_value("2EiB", "bytes") == 2 ** 61
    assert units.parse_value("1PB", "bytes") == 10 ** 15
    assert value_range.parse("1PiB..", "bytes").asked == (2 ** 50, None)


def test_axis_limits_answer_in_the_users_units(archive):
    since = ["--since", str(T0), "--until", str(T0 + 30)]
    line = one_line(run(archive, "heatmap", "nfs.latency[client]", *since, "--ymin", "10ms", "--ymax", "1ms"), 2)
    assert line == "strata: --ymin 10ms is not below --ymax 1ms"
    line = one_line(run(archive, "heatmap", "nfs.latency[client]", *since, "--log", "--ymax", "100ns"), 2)
    assert line.endswith("top 100ns is not above bottom 50µs"), line


def test_prune_zero_and_destroy_no(archive, tmp_path):
    copy = tmp_path / "c.db"
    copy.write_bytes(Path(archive).read_bytes())
    line = one_line(run(copy, "datasets", "prune", "nfs.ops[client]", "--older-than", "0s"), 2)
    assert "--older-than" in line and "'0s' is no time at all" in line
    p = run(copy, "datasets", "destroy", "nfs.ops[client]", input="n\n")
    assert p.returncode == 1 and "kept nfs.ops[client]" in p.stderr
    p = run(copy, "datasets", "destroy", "nfs.ops[client]", stdin=subprocess.DEVNULL)
    assert p.returncode == 1 and "no answer on stdin (-y destroys without asking)" in p.stderr, p.stderr
    assert "nfs.ops[client]" in run(copy, "datasets", "list").stdout


def test_did_you_mean_names_three(archive, tmp_path):
    env = {"STRATA_ARCHIVE": str(tmp_path / "new.db")}
    line = one_line(run_strata(["datasets", "create", "nfs.ops[op=reed]"], env_extra=env), 1)
    assert "did you mean read" in line and line.count(",") <= 2, line
    line = one_line(run_strata(["datasets", "create", "nfs.opz"], env_extra=env), 1)
    assert "did you mean nfs.ops" in line
    line = one_line(run(archive, "heatmap", "nfs.latncy[client]"), 1)
    assert line.endswith("did you mean nfs.latency[client] or nfs.ops[client]?"), line
    line = one_line(run(archive, "datasets", "destroy", "nfs.opss[client]", "-y"), 1)
    assert "did you mean nfs.ops[client]" in line


def test_unreadable_default_archive_is_one_line(tmp_path):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    env["XDG_DATA_HOME"] = str(private / "data")
    os.chmod(tmp_path, 0o755)
    p = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", STRATA, "datasets", "list"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert "Permission denied" in one_line(p, 1)


@pytest.mark.parametrize("args", [
    ["heatmap", "nfs.latency[op=reed]"],
    ["show", "nfs.ops[op=reed]"],
    ["breakdown", "nfs.ops[op=reed]", "--by", "op"],
    ["breakdown", "nfs.ops[op=reed]", "--by", "client"],
    ["breakdown", "nfs.latency[op=reed]", "--range", "1ms.."],
    ["stream", "nfs.ops[op=reed]", "--count", "1"],
    ["top", "nfs.latency[op=reed]", "--json"],
])
def test_a_filter_value_outside_its_set_is_a_typo_everywhere(archive, args):
    """Checked once, before anything is read or suggested: no command offers to create it."""
    line = one_line(run(archive, *args), 1)
    assert "did you mean read" in line and line.count(",") <= 2 and "datasets create" not in line, line


def test_check_names_its_datasets_as_the_views_do(archive):
    p = run_strata(["check", "--baseline", str(archive), "--candidate", str(archive),
                    "--dataset", "disk.latency[op=wirte][device]"])
    line = one_line(p, 2)
    assert "--dataset" in line and "no op 'wirte'; valid: read, write" in line, line
    p = run_strata(["check", "--baseline", str(archive), "--candidate", str(archive), "--dataset", "nfs.opz"])
    assert "did you mean nfs.ops" in one_line(p, 2)


def test_a_key_outside_its_set_and_a_breakdown_only_filter(tmp_path):
    """--key of a closed set is checked as a filter value is; a filter by a field the
    statistic only breaks down by (hit/miss) points to --key, and that command works."""
    path = build_archive(tmp_path / "keys.db", {
        "nfs.ops[op]": lambda t: {"read": 3, "write": 1},
        "arc.accesses[hit/miss]": lambda t: {"hit": 2, "miss": 1},
    }, seconds=10)
    line = one_line(run(path, "show", "nfs.ops[op]", "--key", "reed"), 1)
    assert "did you mean read" in line, line
    line = one_line(run(path, "breakdown", "arc.accesses[hit/miss]", "--key", "hti"), 1)
    assert line.endswith("no hit/miss 'hti'; valid: hit, miss"), line
    line = one_line(run(path, "show", "arc.accesses[hit/miss=hit]"), 1)
    assert line.endswith("its key hit: strata show 'arc.accesses[hit/miss]' --key hit"), line
    p = run(path, "show", "arc.accesses[hit/miss]", "--key", "hit", "--json", "--since", str(T0), "--until", str(T0 + 10))
    assert p.returncode == 0 and '"hit"' in p.stdout and '"miss"' not in p.stdout, p.stderr


def test_an_op_a_statistic_never_records_points_to_the_one_that_counts_it(tmp_path):
    """disk.offset records no flush (nor disk.latency a missed request): creating, showing or
    picking it says so in one line, naming disk.ops, from the catalogue; read stays fine."""
    path = build_archive(tmp_path / "disk.db", {"disk.offset[op]": lambda t: {"read": histogram([4096])}},
                         seconds=5)
    says = "disk.offset records no op flush: a flush has no offset on the device; disk.ops[op=flush] counts them"
    assert one_line(run(path, "datasets", "create", "disk.offset[op=flush]"), 1) == f"strata: {says}"
    assert one_line(run(path, "show", "disk.offset[op=flush]"), 1) == f"strata: {says}"
    assert one_line(run(path, "show", "disk.offset[op]", "--key", "flush"), 1) == f"strata: {says}"
    line = one_line(run(tmp_path / "new.db", "datasets", "create", "disk.latency[op=missed]"), 1)
    assert "its latency, size and offset are unknown; disk.ops[op=missed] counts them" in line, line
    p = run(path, "show", "disk.offset[op=read]", "--json", "--since", str(T0), "--until", str(T0 + 5))
    assert p.returncode == 0 and json.loads(p.stdout)["events"] == 5, p.stderr


@pytest.mark.parametrize("args, says", [
    (["show", "nfs.ops[client]", "--linear"], "--log/--linear does nothing for nfs.ops[client], a counter"),
    (["show", "nfs.ops[client]", "--ymax", "10ms"], "--ymax does nothing for nfs.ops[client], a counter"),
    (["show", "nfs.latency[client]", "--graph", "line"], "--graph does nothing for nfs.latency[client], a heat map"),
    (["breakdown", "nfs.ops[client]", "--percentile", "50"], "--percentile does nothing for nfs.ops[client]"),
    (["breakdown", "nfs.latency[client]", "--range", "1ms..", "--percentile", "50"],
     "--percentile does nothing for a --range drill-down"),
])
def test_an_option_that_does_nothing_for_the_dataset_is_refused(archive, args, says):
    assert says in one_line(run(archive, *args), 2)


SINCE = ["--since", str(T0), "--until", str(T0 + 30)]


@pytest.mark.parametrize("args, code, said", [
    (["heatmap", "nfs.lätency"], 1, "'nfs.lätency' is no statistic (a-z, 0-9, '.', '_'); did you mean nfs.latency"),
    (["heatmap", "nfs.latency[client]", *SINCE, "--log", "--linear"], 2, "--log and --linear conflict: give one"),
    (["show", "nfs.latency[client]", "--by", "op"], 2,
     "`strata show` has no option --by; `strata breakdown` has it (see strata breakdown --help)"),
    (["heatmap", "nfs.latency[client]", "--range", "1ms.."], 2, "`strata breakdown` has it"),
    (["heatmap", "nfs.latency[client]", "--last", "101y"], 2, "use numbers with units s/m/h/d/w"),
])
def test_the_first_hours_poor_lines(archive, args, code, said):
    """The audit's inputs (issue 47): one line that says what to do next."""
    assert said in one_line(run(archive, *args), code)


def test_since_zero_is_the_epoch_as_1973_is_a_date(archive):
    for since in ("0", "1973-01-01"):
        p = run(archive, "heatmap", "nfs.latency[client]", "--since", since, "--until", str(T0 + 30))
        assert p.returncode == 0, (since, p.stderr)


def test_check_same_file_said_and_a_summed_dataset_derived(archive, tmp_path):
    p = run_strata(["check", "--baseline", str(archive), "--candidate", str(archive), "--dataset", "nfs.ops[client]"])
    assert p.returncode == 0 and "the candidate" in p.stderr and "is also a baseline" in p.stderr, p.stderr
    copy = tmp_path / "b.db"
    copy.write_bytes(Path(archive).read_bytes())
    p = run_strata(["check", "--baseline", str(archive), "--candidate", str(copy), "--dataset", "nfs.latency",
                    "--json"])
    assert p.returncode == 0, p.stderr
    assert {(r["dataset"], r["verdict"]) for r in json.loads(p.stdout)["results"]} == {("nfs.latency", "same")}


def test_two_keys_drawing_the_same_line_are_noted(tmp_path):
    path = build_archive(tmp_path / "twins.db", {"nfs.ops[client]": lambda t: {"10.0.0.1": 3, "10.0.0.2": 3,
                                                                                "10.0.0.3": t % 5}}, seconds=10)
    p = run(path, "show", "nfs.ops[client]", "--key", "10.0.0.1", "--key", "10.0.0.2", "--key", "10.0.0.3",
            "--since", str(T0), "--until", str(T0 + 10), "--color", "none")
    assert p.returncode == 0, p.stderr
    notes = [line for line in p.stdout.splitlines() if "draw the same line" in line]
    assert notes == ["10.0.0.1 and 10.0.0.2 draw the same line (one hides the other)"], p.stdout
