"""strata-load's command line: bad input is one line on stderr and exit 2; --help says
what it does with an example per profile, and every example runs against a real engine;
a refusal by the server (or no portmapper) is one line that names the fix, and the fix works."""
import re
import shlex
import subprocess

import pytest

from conftest import built
from engine_util import Engine, mkpool

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
    (BASE + ["--duration", "2x"], "--duration: expected a duration of at least 0.1s such as 10, 2s, 500ms or 1m"),
    (BASE + ["--step-interval", "s"], "--step-interval: expected a duration"),
])
def test_bad_flags_exit_2(args, msg):
    res = subprocess.run([str(built("bin/strata-load")), *args], capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and msg in lines[0], res.stderr


def load(*args, timeout=60):
    return subprocess.run([str(built("bin/strata-load")), *args], capture_output=True, text=True, timeout=timeout)


PROFILES = ["randread", "seqread", "write", "mixed", "stepup", "seed-l2arc"]


def help_text():
    res = load("--help")
    assert res.returncode == 0 and res.stderr == ""
    return res.stdout


def test_help_describes_each_profile_and_each_server():
    text = help_text()
    for p in PROFILES:
        assert re.search(rf"^  {p} +\S", text, re.M), f"no line describing {p}"
        assert re.search(rf"^  strata-load .*--profile {p}\b", text, re.M), f"no example for {p}"
    for words in ("nfsd", "nfs-ganesha", "--nfsport P --mountport Q", "allow=10.213.0.0/16", "mode=1777"):
        assert words in text


@pytest.mark.parametrize("duration", ["2s", "500ms", "0.5m", "3"])
def test_durations_take_units(duration):
    """Parsed: the run gets as far as the server (nothing listens on port 1)."""
    res = load(*BASE, "--duration", duration, "--nfsport", "1", "--mountport", "1")
    assert res.returncode == 1 and "connect to 127.0.0.1:1" in res.stderr


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """A real engine: /data as the help suggests (mode=1777), /plain with the default root
    (0755, not writable by the load's uids), /wide as the --netns hint suggests."""
    tmp = tmp_path_factory.mktemp("load-cli")
    eng = Engine(tmp, mkpool(tmp, nvdevs=1, size="512M"),
                 exports=("data:mode=1777", "plain", "wide:mode=1777,allow=127.0.0.0/8,allow=10.213.0.0/16"))
    eng.start()
    yield eng
    eng.stop()


def ports(eng):
    return ["--nfsport", str(eng.port), "--mountport", str(eng.mount_port)]


def test_every_help_example_runs(engine):
    """Each example as printed, with the engine's ports (it runs with --no-rpcbind, as the
    refusal below suggests), four files and a one-second run."""
    examples = re.findall(r"^  (strata-load .*)$", help_text(), re.M)
    assert len(examples) == len(PROFILES)
    for line in examples:
        args = shlex.split(line)[1:]
        res = load(*args, *ports(engine), "--files", "4", "--duration", "1s", timeout=120)
        assert res.returncode == 0, f"{line}: {res.stderr}"


def one_line(res):
    assert res.returncode == 1 and res.stdout == ""
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    return lines[0]


def test_no_portmapper_names_the_port_flags():
    """In a network namespace of its own (only loopback, nothing on port 111), whatever
    runs on the host; the flags it names are those test_every_help_example_runs adds."""
    cmd = f"ip link set lo up && exec {built('bin/strata-load')} --server 127.0.0.1 --export /data --profile randread"
    res = subprocess.run(["unshare", "-n", "sh", "-c", cmd], capture_output=True, text=True, timeout=60)
    line = one_line(res)
    assert line.startswith("strata-load: connect to 127.0.0.1:111: ") and "--nfsport P --mountport Q" in line


def test_setup_refused_names_mode_1777(engine):
    line = one_line(load("--server", "127.0.0.1", *ports(engine), "--export", "/plain", "--setup-only",
                         "--files", "1", "--file-size", "64k"))
    assert "create: NFS3ERR_ACCES; " in line and "--export 'NAME:mode=1777'" in line


def test_netns_refused_names_allow(engine):
    """The hint's export (/wide) takes the same --netns run."""
    args = ["--server", "127.0.0.1", *ports(engine), "--netns", "--setup", "--files", "1", "--file-size", "64k",
            "--profile", "randread", "--duration", "0.2s"]
    line = one_line(load(*args, "--export", "/data"))
    assert "mount /data: MNT3ERR_ACCES; " in line
    assert "--export 'NAME:allow=127.0.0.0/8,allow=10.213.0.0/16'" in line
    res = load(*args, "--export", "/wide")
    assert res.returncode == 0, res.stderr


def test_unreachable_server_is_one_line():
    res = subprocess.run([str(built("bin/strata-load")), *BASE, "--nfsport", "1", "--mountport", "1"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode == 1
    assert len(res.stderr.splitlines()) == 1 and "connect to 127.0.0.1:1" in res.stderr
