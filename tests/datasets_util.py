"""Helpers for the datasets tests: collector-format JSON lines, the strata CLI and its
one-line errors, a copy of a module's template archive per test, loop devices, rollups
checked against their seconds."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

from strata.datasets import codec

STRATA = str(Path(sys.executable).parent / "strata")


def data_line(ds, t, kind, data, partial=False) -> str:
    """One data record in collectors/FORMAT.md version 1 (partial: of an interval that began
    before its dataset counted)."""
    return json.dumps({"v": 1, "type": "data", "t": t, "id": str(ds), "kind": kind, "data": data,
                       **({"partial": True} if partial else {})})


def heat_second(t, nkeys=3):
    """A deterministic heat-map second: {key: {bucket: count}} varying with t."""
    return {f"10.0.0.{k}": {str(100 + (t + k) % 50): 1 + (t * 7 + k) % 5, str(400 + k): 2 + t % 3}
            for k in range(nkeys) if (t + k) % 4}


def strata(*args, env=None, input=None, timeout=60, user=None):
    """Run the strata CLI; returns CompletedProcess with text output."""
    cmd = [STRATA, *args]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]  # user: a uid
    full_env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    full_env.update(env or {})
    return subprocess.run(cmd, capture_output=True, text=True, env=full_env, input=input, timeout=timeout)


def one_line_error(proc, needle):
    """proc (a strata run) failed in one `strata: ` line holding needle, without a traceback."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode != 0 and "Traceback" not in proc.stderr + proc.stdout, proc.stderr
    assert len(lines) == 1 and lines[0].startswith("strata: ") and needle in lines[0], proc.stderr


def template_copy():
    """The fixture of a module that defines `template` (an archive file, built once):
    `archive = template_copy()` gives each test its own copy's path, to change."""
    @pytest.fixture()
    def archive(template, tmp_path) -> str:
        shutil.copy(template, tmp_path / "a.db")
        return str(tmp_path / "a.db")
    return archive


@contextmanager
def loop_device(size_mb=32):
    """A loop device over a temporary file (root), detached and deleted afterwards."""
    with tempfile.TemporaryDirectory(prefix="strata-ds-loop-") as d:
        image = Path(d) / "disk.img"
        with open(image, "wb") as f:
            f.truncate(size_mb << 20)
        dev = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True,
                             text=True, check=True).stdout.strip()
        try:
            yield dev
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)


def direct_writes(dev, count, bs=4096):
    """count O_DIRECT writes of bs bytes to a block device (dd)."""
    subprocess.run(["dd", "if=/dev/zero", f"of={dev}", f"bs={bs}", f"count={count}", "oflag=direct"],
                   capture_output=True, check=True)


def second_records(conn) -> dict:
    """{(dataset, t): data} of every second-level record of an archive connection."""
    return {(ds, t): data for ds, t, data in conn.execute("SELECT dataset, t, data FROM records WHERE step = 1")}


def rollups_against_seconds(conn, seen: dict) -> int:
    """Check that every minute, ten-minute and hour record of the archive holds exactly the sum
    of its seconds, `seen` ({(dataset, t): data}, second_records() taken before a prune, and
    after) and that no period is left pending; returns the records checked."""
    kinds = dict(conn.execute("SELECT id, kind FROM datasets"))
    assert conn.execute("SELECT count(*) FROM pending").fetchone()[0] == 0
    checked = 0
    for ds, step, t, data in conn.execute("SELECT dataset, step, t, data FROM records WHERE step > 1").fetchall():
        kind = kinds[ds]
        got = codec.decode(kind, [data])
        parts = [d for (d_ds, s), d in seen.items() if d_ds == ds and t <= s < t + step]
        assert parts, f"dataset {ds}: a {step} s record at {t} over no second"
        cells = codec.decode(kind, parts)
        want = codec.combine(cells, np.zeros(len(cells), np.int64))
        assert np.array_equal(got.key, want.key) and np.array_equal(got.bucket, want.bucket), (ds, step, t)
        assert np.array_equal(got.count, want.count), (ds, step, t)
        assert np.allclose(got.total, want.total), (ds, step, t)
        checked += 1
    return checked
