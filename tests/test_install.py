"""`make install DESTDIR=... PREFIX=/usr/local` into a temporary root, then the installed
`strata` (its own virtual environment, launcher and programs; no checkout or .venv on PATH)
runs doctor, collects from the installed default configuration on a loop device with the
real BPF collector, and draws the heat map; the installed unit passes `systemd-analyze
verify`; `make uninstall` removes it all. Needs root. The first run fetches the pinned
wheels from PyPI (network) into build/wheelhouse; later runs install from there offline."""
import os
import re
import shutil
import signal
import sqlite3
import subprocess
from pathlib import Path

from conftest import built
from datasets_util import direct_writes, loop_device
from test_datasets_collect import seconds, wait_for

REPO = Path(__file__).resolve().parent.parent


def make(*args, timeout=900):
    r = subprocess.run(["make", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]


def test_installed_strata_works_without_the_checkout(tmp_path):
    built("bin/strata-collect")
    root = tmp_path / "root"
    # bytecode is compiled on first use instead of at install: a minute less on a busy machine
    make("install", f"DESTDIR={root}", "PREFIX=/usr/local", "PIP_INSTALL_FLAGS=--no-compile")
    bin_dir, config = root / "usr/local/bin", root / "etc/strata/collect.toml"
    strata = str(bin_dir / "strata")
    for program in ("strata", "strata-collect", "strata-engine", "strata-load"):
        assert os.access(bin_dir / program, os.X_OK), program
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}

    def run(*args, **kw):
        return subprocess.run([strata, *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                              timeout=120, **kw)

    where = subprocess.run([root / "usr/local/lib/strata/bin/python", "-c",
                            "import strata.cli.main, strata.demos, strata.web; from importlib import resources; "
                            "assert resources.files('strata.web').joinpath('static', 'worksheet.js').is_file(); "
                            "print(strata.cli.main.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path)
    assert where.stdout.startswith(str(root)), where.stdout + where.stderr
    doctor = run("doctor")
    assert doctor.returncode == 0 and "collection can run here" in doctor.stdout, doctor.stdout + doctor.stderr

    with loop_device() as dev:
        name = os.path.basename(dev)
        lat = f"disk.latency[device={name}][op]"
        archive = tmp_path / "archive.db"
        text = config.read_text()
        text = text.replace('"/var/lib/strata/archive.db"', f'"{archive}"')
        text = text.replace('"disk.ops[device]",', f'"disk.ops[device]", "{lat}",')
        text = text.replace('listen = ":9464"', 'listen = "127.0.0.1:0"')
        mine = tmp_path / "collect.toml"
        mine.write_text(text)
        unit = (root / "usr/local/lib/systemd/system/strata-collect.service").read_text()
        exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1).split()
        assert exec_start == ["/usr/local/bin/strata", "collect", "--config", "/etc/strata/collect.toml"]
        log = tmp_path / "collect.err"
        with open(log, "w") as err:
            proc = subprocess.Popen([strata, "collect", "--config", str(mine)], stdout=subprocess.DEVNULL,
                                    stderr=err, env=env, cwd=tmp_path)
        try:
            wait_for(lambda: "serving OpenMetrics" in log.read_text() or proc.poll() is not None, timeout=60,
                     what="the installed collector to start")
            assert proc.poll() is None, log.read_text()
            wait_for(lambda: seconds(archive, lat, 0), timeout=20, what="a second archived")
            direct_writes(dev, 200)
            wait_for(lambda: ("write",) in sqlite3.connect(archive).execute("SELECT key FROM keys").fetchall(),
                     timeout=20, what="the writes archived")
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0, log.read_text()
    shown = run("heatmap", lat, "--archive", str(archive), "--last", "10m", "--color", "none")
    assert shown.returncode == 0 and lat in shown.stdout, shown.stdout + shown.stderr
    listed = run("datasets", "list", "--archive", str(archive))
    assert "1w/90d/104w" in listed.stdout, listed.stdout

    if shutil.which("systemd-analyze"):   # the installed unit, its ExecStart pointing into the temporary root
        checked = tmp_path / "strata-collect.service"
        checked.write_text(unit.replace("/usr/local/bin/strata", strata))
        verify = subprocess.run(["systemd-analyze", "verify", str(checked)], capture_output=True, text=True)
        assert verify.returncode == 0 and "strata-collect.service" not in verify.stderr, verify.stderr
    else:
        print("systemd-analyze is not installed: the unit is not verified")

    make("uninstall", f"DESTDIR={root}", "PREFIX=/usr/local")
    left = [str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()]
    assert left == [], left
