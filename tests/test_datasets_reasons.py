"""`strata datasets list` says why an active dataset counts nothing, from the running
collector's status (the real daemon and BPF): an fs.* dataset without a process
chosen, a wire dataset with no call on the ports followed (naming --wire-port)."""
import json
import os
import socket
import subprocess
import time

from conftest import built
from datasets_util import STRATA, strata


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_list_names_why_a_dataset_counts_nothing(tmp_path):
    built("bin/strata-collect")
    archive = str(tmp_path / "a.db")
    for name in ("fs.ops[op]", "wire.ops[op]", "disk.ops[op]"):
        assert strata("datasets", "create", name, "--archive", archive).returncode == 0
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
    proc = subprocess.Popen([STRATA, "collect", "--archive", archive, "--wire-iface", "lo", "--wire-port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline, why = time.monotonic() + 90, {}
        while time.monotonic() < deadline and len(why) < 2:
            time.sleep(1)
            listed = json.loads(strata("datasets", "list", "--json", "--archive", archive).stdout)
            why = {d["name"]: d["counts_nothing_because"] for d in listed["datasets"] if d["counts_nothing_because"]}
        table = strata("datasets", "list", "--archive", archive).stdout
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert listed["schema"] == "strata.datasets" and listed["schema_version"] == 1
    assert set(why) == {"fs.ops[op]", "wire.ops[op]"}, why            # disk.ops counts: no reason
    assert "no processes chosen" in why["fs.ops[op]"] and "--fs-comm NAME" in why["fs.ops[op]"]
    assert f"ports followed ({port})" in why["wire.ops[op]"] and "--wire-port PORT" in why["wire.ops[op]"]
    assert f"wire.ops[op] counts nothing: no RPC call seen on the ports followed ({port})" in table
