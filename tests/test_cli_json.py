"""Every read command has --json, and every command that opens an archive takes the
one shared --archive option: checked on the click commands themselves, and each
JSON output parsed and compared with what a real archive (written through the
ingest path) holds."""
import json
import time

import click
import pytest

from heatmaps_util import T0, build_archive, histogram, run_strata
from strata.cli.archive_option import archive_option
from strata.cli.main import COMMANDS, cli

READ_COMMANDS = ["heatmap", "breakdown", "top", "statistics", "doctor", "check", "check run", "datasets list"]
CLIENTS = ["10.0.0.1", "10.0.0.2"]


def command(path: str) -> click.Command:
    """The click command for 'heatmap' or 'datasets list'."""
    ctx = click.Context(cli)
    found = cli
    for part in path.split():
        found = found.get_command(ctx, part)
        assert found is not None, path
    return found


def all_commands():
    ctx = click.Context(cli)
    for name in COMMANDS:
        cmd = cli.get_command(ctx, name)
        yield name, cmd
        for sub, subcmd in getattr(cmd, "commands", {}).items():
            yield f"{name} {sub}", subcmd


def option(cmd: click.Command, flag: str):
    return next((p for p in cmd.params if flag in getattr(p, "opts", ())), None)


@pytest.mark.parametrize("name", READ_COMMANDS)
def test_read_commands_have_json(name):
    assert option(command(name), "--json") is not None, f"strata {name} has no --json"


def test_one_archive_option_everywhere():
    @archive_option
    def reference(archive_path):
        pass
    shared = reference.__click_params__[0]
    with_archive = [(n, option(c, "--archive")) for n, c in all_commands() if option(c, "--archive")]
    assert {"heatmap", "breakdown", "top", "collect", "datasets list", "datasets create"} <= {n for n, _ in with_archive}
    for name, opt in with_archive:
        assert (opt.name, opt.help, opt.metavar) == (shared.name, shared.help, shared.metavar), name


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("json") / "a.db"
    return build_archive(path, {
        "nfs.latency[client]": lambda t: {c: histogram([100_000 * (i + 1)] * (i + 1)) for i, c in enumerate(CLIENTS)},
        "nfs.ops[client]": lambda t: {c: i + 1 for i, c in enumerate(CLIENTS)},
    }, seconds=120)


def strata_json(*args):
    p = run_strata(list(args))
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_datasets_list_json(archive):
    listed = strata_json("datasets", "list", "--json", "--archive", str(archive))
    by_name = {d["name"]: d for d in listed["datasets"]}
    assert set(by_name) == {"nfs.latency[client]", "nfs.ops[client]"}
    assert by_name["nfs.latency[client]"]["kind"] == "heatmap" and by_name["nfs.latency[client]"]["unit"] == "ns"
    assert by_name["nfs.ops[client]"]["breakdown"] == "client" and listed["archive"] == str(archive)


def test_statistics_json():
    doc = strata_json("statistics", "--json")
    assert (doc["schema"], doc["schema_version"]) == ("strata.statistics", 1)
    stats = {s["statistic"]: s for s in doc["statistics"]}
    assert stats["nfs.latency"]["unit"] == "ns" and stats["nfs.latency"]["kind"] == "heatmap"
    assert stats["nfs.latency"]["openmetrics"] == "strata_nfs_latency_seconds"
    assert "client" in stats["nfs.ops"]["breakdowns"]


def test_check_json_same_archive_is_same(archive):
    p = run_strata(["check", "--baseline", str(archive), "--candidate", str(archive), "--json",
                    "--dataset", "nfs.latency[client]"])
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert (out["schema"], out["schema_version"]) == ("strata.check", 1)
    assert out["verdict"] == "same"
    assert sorted(r["key"] for r in out["results"]) == CLIENTS
    assert {r["dataset"] for r in out["results"]} == {"nfs.latency[client]"}


def test_check_missing_archive_is_one_line_exit_2(archive, tmp_path):
    p = run_strata(["check", "--baseline", str(archive), "--candidate", str(tmp_path / "none.db"), "--json"])
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "none.db" in p.stderr


def test_top_json_snapshot(tmp_path):
    """The live view's data once, without a terminal: its last seconds up to now."""
    start = int(time.time()) - 30
    path = build_archive(tmp_path / "live.db", {
        "nfs.latency": lambda t: {"": histogram([50_000] * 4)},
        "nfs.ops[client]": lambda t: {c: i + 1 for i, c in enumerate(CLIENTS)},
    }, start=start, seconds=30)
    out = strata_json("top", "--json", "--seconds", "120", "--archive", str(path))
    heat, clients = out["heatmap"], out["clients"]
    assert heat["dataset"] == "nfs.latency" and len(heat["times"]) == 120
    assert heat["events"] == 4 * 30
    assert clients["dataset"] == "nfs.ops[client]"
    assert {r["key"]: r["events"] for r in clients["table"]} == {"10.0.0.1": 30, "10.0.0.2": 60}


def test_top_without_terminal_or_json_is_one_line(archive):
    p = run_strata(["top", "--archive", str(archive)])
    assert p.returncode == 1 and "--json" in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_heatmap_json_of_an_archive(archive):
    grid = strata_json("heatmap", "nfs.latency[client]", "--json", "--archive", str(archive),
                       "--since", str(T0), "--until", str(T0 + 120))
    assert grid["events"] == 3 * 120
    assert {k["key"]: k["events"] for k in grid["per_key"]} == {"10.0.0.1": 120, "10.0.0.2": 240}
