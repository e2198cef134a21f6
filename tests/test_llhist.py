"""llhist: the shared vectors follow DESIGN.md, and the Python, userspace C and
in-kernel BPF implementations agree with them on every case."""
import json
import subprocess

import numpy as np

from conftest import REPO, built
from strata.datasets import llhist

VECTORS = REPO / "tests" / "vectors" / "llhist.json"
U64_MAX = 2**64 - 1


def cases():
    return json.loads(VECTORS.read_text())["cases"]


def test_vectors_cover_what_the_contract_requires():
    values = {c["value"] for c in cases()}
    assert len(values) >= 300
    assert set(range(121)) <= values
    for k in range(1, 20):
        assert {10**k - 1, 10**k} <= values
        if 10**k + 1 <= U64_MAX:
            assert 10**k + 1 in values
    assert {2**k for k in range(64)} <= values
    assert U64_MAX in values


def test_vectors_follow_the_design_definition():
    for c in cases():
        v, b, lo, hi = c["value"], c["bucket"], c["lower"], c["upper"]
        if v < 10:
            assert (b, lo, hi) == (v, v, v + 1)
            continue
        digits = str(v)
        d, m = len(digits) - 1, int(digits[:2])
        assert b == 10 + 90 * (d - 1) + (m - 10)
        assert lo == m * 10 ** (d - 1) <= v
        assert hi == min((m + 1) * 10 ** (d - 1), U64_MAX)
        assert v < hi or v == hi == U64_MAX


def test_python_matches_vectors():
    for c in cases():
        b = llhist.bucket(c["value"])
        assert (b, llhist.lower(b), llhist.upper(b)) == (c["bucket"], c["lower"], c["upper"]), c


def test_python_vectorised_matches_scalar():
    values = np.array([c["value"] for c in cases()], dtype=np.uint64)
    assert llhist.buckets_of(values).tolist() == [c["bucket"] for c in cases()]


def test_buckets_tile_the_range():
    assert llhist.bucket(U64_MAX) == llhist.NBUCKETS - 1
    for b in range(llhist.NBUCKETS - 1):
        assert llhist.upper(b) == llhist.lower(b + 1)


def test_userspace_c_matches_vectors():
    out = subprocess.run([str(built("tests/llhist_test")), str(VECTORS)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert f"{len(cases())} cases, 0 failed" in out.stdout


def test_bpf_in_kernel_matches_vectors():
    out = subprocess.run([str(built("tests/llhist_bpf_test")), str(VECTORS)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr + out.stdout
    assert f"{len(cases())} cases bucketed in the kernel, 0 failed" in out.stdout
