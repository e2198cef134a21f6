"""strata-load against a real nfs-ganesha (FSAL VFS, NFSv3 over TCP): randread,
write (read back through a second client, libnfs's nfs-cat), the other profiles,
rate limiting, and --netns clients with their own source addresses."""
import os
import shutil
import subprocess

import pytest

from conftest import built
from load_util import Ganesha, check_report, expected_bytes, file_name, ganesha_running, load_ok, nfs_cat

FILES, FILE_SIZE = 4, 1 << 20


@pytest.fixture(scope="module")
def ganesha():
    built("bin/strata-load")
    yield from ganesha_running()


def common(g: Ganesha, *extra: str) -> list[str]:
    return [*g.args(), "--files", str(FILES), "--file-size", str(FILE_SIZE), *extra]


@pytest.fixture(scope="module")
def working_set(ganesha):
    """--setup-only creates the files through NFS with the tag-0 pattern."""
    r = load_ok(*common(ganesha, "--setup-only", "--clients", "2"))
    assert r["ops"] == {} and r["duration_s"] == 0
    setup = r["setup"]
    assert setup["ops"]["create"] == FILES
    assert setup["ops"]["commit"] == FILES
    assert setup["bytes"]["write"] == FILES * FILE_SIZE
    for i in range(FILES):
        path = ganesha.export / file_name(i)
        assert path.stat().st_size == FILE_SIZE
        assert path.read_bytes()[:4096] == expected_bytes(0, i, 0, 4096)
    return ganesha


def test_randread_completes(working_set):
    r = load_ok(*common(working_set, "--profile", "randread", "--setup", "--clients", "2",
                        "--threads", "4", "--duration", "2", "--io-size", "8k"))
    check_report(r)
    assert r["profile"] == "randread"
    assert set(r["ops"]) == {"read"} and r["ops"]["read"] > 0
    assert r["bytes"]["read"] == r["ops"]["read"] * 8192
    assert all(c["ops"]["read"] > 0 for c in r["clients"])
    assert r["ops_per_sec"]["read"] > 0
    # the files already had the right size: setup only looked them up
    assert "create" not in r["setup"]["ops"] and "write" not in r["setup"]["ops"]
    assert r["setup"]["ops"]["lookup"] == FILES + 2 * FILES
    # distinct AUTH_SYS identities per client
    assert len({c["machine"] for c in r["clients"]}) == 2
    assert len({c["uid"] for c in r["clients"]}) == 2


@pytest.mark.parametrize("stable", ["unstable", "file_sync"])
def test_write_reads_back(working_set, stable):
    seed = 7 if stable == "unstable" else 8
    r = load_ok(*common(working_set, "--profile", "write", "--stable", stable, "--seed", str(seed),
                        "--threads", "4", "--io-size", "32k", "--duration", "1.5"))
    check_report(r)
    n = r["ops"]["write"]
    assert r["bytes"]["write"] == n * 32768
    # streaming writes: at least one full pass over the working set, so every
    # byte now carries this run's tag
    assert r["bytes"]["write"] >= FILES * FILE_SIZE, "run too short for a full pass"
    if stable == "unstable":
        assert r["ops"]["commit"] >= FILES  # one per finished file, plus the final ones
    else:
        assert "commit" not in r["ops"]
    for i in range(FILES):
        assert nfs_cat(working_set.url(file_name(i))) == expected_bytes(seed, i, 0, FILE_SIZE)


@pytest.mark.parametrize("profile,extra,ops", [
    ("seqread", ["--io-size", "64k", "--threads", "2"], {"read"}),
    ("mixed", ["--threads", "4", "--read-pct", "50", "--stable", "data_sync"], {"read", "write"}),
    ("seed-l2arc", ["--clients", "2", "--threads", "3", "--io-size", "64k"], {"lookup", "read"}),
])
def test_profiles(working_set, profile, extra, ops):
    r = load_ok(*common(working_set, "--profile", profile, "--duration", "1", *extra))
    check_report(r)
    assert set(r["ops"]) == ops
    if profile == "seed-l2arc":
        # each LOOKUP ("open") is followed by eight 64k reads; streams cut by
        # the end of the run may not have finished theirs
        lookups, reads = r["ops"]["lookup"], r["ops"]["read"]
        assert 8 * (lookups - 6) <= reads <= 8 * lookups
        assert r["bytes"]["read"] == reads * 65536


def test_stepup_adds_threads(working_set):
    r = load_ok(*common(working_set, "--profile", "stepup", "--step-interval", "0.5",
                        "--threads", "3", "--duration", "2"))
    check_report(r)
    assert r["per_second"]["threads_per_client"][:2] == [1, 3]
    assert r["ops"]["read"] > 0


def test_rate_limit(working_set):
    r = load_ok(*common(working_set, "--profile", "randread", "--rate", "400", "--clients", "2",
                        "--threads", "8", "--duration", "1.5"))
    check_report(r)
    # tokens are handed out at 200/s per client from the start: never more
    assert r["ops_total"] <= 400 * 1.5 + 2


@pytest.mark.skipif(os.geteuid() != 0, reason="--netns needs root (namespaces, veth)")
@pytest.mark.skipif(not shutil.which("ip"), reason="--netns needs iproute2's ip")
def test_netns_clients_have_own_addresses(working_set):
    r = load_ok(*common(working_set, "--profile", "randread", "--netns", "--clients", "3",
                        "--duration", "1"))
    check_report(r)
    addrs = [c["addr"] for c in r["clients"]]
    assert len(set(addrs)) == 3 and all(a.startswith("10.213.") for a in addrs), addrs
    assert all(c["ops"]["read"] > 0 for c in r["clients"])
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    block = addrs[0].split(".")[2]
    assert f"stl{block}-" not in links, "veth pairs left behind"
