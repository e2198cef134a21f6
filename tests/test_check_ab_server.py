"""`strata check ab --a-server/--b-server`: a server no one here wrote (nfs-ganesha,
FSAL_VFS, NFSv3/TCP), the same config on both sides, started by strata from a
command template and a config template, loaded by strata-load and measured
through the wire layer (real TC BPF on lo). In rounds mode the run ends with a
verdict, and every round archive holds wire data from its own side: its read
count is at most what that round's strata-load reports it sent, and most of it.
In duet mode (both ganeshas serving at once under paired reads, in fresh pairs of
servers) each side's wire archive counts, second by second, the reads
strata-load sent to both, and the report says which threads swapped CPUs. Bad server
commands give one line and exit 2."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import pytest

from strata.datasets.archive import Archive

pytestmark = [pytest.mark.skipif(os.geteuid() != 0, reason="BPF and TC need root"),
              pytest.mark.skipif(not (shutil.which("ganesha.nfsd") and shutil.which("rpcbind")),
                                 reason="nfs-ganesha (nfs-ganesha, nfs-ganesha-vfs) and rpcbind are not installed")]

STRATA = [sys.executable, "-c", "from strata.cli.main import main; main()"]
GANESHA_CONF = """
NFS_CORE_PARAM {
    NFS_Port = {nfsport};
    MNT_Port = {mountport};
    Bind_Addr = 127.0.0.1;
    Protocols = 3;
    Enable_NLM = false;
    Enable_RQUOTA = false;
    Enable_UDP = false;
}
NFSV4 { Graceless = true; }
EXPORT {
    Export_Id = 1;
    Path = {export};
    Pseudo = /strata;
    Protocols = 3;
    Transports = TCP;
    Access_Type = RW;
    Squash = No_Root_Squash;
    SecType = sys;
    FSAL { Name = VFS; }
}
"""
GANESHA = "exec ganesha.nfsd -F -L {dir}/ganesha.log -p {dir}/ganesha.pid -f @ganesha.conf"
PROFILE = """
description = "check ab server test: reads from ganesha"
[load]
profile = "randread"
io_size = "8k"
files = 2
file_size = "1m"
clients = 2
threads = 1
rate = 400
setup = true
[measure]
warmup = 1
datasets = ["nfs.latency[op]", "nfs.ops[op]"]
[check]
metrics = ["p50", "mean"]
[ab]
mode = "rounds"
pairs = 4
pair_warmup = 1
rounds = 6
round_seconds = 2
round_warmup = 1
confidence = 0.9
seconds = 8
"""


def _listening(port):
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def rpcbind():
    """ganesha registers with the portmapper at start and exits without one."""
    proc = None
    if not _listening(111):
        proc = subprocess.Popen(["rpcbind", "-f"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not _listening(111):
            assert proc.poll() is None and time.monotonic() < deadline, "rpcbind did not start"
            time.sleep(0.1)
    yield
    if proc:
        proc.terminate()
        proc.wait(timeout=10)


def run(tmp_path, *args, timeout=120, profile=PROFILE):
    return finish(start(tmp_path, *args, profile=profile), timeout)


def start(folder, *args, profile=PROFILE) -> subprocess.Popen:
    """`strata check ab` with profile and the ganesha config in folder."""
    folder.mkdir(exist_ok=True)
    (folder / "ab.toml").write_text(profile)
    (folder / "ganesha.conf").write_text(GANESHA_CONF)
    return subprocess.Popen([*STRATA, "check", "ab", "--profile", "ab.toml", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=folder)


def finish(proc, timeout) -> subprocess.CompletedProcess:
    stdout, stderr = proc.communicate(timeout=timeout)
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def reads(path) -> int:
    with Archive.open(str(path)) as ar:
        first, last = ar.extent("wire.ops[op]")
        ops = ar.query("wire.ops[op]", first, last + 1)
        lat = ar.query("wire.latency[op]", first, last + 1)
    assert "read" in ops.keys and "read" in lat.keys
    n = int(ops.values[ops.keys.index("read")].sum())
    assert int(lat.counts[lat.keys.index("read")].sum()) == n     # one latency per operation counted
    return n


def test_same_ganesha_on_both_sides_gives_a_verdict_from_wire_rounds(tmp_path, rpcbind):
    # no warm-up second before each round: both ganeshas stay up, their files cached, all along
    proc = run(tmp_path, "--a-server", GANESHA, "--b-server", GANESHA, "--json", "-o", "rounds",
               profile=PROFILE.replace("\nround_warmup = 1\n", "\nround_warmup = 0\n"))
    assert proc.returncode in (0, 1, 3), proc.stderr
    report = json.loads(proc.stdout)
    assert report["verdict"] in ("same", "better", "worse", "inconclusive") and report["order"] == "ABBAAB"
    assert {r["dataset"] for r in report["results"]} == {"wire.latency[op]", "wire.ops[op]"}
    [lat] = [r for r in report["results"] if r["dataset"] == "wire.latency[op]" and r["key"] == "read"]
    assert lat["intervals"] == [3, 3]
    rounds = [tmp_path / p for p in report["rounds"]]
    assert [p.name for p in rounds] == [f"round-{r + 1:02d}-{s}.archive" for r, s in enumerate("ABBAAB")]
    for path in rounds:
        # the 2 measured seconds of a round's 3 s of load: at most what strata-load sent, and a good part of it
        sent = json.loads(path.with_suffix(".load.json").read_text())
        sent_reads = sum(c["ops"].get("read", 0) for c in sent["clients"])
        n = reads(path)
        assert sent["errors"] == 0 and 0.25 * sent_reads <= n <= sent_reads, (path.name, n, sent_reads)


def wire_reads_per_second(path) -> dict:
    with Archive.open(str(path)) as ar:
        first, last = ar.extent("wire.ops[op]")
        ops = ar.query("wire.ops[op]", first, last + 1)
    values = ops.values[ops.keys.index("read")]
    return {int(t): int(v) for t, v, p in zip(ops.times, values, ops.present) if p}


def test_two_ganeshas_in_fresh_duet_pairs_see_the_same_reads_each_second(tmp_path, rpcbind):
    """Duet mode in 3 fresh pairs of ganeshas (each pair both servers started anew), 2 blocks each."""
    proc = run(tmp_path, "--a-server", GANESHA, "--b-server", GANESHA, "--mode", "duet", "--pairs", "3",
               "--seconds", "6", "--no-early-stop", "--json", "-o", "duet")   # every pair, even once decided
    assert proc.returncode in (0, 1, 3), proc.stderr
    report = json.loads(proc.stdout)
    assert report["mode"] == "duet" and report["pairs"] == 3 and report["blocks"] == 6
    [lat] = [r for r in report["results"] if r["dataset"] == "wire.latency[op]" and r["key"] == "read"]
    assert lat["intervals"] == [6, 6]
    # the servers' CPUs swap with the threads strata could pin, and the report says what that promises
    cpus = report["server_cpus"]
    assert len(cpus["threads_pinned"]) == 3 and all(p["A"] > 1 and p["B"] > 1 for p in cpus["threads_pinned"])
    assert "kernel threads" in cpus["promise"] and "kernel threads" in proc.stderr
    loads = json.loads((tmp_path / "duet" / "duet.load.json").read_text())["pairs"]
    assert len(loads) == 3
    for sent in (load for pair in loads for load in pair):           # A first, B first
        by_name = {c["name"]: c["ops"].get("read", 0) for c in sent["clients"]}
        assert by_name["client-0"] == by_name["client-0-b"] > 0 and sent["errors"] == 0
    for a_name, b_name in zip(report["archives"]["A"], report["archives"]["B"]):
        a = wire_reads_per_second(tmp_path / a_name)
        b = wire_reads_per_second(tmp_path / b_name)
        assert a.keys() == b.keys() and len(a) == 2
        assert all(abs(a[t] - b[t]) <= 0.05 * a[t] + 5 and a[t] > 100 for t in a), (a, b)   # 400 reads/s each


def test_bad_server_commands_are_one_line_and_exit_2(tmp_path, rpcbind):
    """The invocations run at once, each in a folder of its own. Where A's command starts (and
    fails), B is the engine: two ganeshas starting at the same instant race at the portmapper
    (one exits "Cannot register NFS V3 on TCP")."""
    from conftest import built
    engine = str(built("bin/strata-engine"))
    cases = [(["--a-server", "ganesha.nfsd", "--b-server", GANESHA], "{nfsport}"),
             (["--a-server", "no-such-server-here {nfsport}", "--b", engine], "server A exited 127"),
             (["--a-server", "exec true {nfsport}", "--b", engine], "server A exited 0"),
             (["--a-server", GANESHA, "--b-server", GANESHA, "--b-inject-delay", "nfs:1ms"], "engine"),
             (["--a-server", "cat @missing.conf {nfsport}", "--b-server", GANESHA], "missing.conf"),
             (["--a-server", "exec sleep 60 {nfsport}", "--b-server", GANESHA, "--mode", "duet"], "{mountport}")]
    started = [(args, why, start(tmp_path / f"bad{n}", *args)) for n, (args, why) in enumerate(cases)]
    # a dataset the wire cannot see
    started.append(([], "arc.accesses[tier]: no wire view",
                    start(tmp_path / "no-wire-view", "--a-server", GANESHA, "--b-server", GANESHA,
                          profile=PROFILE.replace('"nfs.ops[op]"', '"arc.accesses[tier]"'))))
    for args, why, proc in started:
        proc = finish(proc, timeout=180)   # all of them at once on a busy machine
        assert proc.returncode == 2 and why in proc.stderr, (args, proc.stderr)
        assert proc.stderr.strip().count("\n") == 0, proc.stderr
