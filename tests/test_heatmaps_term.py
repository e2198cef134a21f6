"""Terminal rendering: half-block colour output, plain output, and the real thing
in tmux at two widths (the map fits each, axes and legend are there)."""
import shlex
import subprocess
import sys
import time
import uuid

import numpy as np
import pytest

from heatmaps_util import REPO, T0, build_archive, heatmap_result, histogram, seed_latencies
from strata.heatmaps import term_heatmap
from strata.heatmaps.rebin import build_grid


def grid(percentiles=()):
    rng = np.random.default_rng(2)
    rows = [(c, int(v), 1) for c in range(120) for v in seed_latencies(rng, 50)]
    qr = heatmap_result({"": rows}, 120, name="nfs.latency")
    return build_grid(qr, T0, T0 + 120, max_cols=60, ncells=40, axis="log", percentiles=percentiles)


@pytest.mark.parametrize("mode,escape", [("truecolor", "\x1b[38;2;"), ("256", "\x1b[38;5;")])
def test_colour_modes_use_half_blocks(mode, escape):
    text = term_heatmap.render(grid((50, 99)), mode)
    assert escape in text and "▀" in text
    plain = [line for line in text.splitlines()]
    assert len(plain) == 20 + 4 + 3           # 40 cells -> 20 lines, header 4, axis 2 + legend 1
    assert "━━\x1b[0m p50" in plain[-1]
    assert "(log)" in plain[-1]


def test_plain_mode_uses_density_ramp():
    text = term_heatmap.render(grid(), "none")
    body = [line.split("│", 1)[-1].split("┤", 1)[-1] for line in text.splitlines()[4:44]]
    assert "\x1b" not in text and "▀" not in text
    assert set("".join(body)) <= set(" .:-=+*#%@")
    assert len(body) == 40


def test_the_header_says_the_ranges_percentiles_as_one_line():
    """p50, p99, p99.9 of every event in the range (as iostat and biolatency users read them)."""
    rows = [(c, v, 1) for c in range(10) for v in [100_000] * 98 + [10_000_000] * 2]
    g = build_grid(heatmap_result({"": rows}, 10, name="nfs.latency"), T0, T0 + 10, max_cols=10, ncells=20,
                   axis="log")
    line = term_heatmap.render(g, "none").splitlines()[2]
    p50, p99, p999 = (float(w.split()[1].rstrip("µms")) for w in line.split(" over ")[0].split(" · "))
    assert line.startswith("p50 ") and line.endswith(" over the range"), line
    assert 100 <= p50 <= 110 and 10 <= p99 <= 11 and 10 <= p999 <= 11, line   # 100µs, 10ms, 10ms: in their bucket


def _tmux(session, width, height, command):
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", str(width), "-y", str(height),
                    command], check=True)


def _capture(session):
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    rng = np.random.default_rng(5)
    path = tmp_path_factory.mktemp("term") / "a.db"
    return build_archive(path, {"nfs.latency": lambda t: {"": histogram(seed_latencies(rng, 100))}},
                         seconds=600)


@pytest.mark.parametrize("width,height", [(80, 24), (160, 50)])
def test_in_tmux_fits_the_terminal(archive, width, height, tmp_path):
    session = f"hm-{uuid.uuid4().hex[:8]}"
    done = tmp_path / "done"
    cmd = (f"for i in $(seq 50); do [ $(tput cols) = {width} ] && break; sleep 0.1; done; "   # pane sized
           f"cd {REPO} && {shlex.quote(sys.executable)} -c 'from strata.cli.main import main; main()' "
           f"heatmap nfs.latency --log --percentiles 50,99 --archive {archive} --since {T0} --until {T0 + 600}; "
           f"touch {done}; sleep 30")
    _tmux(session, width, height, f"bash -c {shlex.quote(cmd)}")
    try:
        for _ in range(100):
            if done.exists():
                break
            time.sleep(0.1)
        screen = _capture(session)
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    lines = screen.rstrip("\n").splitlines()
    assert done.exists(), screen
    assert lines[0].startswith("nfs.latency")
    assert all(len(line) <= width for line in lines)
    axis = next(line for line in lines if "└" in line)
    assert len(axis.rstrip()) >= 0.75 * width, screen           # the map uses the width
    assert any("▀" in line or "▄" in line or "█" in line for line in lines)  # a TTY: half blocks
    labels = "".join(lines)
    assert "10ms" in labels and "1µs" in labels and "100µs" in labels
    assert len([line for line in lines if "│" in line or "┤" in line]) >= height - 9
