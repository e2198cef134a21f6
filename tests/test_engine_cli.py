"""strata-engine command line: bad flags, missing pools and occupied ports give
one clear stderr line and a non-zero exit; mkpool refuses to clobber a pool; stats
and ctl find the one live engine past the sockets of engines killed with -9."""
import json
import os
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


def test_export_options_without_their_colon_are_refused_with_the_fix():
    """`--export 'data mode=1777'`: one line giving the spelling that works, before any pool is opened."""
    for spec in ("data mode=1777", "data,mode=1777"):
        r = run("serve", "--pool", "/nonexistent/strata-vdev", "--export", spec)
        assert r.returncode == 2 and r.stderr.strip().endswith("(--export 'data:mode=1777')"), r.stderr


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


STALE_SOCKETS = r"""
set -e
mount -t tmpfs tmpfs /run/strata
pids=""
for pool in "$@"; do
    "$ENGINE" serve --pool "$pool" --export data --listen 127.0.0.1:0 --no-rpcbind --arc-max 64M \
        >/dev/null 2>>"$ERR" &
    pids="$pids $!"
done
for pid in $pids; do          # each engine's socket is there once it serves
    for i in $(seq 300); do [ -S /run/strata/engine-$pid.sock ] && break; sleep 0.1; done
done
set -- $pids
kill -9 $1 $2 $3
wait $1 $2 $3 || true
echo "before: $(ls /run/strata | tr '\n' ' ')"
echo "live: engine-$4.sock"
"$ENGINE" stats > "$STATS"
"$ENGINE" ctl inject-delay pool 0
echo "after: $(ls /run/strata | tr '\n' ' ')"
kill $4
wait $4 || true
"""


def test_stats_answers_past_the_sockets_of_engines_killed_with_9(tmp_path):
    """Four engines serve with their stats sockets in /run/strata; three are killed with -9
    and leave theirs. `strata-engine stats` and `ctl` (no --pid) answer from the live one and
    remove the dead ones' sockets. In a private mount namespace whose /run/strata is its own
    (the engines of other runs on this machine stay out of it)."""
    for i in range(4):
        (tmp_path / f"p{i}").mkdir()
    pools = [mkpool(tmp_path / f"p{i}", nvdevs=1) for i in range(4)]
    env = {**os.environ, "ENGINE": engine_binary(), "ERR": str(tmp_path / "err"), "STATS": str(tmp_path / "stats")}
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", STALE_SOCKETS, "sh", *pools],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr + (tmp_path / "err").read_text()
    lines = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": " in line)
    assert len(lines["before"].split()) == 4 and lines["live"] in lines["before"].split(), r.stdout
    assert lines["after"].split() == [lines["live"]], r.stdout
    assert "arc" in json.loads((tmp_path / "stats").read_text())
