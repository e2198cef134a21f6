"""strata-load's command line: bad input is one line on stderr and exit 2."""
import subprocess

import pytest

from conftest import built

BASE = ["--server", "127.0.0.1", "--export", "/x", "--profile", "randread"]


@pytest.mark.parametrize("args,msg", [
    (["--bogus"], "unknown option '--bogus'"),
    (BASE + ["--profile", "nope"], "--profile: unknown value 'nope'"),
    (BASE + ["--io-size", "8q"], "--io-size: not a positive size"),
    (BASE + ["--clients"], "--clients needs a value"),
    (BASE + ["--clients", "0"], "--clients: expected an integer"),
    (BASE + ["--stable", "sometimes"], "--stable: unknown value"),
    (BASE + ["--nfsport", "2049"], "--nfsport and --mountport go together"),
    (BASE + ["--file-size", "4k", "--io-size", "8k"], "smaller than --io-size"),
    (["--server", "127.0.0.1", "--export", "x", "--profile", "randread"], "must start with '/'"),
    (["--server", "127.0.0.1", "--export", "/x"], "--profile is required"),
    (BASE + ["extra"], "unexpected argument 'extra'"),
])
def test_bad_flags_exit_2(args, msg):
    res = subprocess.run([str(built("bin/strata-load")), *args], capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and msg in lines[0], res.stderr


def test_help():
    res = subprocess.run([str(built("bin/strata-load")), "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "--profile" in res.stdout


def test_unreachable_server_is_one_line():
    res = subprocess.run([str(built("bin/strata-load")), *BASE, "--nfsport", "1", "--mountport", "1"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 1
    assert len(res.stderr.splitlines()) == 1 and "connect to 127.0.0.1:1" in res.stderr
