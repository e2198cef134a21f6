"""Wall-clock steps (datasets/ARCHIVE.md, "Wall-clock steps"), in a qemu guest whose clock
can be stepped (tests/vm/; this machine's clock is never stepped): while `strata collect`
archives disk.ops of a loop device under steady writes, the guest's clock steps back 30 s,
then forward 1 h. No second is stored twice, every write is counted once; the record after
the step back spans the ~31 s it lasted (cause clock), the hour the clock skipped holds no
record and no span, and both steps are said with their sizes."""
import json
import os
import re
import tempfile
from pathlib import Path

import pytest

from vm import guest, jobs, kernels

KERNEL = os.environ.get("CLOCK_KERNEL", "6.1-security")


def run_guest():
    runs = kernels.VMDIR / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="clock-", dir=runs))
    inside = Path(__file__).resolve().parent / "clock_steps_inside.py"
    repo = Path(__file__).resolve().parent.parent
    return guest.run(KERNEL, f"mkdir -p /tmp/clock && {repo}/.venv/bin/python {inside} /tmp/clock", folder,
                     timeout=800)


def start_guest(item):
    jobs.submit("clock-steps", run_guest)


@pytest.mark.timeout(1500)
def test_clock_steps_back_and_forward_lose_and_duplicate_nothing():
    r = jobs.result("clock-steps", run_guest)  # started with the session: the guest runs beside the suite
    assert r.rc == 0, r.output[-3000:]
    out = json.loads(r.output.strip().splitlines()[-1])
    assert out["rc"] == 0, out["stderr"]
    labels = out["labels"]
    assert labels == sorted(set(labels))                  # no second stored twice
    assert out["kernel_writes"] >= 100
    assert out["counted"].get("write", 0) + out["counted"].get("missed", 0) == out["kernel_writes"], out
    # the step back: the next label's record holds the ~31 s the daemon waited, as a span over
    # them (cause clock); the step forward: the labels jump by the hour, which holds nothing
    jumps = [(a, b) for a, b in zip(labels, labels[1:]) if b - a > 1]
    assert len(jumps) == 1 and 3590 <= jumps[0][1] - jumps[0][0] <= 3610, jumps
    spans = [tuple(s) for s in out["spans"]]
    assert len(spans) == 1 and spans[0][2] == "clock" and 29 <= spans[0][1] <= 34, spans
    assert spans[0][0] in labels and spans[0][0] < jumps[0][0], (spans, jumps)
    back = [float(x) for x in re.findall(r"wall clock stepped back (\d+\.\d) s", out["stderr"])]
    forward = [float(x) for x in re.findall(r"wall clock stepped forward (\d+\.\d) s", out["stderr"])]
    assert len(back) == 1 and 29 <= back[0] <= 34 and len(forward) == 1 and 3599 <= forward[0] <= 3601, out["stderr"]
