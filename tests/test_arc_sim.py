"""test_arc_sim.py — `strata-engine arcsim` against the ARC paper's tables
(Megiddo & Modha, FAST 2003, Table IV: OLTP) on the real traces, plus the
trace reader's handling of plain, compressed and bad input."""
import subprocess

import pytest

from arc_util import TRACES, arcsim_json, run_arcsim

OLTP = TRACES / "OLTP.lis.zst"
PAGES = [1000, 2000, 5000, 10000, 15000]
PAPER_OLTP = {
    "lru": [32.83, 42.47, 53.65, 60.70, 64.63],
    "arc": [38.93, 46.08, 55.25, 61.87, 65.40],
}


@pytest.fixture(scope="module")
def oltp():
    return arcsim_json("--trace", OLTP, "--pages", ",".join(map(str, PAGES)),
                       "--policy", "lru,arc")


@pytest.mark.parametrize("policy", ["lru", "arc"])
@pytest.mark.parametrize("idx", range(len(PAGES)))
def test_oltp_matches_paper(oltp, policy, idx):
    r = oltp[(policy, PAGES[idx])]
    assert r["requests"] == 914145 and r["accesses"] == 914145
    assert abs(r["hit_ratio"] - PAPER_OLTP[policy][idx]) < 0.1, r


def test_oltp_reports_speed(oltp):
    for r in oltp.values():
        assert r["requests_per_s"] > 0 and r["accesses_per_s"] >= r["requests_per_s"]
        assert 0 <= r["p_pages"] <= r["pages"]


def test_multiblock_requests_p3():
    """P3 has requests of up to 128 blocks: every block is one page access
    (3912296 accesses, Table III); Table VII: LRU 3.57 %, ARC 17.12 % at 32768."""
    res = arcsim_json("--trace", TRACES / "P3.lis.zst", "--pages", 32768, "--policy", "lru,arc")
    assert res[("lru", 32768)]["accesses"] == 3912296
    assert res[("lru", 32768)]["requests"] == 238578
    assert abs(res[("lru", 32768)]["hit_ratio"] - 3.57) < 0.1
    assert abs(res[("arc", 32768)]["hit_ratio"] - 17.12) < 0.1


def test_plain_and_zstd_agree(tmp_path):
    text = subprocess.run(["zstd", "-dc", str(OLTP)], check=True, capture_output=True).stdout
    head = b"".join(text.splitlines(keepends=True)[:200000]).rstrip(b"\n")  # no final newline
    plain = tmp_path / "head.lis"
    plain.write_bytes(head)
    subprocess.run(["zstd", "-q", str(plain), "-o", str(tmp_path / "head.lis.zst")], check=True)
    a = arcsim_json("--trace", plain, "--pages", 3000)[("arc", 3000)]
    b = arcsim_json("--trace", tmp_path / "head.lis.zst", "--pages", 3000)[("arc", 3000)]
    assert a["requests"] == b["requests"] == 200000
    assert a["hits"] == b["hits"] > 0


@pytest.mark.parametrize("content, message", [
    (b"1 1 0 0\n2 x 0 1\n", "line 2"),
    (b"1 1 0\n", "expected 4 fields"),
    (b"1 1 0 0 9\n", "more than 4 fields"),
    (b"18446744073709551615 2 0 0\n", "out of bounds"),
    (b"99999999999999999999999 1 0 0\n", "unsigned decimal"),
])
def test_bad_trace_lines(tmp_path, content, message):
    bad = tmp_path / "bad.lis"
    bad.write_bytes(content)
    proc = run_arcsim("--trace", bad, "--pages", 10, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert proc.stdout == ""


def test_truncated_zstd(tmp_path):
    data = OLTP.read_bytes()[:100000]
    cut = tmp_path / "cut.lis.zst"
    cut.write_bytes(data)
    proc = run_arcsim("--trace", cut, "--pages", 10, check=False)
    assert proc.returncode != 0 and "truncated zstd stream" in proc.stderr


@pytest.mark.parametrize("args, message", [
    (["--trace", "/nonexistent.lis", "--pages", "10"], "No such file"),
    (["--trace", str(OLTP), "--pages", "0"], "--pages"),
    (["--trace", str(OLTP), "--pages", "10", "--policy", "mru"], "--policy"),
    (["--pages", "10"], "required"),
])
def test_bad_arguments(args, message):
    proc = run_arcsim(*args, check=False)
    assert proc.returncode != 0 and message in proc.stderr
