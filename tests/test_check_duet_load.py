"""strata-load's paired mode, which `strata check ab --mode duet` stands on: its
flags are checked (one line on stderr, exit 2). That every read reaches both
servers is asserted end to end in test_check_ab.py and test_check_ab_server.py."""
import subprocess

import pytest

from conftest import built

BASE = ["--server", "127.0.0.1", "--export", "/x", "--profile", "randread", "--nfsport", "1", "--mountport", "1"]


@pytest.mark.parametrize("args,msg", [
    (BASE + ["--pair-nfsport", "2"], "--pair-nfsport and --pair-mountport go together"),
    (BASE + ["--pair-export", "/y"], "--pair-export needs --pair-nfsport"),
    (BASE + ["--pair-nfsport", "2", "--pair-mountport", "3", "--pair-export", "y"], "must start with '/'"),
    (BASE + ["--pair-nfsport", "2", "--pair-mountport", "3", "--profile", "write"], "randread only"),
    (BASE + ["--pair-nfsport", "2", "--pair-mountport", "3", "--threads", "2"], "--threads must be 1"),
    (BASE + ["--pair-nfsport", "0", "--pair-mountport", "3"], "--pair-nfsport: expected an integer"),
])
def test_bad_pair_flags_exit_2(args, msg):
    res = subprocess.run([str(built("bin/strata-load")), *args], capture_output=True, text=True)
    assert res.returncode == 2 and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and msg in lines[0], res.stderr


def test_unreachable_servers_in_pair_mode_are_one_line_and_exit_1():
    res = subprocess.run([str(built("bin/strata-load")), *BASE, "--pair-nfsport", "1", "--pair-mountport", "1",
                          "--duration", "1"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and len(res.stderr.splitlines()) == 1, res.stderr
