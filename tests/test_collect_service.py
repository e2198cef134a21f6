"""`strata collect --config` as the service runs it: the unit's own command line, under the
unit's capability bounding set, with the real collector and real BPF on a loop device.
SIGHUP after editing the file adds and removes datasets without losing a second; SIGTERM
leaves an intact archive holding the second the signal came in. A wrong file is one line
naming the key and its line, and nothing starts."""
import os
import shlex
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import built
from datasets_util import STRATA, loop_device, strata
from test_datasets_collect import seconds, stop, wait_for

REPO = Path(__file__).resolve().parent.parent
UNIT = REPO / "contrib" / "systemd" / "strata-collect.service"
DEFAULT_CONFIG = REPO / "contrib" / "collect.toml"


def unit_settings():
    """{key: [values]} of the unit file's [Service] section."""
    out, section = {}, None
    for line in UNIT.read_text().splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "Service" and "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out.setdefault(key, []).append(value)
    return out


def service_command(config):
    """The unit's ExecStart with this checkout's strata and the test's config file, run
    with the unit's capability bounding set and no new privileges (as systemd would)."""
    settings = unit_settings()
    argv = shlex.split(settings["ExecStart"][0])
    assert argv[0].endswith("/bin/strata") and argv[1:3] == ["collect", "--config"], argv
    caps = settings["CapabilityBoundingSet"][0].split()
    bounding = ",".join(["-all"] + ["+" + c.removeprefix("CAP_").lower() for c in caps])
    return ["setpriv", f"--bounding-set={bounding}", "--inh-caps=-all", "--no-new-privs",
            STRATA, *argv[1:3], str(config)]


def write_config(path, archive, datasets, extra=""):
    listed = ", ".join(f'"{d}"' for d in datasets)
    path.write_text(f'archive = "{archive}"\n'
                    f"datasets = [{listed}]\n"
                    "[retention]\nsecond = \"2d\"\n"
                    "[metrics]\nlisten = \"\"\n" + extra)


def state(archive, name):
    """The dataset's state; None while the archive's tables are still being created."""
    with sqlite3.connect(archive) as c:
        try:
            row = c.execute("SELECT state FROM datasets WHERE name = ?", (name,)).fetchone()
        except sqlite3.OperationalError:  # the collector created the file, not yet its schema
            return None
    return row and row[0]


def test_reload_adds_and_removes_without_losing_a_second_and_stop_keeps_the_last(tmp_path):
    built("bin/strata-collect")
    with loop_device() as dev:
        name = os.path.basename(dev)
        ops, lat = f"disk.ops[device={name}][op]", f"disk.latency[device={name}][op]"
        archive, config, log = tmp_path / "a.db", tmp_path / "collect.toml", tmp_path / "collect.err"
        write_config(config, archive, [ops])
        env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
        with open(log, "w") as err:
            proc = subprocess.Popen(service_command(config), stdout=subprocess.DEVNULL, stderr=err, env=env)
        try:
            wait_for(lambda: "archiving to" in log.read_text() or proc.poll() is not None, timeout=30,
                     what="the collector to start")
            assert proc.poll() is None, log.read_text()
            started = int(time.time())
            wait_for(lambda: seconds(archive, ops, started), timeout=20, what="the first second")

            write_config(config, archive, [ops, lat])              # a dataset added
            proc.send_signal(signal.SIGHUP)
            added = int(time.time())
            wait_for(lambda: state(archive, lat) == "active" and seconds(archive, lat, added), timeout=20,
                     what="the added dataset's first second")

            config.write_text(config.read_text().replace("datasets", "datasetz"))   # a typo: kept running
            proc.send_signal(signal.SIGHUP)
            wait_for(lambda: "keeping the running configuration" in log.read_text(), what="the refused reload")
            refused = [ln for ln in log.read_text().splitlines() if "keeping the running" in ln]
            assert len(refused) == 1 and "datasetz" in refused[0] and "line 2" in refused[0], refused

            write_config(config, archive, [ops])                    # the dataset removed again, and
            config.write_text(config.read_text().replace('listen = ""', 'listen = "127.0.0.1:0"'))  # a restart's
            proc.send_signal(signal.SIGHUP)
            wait_for(lambda: state(archive, lat) == "suspended", what="the removed dataset suspended")
            assert "reload: metrics.listen changed to '127.0.0.1:0': takes effect when strata collect restarts" \
                in log.read_text()
            after = int(time.time())
            wait_for(lambda: max(seconds(archive, ops, after), default=0) >= after + 2, timeout=20,
                     what="two more seconds")
            assert proc.poll() is None, log.read_text()
            stopped = int(time.time())
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=30) == 0, log.read_text()
        finally:
            stop(proc)
    got = sorted(seconds(archive, ops, 0))
    assert got == list(range(got[0], got[-1] + 1)), f"seconds missing: {sorted(set(range(got[0], got[-1] + 1)) - set(got))}"
    assert got[0] <= added and got[-1] >= stopped                  # across the reloads, up to SIGTERM
    lat_seconds = sorted(seconds(archive, lat, 0))
    assert lat_seconds and lat_seconds[-1] < got[-1]                # collected while listed, not after
    with sqlite3.connect(archive) as c:
        assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        keeps = c.execute("SELECT keep_second FROM datasets WHERE name = ?", (ops,)).fetchone()[0]
    assert keeps == 2 * 86400
    assert "Traceback" not in log.read_text()


def test_flags_win_over_the_file(tmp_path):
    built("bin/strata-collect")
    with loop_device() as dev:
        ops = f"disk.ops[device={os.path.basename(dev)}]"
        from_file, from_flag, config = tmp_path / "file.db", tmp_path / "flag.db", tmp_path / "c.toml"
        write_config(config, from_file, [ops])
        env = {k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"}
        proc = subprocess.Popen([STRATA, "collect", "--config", config, "--archive", from_flag],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
        try:
            wait_for(lambda: from_flag.exists() and state(from_flag, ops) == "active" and seconds(from_flag, ops, 0),
                     timeout=30, what="a second in the archive the flag named")
        finally:
            stop(proc)
    assert proc.returncode == 0, proc.stderr.read()
    assert not from_file.exists()


BAD = [  # (edit of a good file, key, line)
    (lambda t: t.replace("archive =", "archve ="), "archve", 1),
    (lambda t: 'flush_every = "0s"\n' + t, "flush_every", 1),
    (lambda t: t.replace('second = "2d"', 'second = "2 days"'), "retention.second", 4),
    (lambda t: t.replace('second = "2d"', 'second = "200d"'), "retention.second", 4),
    (lambda t: t.replace('listen = ""', 'listen = "nowhere"'), "metrics.listen", 6),
    (lambda t: t + "digits = 3\n", "metrics.digits", 7),
    (lambda t: t + "schema = 9\n", "metrics.schema", 7),
    (lambda t: t + "top = -1\n", "metrics.top", 7),
    (lambda t: t + "[collector]\nengine_pid = \"x\"\n", "collector.engine_pid", 8),
    (lambda t: t.replace("disk.ops[device=loop0]", "disk.opz[device=loop0]"), "datasets", 2),
    (lambda t: t.replace("[metrics]", "[metrics"), None, 5),
    (lambda t: t + "[metric]\nlisten = \":1\"\n", "metric.listen", 8),
]


@pytest.mark.parametrize("edit,key,line", BAD)
def test_a_wrong_file_is_one_line_naming_key_and_line_and_starts_nothing(tmp_path, edit, key, line):
    archive, config = tmp_path / "a.db", tmp_path / "c.toml"
    write_config(config, archive, ["disk.ops[device=loop0]"])
    config.write_text(edit(config.read_text()))
    r = strata("collect", "--config", str(config))
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(lines) == 1, r.stderr
    assert f"line {line}:" in lines[0] and (key is None or f" {key}: " in lines[0]), lines[0]
    assert "Traceback" not in r.stderr
    assert not archive.exists() and not Path(f"{archive}.lock").exists()   # nothing started


def test_the_default_config_reads_cleanly():
    from strata.cli.collect_cmd import collect
    from strata.cli.collect_config import load
    config = load(str(DEFAULT_CONFIG), collect)
    assert config.options["archive_path"] == "/var/lib/strata/archive.db"
    assert config.options["metrics_address"] == ":9464"
    assert config.options["metrics_schema"] == 4 and config.options["metrics_top"] == 20
    assert config.options["flush_every"] == 60
    assert "nfs.latency[client]" in config.datasets and "disk.latency[device]" in config.datasets
    assert all(config.retention.of(level) is not None for level in ("second", "minute", "hour"))


def test_repeatable_flags_take_lists_and_the_command_line_wins():
    """The file-to-flag table on a command with repeatable options, as the wire and fs
    layers' --wire-iface/--wire-port/--fs-pid are (click parsing only: nothing runs)."""
    import click

    from strata.cli.collect_cmd import collector_args
    from strata.cli.collect_config import ConfigError, load, merged

    @click.command()
    @click.option("--wire-iface", "wire_ifaces", multiple=True)
    @click.option("--wire-port", "wire_ports", type=click.IntRange(1, 65535), multiple=True)
    @click.option("--fs-cgroup")
    def command(**given):
        return given

    def run(text, *args):
        path = Path(os.environ.get("TMPDIR", "/tmp")) / f"strata-config-{os.getpid()}.toml"
        path.write_text(text)
        try:
            ctx = command.make_context("collect", list(args))
            return merged(load(str(path), command), ctx, ctx.params)
        finally:
            path.unlink()

    assert collector_args({"stats_socket": "/run/e.sock"}) == ["--stats-socket", "/run/e.sock"]
    assert run('[wire]\ninterfaces = ["eth0", "eth1"]\nports = 2049\n[fs]\ncgroup = "/a"\n') == \
        {"wire_ifaces": ("eth0", "eth1"), "wire_ports": (2049,), "fs_cgroup": "/a"}
    assert collector_args(run('[wire]\ninterfaces = ["eth0", "eth1"]\nports = 2049\n[fs]\ncgroup = "/a"\n')) == \
        ["--wire-iface", "eth0", "--wire-iface", "eth1", "--wire-port", "2049", "--fs-cgroup", "/a"]
    assert run('[wire]\ninterfaces = ["eth0"]\n', "--wire-iface", "lo")["wire_ifaces"] == ("lo",)
    with pytest.raises(ConfigError, match=r"line 3: wire.ports: 70000 is not in the range"):
        run('[wire]\ninterfaces = ["eth0"]\nports = [2049, 70000]\n')
    with pytest.raises(ConfigError, match=r"line 2: fs.cgroup: expected a string$"):
        run('[fs]\ncgroup = ["/a", "/b"]\n')
    with pytest.raises(ConfigError, match=r"line 2: fs.pids: unknown key"):       # no --fs-pid here
        run('[fs]\npids = [1]\n')


@pytest.mark.parametrize("kind", ["missing", "not executable"])
def test_a_collector_program_that_cannot_run_is_one_line_and_starts_nothing(tmp_path, kind):
    archive, program = tmp_path / "a.db", tmp_path / "strata-collect"
    if kind == "not executable":
        program.write_text("#!/bin/sh\n")
        program.chmod(0o644)
    r = strata("collect", "--archive", str(archive), "--collector", str(program))
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        f"strata: Invalid value for --collector: {program} is not an executable file"], r.stderr
    assert not archive.exists() and not Path(f"{archive}.lock").exists()


def test_without_privileges_the_reason_first_and_nothing_left(tmp_path):
    """`strata collect` by a process that may not load probes (root with every capability
    dropped, as a user without CAP_BPF and CAP_PERFMON): the reason and the fix are the
    first line, exit 77, and no archive nor lock is made."""
    archive = tmp_path / "n.db"
    r = subprocess.run(["setpriv", "--bounding-set=-all", "--inh-caps=-all", STRATA, "collect", "--archive",
                        str(archive)], capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if k != "STRATA_ARCHIVE"})
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 77 and len(lines) == 1, r.stderr
    assert "needs root (or CAP_BPF and CAP_PERFMON)" in lines[0] and "setcap cap_bpf,cap_perfmon+ep" in lines[0]
    assert list(tmp_path.iterdir()) == []
