"""Image export survives a Chromium that hangs: the render is killed with its process
group at the deadline, retried, then reported in one line, and the file already at the
output path is left as it was. The hanging browser is a shell script standing in for
Chromium: a real Chromium cannot be made to hang on demand."""
import os
import time

import plotly.graph_objects as go
import pytest

from strata.heatmaps import export


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_hung_browser_is_killed_and_reported(tmp_path, monkeypatch):
    pids = tmp_path / "pids"
    browser = tmp_path / "hanging-browser"
    browser.write_text(f"#!/bin/sh\necho $$ >> {pids}\nsleep 600 &\necho $! >> {pids}\nwait\n")
    browser.chmod(0o755)
    monkeypatch.setenv("BROWSER_PATH", str(browser))
    out = tmp_path / "map.png"
    out.write_bytes(b"earlier export")
    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]))
    started = time.monotonic()
    with pytest.raises(export.ExportError, match=r"^cannot export PNG \(kaleido/Chromium\): no result within 3 s$"):
        export.write_image(fig, str(out), "png", deadline=3)
    assert time.monotonic() - started < 30
    started_pids = [int(p) for p in pids.read_text().split()]
    assert len(started_pids) == 2 * export.EXPORT_ATTEMPTS, "each attempt starts the browser once"
    deadline = time.monotonic() + 5
    while any(alive(p) for p in started_pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in started_pids), "a hung browser or its child outlived the export"
    assert out.read_bytes() == b"earlier export"
    assert [p.name for p in tmp_path.iterdir() if "partial" in p.name] == []


def test_export_replaces_the_file_whole_and_reuses_the_browser(tmp_path):
    out = tmp_path / "map.svg"
    out.write_text("earlier export")
    export.write_image(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]])), str(out), "svg")
    renderer = export._renderer.child.pid
    export.write_image(go.Figure(go.Heatmap(z=[[1, 2], [3, 4]])), str(tmp_path / "map.png"), "png")
    assert export._renderer.child.pid == renderer, "a second image started another browser"
    assert out.read_text().lstrip().startswith("<svg")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["map.png", "map.svg"]


def test_a_renderer_that_dies_silently_is_one_line(tmp_path, monkeypatch):
    """A renderer killed before it can say why (as by the OOM killer) is reported, not a traceback."""
    export._stop_renderer()   # the next image starts a renderer, which dies at once
    monkeypatch.setattr(export, "_serve", lambda jobs, tmp: os.kill(os.getpid(), 9))
    with pytest.raises(export.ExportError, match=r"the renderer ended with status -9$"):
        export.write_image(go.Figure(), str(tmp_path / "map.png"), "png", deadline=10)


def test_a_browser_that_cannot_start_is_its_own_one_line(tmp_path, monkeypatch):
    """kaleido's reason reaches the user, on every attempt, not a renderer's exit status."""
    monkeypatch.setenv("BROWSER_PATH", str(tmp_path / "no-chromium"))
    with pytest.raises(export.ExportError, match=r"^cannot export PNG \(kaleido/Chromium\): Kaleido v1 and later "
                                                 r"requires Chrome to be installed"):
        export.write_image(go.Figure(), str(tmp_path / "map.png"), "png", deadline=20)


def _render_started(tmp):
    """True once the export's renderer has made its temporary folders (Chromium is starting)."""
    return any(len(list(p.rglob("*"))) > 0 for p in tmp.iterdir()) if tmp.exists() else False


@pytest.mark.parametrize("interrupts", [0, 1, 2])
def test_ctrl_c_ends_an_export_at_once_and_leaves_no_temp_folders(tmp_path, request, interrupts):
    """Ctrl-C (SIGINT to the terminal's process group) during a real heat map's PNG export:
    one or two quick ones end it within seconds with the one-line "aborted", and the
    renderer's temporary folders (Chromium's profile, kaleido's) are gone, as they are
    after an export left alone (0)."""
    import shutil
    import signal
    import subprocess
    import tempfile
    from pathlib import Path

    import numpy as np
    from heatmaps_util import STRATA, build_archive, histogram, seed_latencies

    rng = np.random.default_rng(3)
    archive = build_archive(tmp_path / "a.db", {"nfs.latency": lambda t: {"": histogram(seed_latencies(rng, 50))}})
    tmp = Path(tempfile.mkdtemp(prefix="st-"))   # short: Chromium's socket path must fit 108 bytes
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    env = dict(os.environ, TMPDIR=str(tmp))
    proc = subprocess.Popen(STRATA + ["heatmap", "nfs.latency", "--archive", str(archive), "-o",
                                      str(tmp_path / "map.png")], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if interrupts == 0:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0 and (tmp_path / "map.png").stat().st_size > 0, err
        assert list(tmp.iterdir()) == [], "the renderer's temporary folders outlived the export"
        return
    deadline = time.monotonic() + 60
    while not _render_started(tmp) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    time.sleep(0.3)
    for _ in range(interrupts):
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.05)
    sent = time.monotonic()
    try:
        out, err = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"the export did not end within 10 s of {interrupts} Ctrl-C")
    assert time.monotonic() - sent < 5
    assert (proc.returncode, err.strip()) == (130, "strata: aborted")
    assert list(tmp.iterdir()) == [], "the renderer's temporary folders outlived the export"
    assert not (tmp_path / "map.png").exists()
