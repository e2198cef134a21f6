"""`strata top` in tmux: it draws, refreshes every second, and q or Ctrl-C give
the shell back with the terminal restored (typed text echoes again)."""
import shlex
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

from heatmaps_util import REPO, build_archive, histogram, seed_latencies


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    rng = np.random.default_rng(3)
    now = int(time.time())
    clients = ["10.0.0.1", "10.0.0.2", "10.0.0.3"]
    return build_archive(tmp_path_factory.mktemp("top") / "a.db", {
        "nfs.latency[client]": lambda t: {c: histogram(seed_latencies(rng, 20 * (i + 1))) for i, c in enumerate(clients)},
        "nfs.ops[client]": lambda t: {c: 20 * (i + 1) for i, c in enumerate(clients)},
    }, start=now - 150, seconds=150)


def tmux(*args):
    return subprocess.run(["tmux"] + list(args), capture_output=True, text=True, check=True).stdout


def wait_for(session, text, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        screen = tmux("capture-pane", "-p", "-t", session)
        if text in screen:
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{text!r} never appeared:\n{screen}")


@pytest.mark.parametrize("quit_key", ["q", "C-c"])
def test_top_refreshes_and_quits_cleanly(archive, quit_key):
    session = f"top-{uuid.uuid4().hex[:8]}"
    tmux("new-session", "-d", "-s", session, "-x", "120", "-y", "40", "bash --norc --noprofile")
    try:
        tmux("send-keys", "-t", session, "PS1='READY$ '; clear", "Enter")
        wait_for(session, "READY$")
        command = (f"cd {REPO} && {shlex.quote(sys.executable)} -c 'from strata.cli.main import main; main()' "
                   f"top --archive {archive}; echo EXIT=$?")
        tmux("send-keys", "-t", session, command, "Enter")
        first = wait_for(session, "refreshed")
        assert "nfs.latency[client]" in first and "10.0.0.3" in first and "┤" in first
        stamp = [line for line in first.splitlines() if "refreshed" in line][0]
        time.sleep(2.2)
        second = tmux("capture-pane", "-p", "-t", session)
        assert stamp not in second and "refreshed" in second          # it refreshed
        tmux("send-keys", "-t", session, quit_key)
        screen = wait_for(session, "EXIT=0")
        assert "refreshed" not in screen                              # alternate screen left
        tmux("send-keys", "-t", session, "echo typed-$((40+2))", "Enter")
        screen = wait_for(session, "typed-42")
        assert "echo typed-$((40+2))" in screen                       # echo is back on
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


@pytest.mark.parametrize("mode", ["none", "truecolor"])
def test_a_24_line_terminal_keeps_a_usable_map(archive, mode):
    """The frame fits 24 lines and keeps at least 8 lines of map above a shorter client table."""
    from strata.datasets.archive import Archive
    from strata.views import live
    with Archive.open(str(archive)) as a:
        heat, keys, clients = live.pick_datasets(a, None, None)
        text = live.frame(a, heat, keys, clients, time.time(), 100, 24, mode)
    lines = text.split("\n")
    map_lines = [line for line in lines if "│" in line or "┤" in line]
    assert len(lines) <= 24 and len(map_lines) >= live.MAP_LINES, text
    assert "10.0.0.3" in text                                   # the busiest client still listed


@pytest.mark.parametrize("size", [(20, 10), (80, 12), (59, 40)])
def test_a_terminal_too_small_says_so(archive, size):
    """Below the minimum, top's screen is a "too small" note within the terminal, not a
    map wrapped into garbage; at the minimum the frame fits."""
    from strata.datasets.archive import Archive
    from strata.views import live
    width, height = size
    with Archive.open(str(archive)) as a:
        heat, keys, clients = live.pick_datasets(a, None, None)
        small = live.frame(a, heat, keys, clients, time.time(), width, height, "none").split("\n")
        least = live.frame(a, heat, keys, clients, time.time(), live.MIN_WIDTH, live.MIN_HEIGHT, "none").split("\n")
    assert "too small" in " ".join(small) and f"{live.MIN_WIDTH}x{live.MIN_HEIGHT}" in " ".join(small)
    assert len(small) <= height and max(map(len, small)) <= width, small
    assert len(least) <= live.MIN_HEIGHT and max(map(len, least)) <= live.MIN_WIDTH, "\n".join(least)
    assert "10.0.0.3" in "\n".join(least)
