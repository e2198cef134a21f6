"""The kernel matrix (tests/vm/): each kernel of KERNELS (default "6.1-security": the newest
Debian 12 kernel, as a user who keeps it up to date runs it; `make test-kernels` runs the newest
point release and the newest security build of 5.10, 6.1 and 6.12, and this host: tests/vm/kernels.py)
boots in a qemu TCG guest over this machine's own root file system and runs the view tests
there (tests marked @pytest.mark.view: real engine, real libnfs clients, real BPF in that
kernel). On every kernel each view either counts exactly or is refused for a kernel feature
that kernel truly lacks — its refusal names the feature and the Linux version that brought it
— and `strata doctor`, `strata statistics` and the collector's answer to adding a dataset say
the same; the datasets of `strata demo --server nfsd` load together with nfsd running. Test ids
are the kernels' full releases. build/vm/matrix/KERNEL.json keeps the results for the README's
table."""
import os

import pytest

from vm import kernels, matrix

KERNELS = kernels.distinct(os.environ.get("KERNELS", "6.1-security").split())


def start_guest(item):
    matrix.start(item.callspec.params["kernel"])


DOCTOR_VIEWS = {"wire": "wire", "fs": "fs", "disk": "disk", "nfs": "engine USDT"}  # layer -> doctor's view


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("kernel", [k for k, _ in KERNELS], ids=[rel for _, rel in KERNELS])
def test_every_view_counts_exactly_or_is_refused_for_what_the_kernel_lacks(kernel):
    r = matrix.result(kernel)  # started with the session (start_guest): the guest runs beside the suite
    tail = r["pytest_tail"]
    assert r["doctor"] and r["statistics"], tail
    assert sorted(r["views"]) == sorted(matrix.VIEWS), tail
    release = matrix.release_version(r["release"])
    refused_layers = set()
    for view, v in r["views"].items():
        assert v["state"] != "failed", (r["release"], view, v["why"], tail)
        if v["state"] == "refused":
            need = matrix.required_version(v["why"])
            assert need is not None and release < need, (r["release"], view, v["why"])
            refused_layers.add(matrix.VIEW_LAYERS[view])

    # strata statistics lists as supported exactly the layers that loaded
    stats = {s["layer"]: s for s in r["statistics"]["statistics"] if s["layer"] in matrix.LAYER_STATS}
    assert {layer for layer, s in stats.items() if not s["supported"]} == refused_layers, stats
    # the collector acks a dataset of every supported layer, and refuses the others in one
    # error line naming what the kernel lacks (no verifier log, no silent zero)
    for layer in matrix.LAYER_STATS:
        answer = r["adds"].get(layer)
        assert answer is not None, (layer, r["adds_stderr"])
        if layer in refused_layers:
            assert answer["type"] == "error" and "kernel lacks" in answer["message"], answer
        else:
            assert answer["type"] == "ack", (answer, r["adds_stderr"])
    assert "BEGIN PROG LOAD LOG" not in r["adds_stderr"], r["adds_stderr"]
    # strata doctor offers a view to the engine exactly where its layer loads
    engine = next(s for s in r["doctor"]["servers"] if s["server"] == "strata-engine")
    for layer, view in DOCTOR_VIEWS.items():
        assert (view in engine["here"]) == (layer not in refused_layers), (layer, engine)
    # the nfsd demo's datasets, nfsd loaded: every one acked, its layers attached, no refusal
    demo = r["demo_adds"]
    if kernel != "host":
        assert demo["acks"] == demo["datasets"] and demo["errors"] == [], demo
        assert {"nfsd", "nfsd_io", "disk"} <= set(demo["attached"]), demo
        assert "BEGIN PROG LOAD LOG" not in demo["stderr"] and "failed to load" not in demo["stderr"], demo["stderr"]
