"""The archive answers what it can derive from what it holds (datasets/derive.py): a
filter or a coarser breakdown of a dataset it keeps, summed or one key of it, said in
the output; what it cannot derive is one line naming what it holds and how to collect it."""
import json

import pytest

from heatmaps_util import T0, build_archive, run_strata
from strata.datasets import derive, names
from strata.datasets.archive import Archive

SECONDS = 30
RANGE = ["--since", str(T0), "--until", str(T0 + SECONDS)]
CLIENTS = {"10.0.0.1": 3, "10.0.0.2": 5}
OPS = {"read": (100, 8), "write": (300, 2)}       # op -> (llhist bucket, count per second): reads = CLIENTS


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    path = tmp_path_factory.mktemp("derive") / "a.db"
    return build_archive(path, {
        "nfs.ops[client]": lambda t: dict(CLIENTS),
        "nfs.latency[op]": lambda t: {op: {b: n} for op, (b, n) in OPS.items()},
        "nfs.latency[op=read][client]": lambda t: {c: {OPS["read"][0]: n} for c, n in CLIENTS.items()},
    }, seconds=SECONDS)


def show(archive, name, *args):
    p = run_strata(["show", name, *RANGE, "--archive", str(archive), *args], env_extra={"NO_COLOR": "1"})
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_a_coarser_breakdown_is_summed(archive):
    doc = json.loads(show(archive, "nfs.ops", "--json"))
    assert doc["derived"] == "summed from nfs.ops[client]"
    assert doc["events"] == sum(CLIENTS.values()) * SECONDS and [s["key"] for s in doc["series"]] == ["all"]
    assert show(archive, "nfs.ops").startswith("nfs.ops (summed from nfs.ops[client])")


def test_a_filter_prefers_the_sum_of_a_finer_dataset(archive):
    """nfs.latency[op=read] is both the sum of nfs.latency[op=read][client] and key read of
    nfs.latency[op]: the sum is read (it holds every event), with the same answer."""
    with Archive.open(str(archive)) as a:
        found = derive.candidates(a.datasets(), names.parse("nfs.latency[op=read]"))
        assert [s.note for s in found] == ["summed from nfs.latency[op=read][client]",
                                           "op=read of nfs.latency[op]"]
        answers = [int(derive.query(a, s, T0, T0 + SECONDS).counts.sum()) for s in found]
    assert answers == [sum(CLIENTS.values()) * SECONDS] * 2
    doc = json.loads(show(archive, "nfs.latency[op=write]", "--json"))
    assert doc["derived"] == "op=write of nfs.latency[op]" and doc["events"] == OPS["write"][1] * SECONDS


def test_what_cannot_be_derived_says_what_is_held_and_how_to_collect(archive):
    p = run_strata(["show", "nfs.ops[op]", *RANGE, "--archive", str(archive)])
    assert p.returncode == 1 and p.stdout == "" and "Traceback" not in p.stderr
    line = p.stderr.strip()
    assert "\n" not in line and "nfs.ops datasets here: nfs.ops[client]" in line
    assert "strata datasets create 'nfs.ops[op]'" in line


def test_breakdown_by_a_field_of_a_derived_name(archive):
    """`breakdown nfs.latency[op=read] --by client` reads the held dataset; `--by op` of a name
    filtered by op says what it holds and the breakdowns of it held; --top 0 is every key."""
    p = run_strata(["breakdown", "nfs.latency[op=read]", "--by", "client", *RANGE, "--archive", str(archive),
                    "--json"])
    assert p.returncode == 0 and {s["key"] for s in json.loads(p.stdout)["series"]} == set(CLIENTS)
    p = run_strata(["breakdown", "nfs.latency[op=read]", "--by", "op", *RANGE, "--archive", str(archive)])
    assert p.returncode == 2 and "holds only op=read; break it down by another field: " \
        "strata breakdown 'nfs.latency[op=read]' --by client" in p.stderr
    p = run_strata(["breakdown", "nfs.ops[client]", "--top", "0", *RANGE, "--archive", str(archive), "--json"])
    assert p.returncode == 0 and json.loads(p.stdout)["folded_into_other"] == 0


@pytest.mark.parametrize("args, says", [
    (["breakdown", "nfs.ops[op=read]", "--by", "client"],
     "no dataset nfs.ops[op=read][client] in {a} (a breakdown by client is kept only by a dataset collected with "
     "it and [op=read]); nfs.ops datasets here: nfs.ops[client]; "
     "to collect it: strata datasets create 'nfs.ops[op=read][client]'"),
    (["breakdown", "nfs.latency", "--by", "client"],
     "no dataset nfs.latency[client] in {a} (a breakdown by client is kept only by a dataset collected with it); "
     "nfs.latency datasets here: nfs.latency[op=read][client], nfs.latency[op]; "
     "to collect it: strata datasets create 'nfs.latency[client]'"),
    (["show", "nfs.ops[bogus=1]"], "nfs.ops cannot be filtered by 'bogus'; valid filters: op, client, tier, file"),
    (["show", "nfs.ops[tier=ram]"], "nfs.ops has no tier 'ram'; valid: none, arc, l2arc, pool, zil"),
    (["show", "nfs.latency[op=reed]"], "nfs.latency has no op 'reed'; did you mean read, renew or rename?"),
])
def test_a_breakdown_is_never_derived_and_the_hint_is_a_command_that_works(archive, args, says):
    """A new breakdown cannot come from a dataset kept with another one: one line naming the
    dataset to create; a name `datasets create` would refuse is refused as it would be, and
    a key no field takes (op=reed of nfs.latency[op]) gets the closest valid ones."""
    p = run_strata([*args, *RANGE, "--archive", str(archive)])
    assert p.returncode == 1 and p.stderr.startswith(f"strata: {says.format(a=archive)}") and \
        p.stderr.count("\n") == 1, p.stderr
