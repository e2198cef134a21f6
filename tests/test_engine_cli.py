"""strata-engine command line: bad flags, missing pools and occupied ports give
one clear stderr line and a non-zero exit; mkpool refuses to clobber a pool."""
import socket
import subprocess

import pytest

from engine_util import engine_binary, mkpool


def run(*args):
    return subprocess.run([engine_binary(), *args], capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("args", [
    ["serve", "--bogus"],
    ["serve", "--export", "data"],
    ["serve", "--pool", "/nonexistent/strata-vdev", "--export", "data", "--listen", "127.0.0.1:0"],
    ["serve", "--pool", "/tmp/x", "--export", "data", "--arc-max", "lots"],
    ["serve", "--pool", "/tmp/x", "--export", "data:allow=not-a-net"],
    ["serve", "--pool", "/tmp/x", "--export", "data:recordsize=3k"],
    ["serve", "--pool", "/tmp/x", "--export", "data:mode=1779"],
    ["serve", "--pool", "/tmp/x", "--export", "data:mode="],
    ["mkpool"],
    ["mkpool", "/tmp/x", "--recordsize", "2m"],
    ["stats", "--socket", "/nonexistent/strata.sock"],
    ["frobnicate"],
])
def test_bad_input_gives_one_line_and_nonzero_exit(args):
    r = run(*args)
    assert r.returncode != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("strata-engine"), r.stderr


def test_occupied_port_and_foreign_file(tmp_path):
    pool = mkpool(tmp_path, nvdevs=1)
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    port = busy.getsockname()[1]
    r = run("serve", "--pool", pool, "--export", "data", "--listen", f"127.0.0.1:{port}",
            "--no-rpcbind", "--stats-socket", str(tmp_path / "s.sock"))
    busy.close()
    assert r.returncode != 0 and "cannot listen" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    junk = tmp_path / "junk"
    junk.write_bytes(b"\0" * (32 << 20))
    r = run("serve", "--pool", str(junk), "--export", "data", "--listen", "127.0.0.1:0", "--no-rpcbind")
    assert r.returncode != 0 and "not a strata pool" in r.stderr


def test_mkpool_refuses_an_existing_pool(tmp_path):
    pool = mkpool(tmp_path, nvdevs=1)
    r = run("mkpool", pool)
    assert r.returncode != 0 and "already holds" in r.stderr
    assert run("mkpool", pool, "--force").returncode == 0
