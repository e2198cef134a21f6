"""strata-load against the strata engine: the client's per-procedure counts equal
the engine's own counters exactly (setup + run), data written reads back, and
--netns clients reach an engine bound on 127.0.0.1 from their own addresses."""
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import built
from load_util import check_report, expected_bytes, file_name, load_ok, nfs_cat, run_load, stop

FILES, FILE_SIZE = 4, 1 << 20


class Engine:
    def __init__(self, exe, workdir, allow):
        self.exe, self.dir = str(exe), workdir
        pool, self.sock, ports = workdir / "pool0", workdir / "stats.sock", workdir / "ports"
        subprocess.run([self.exe, "mkpool", str(pool), "--size", "128M"], check=True,
                       capture_output=True, timeout=60)
        export = "load:rw,no_root_squash,mode=1777" + "".join(f",allow={a}" for a in allow)
        self.proc = subprocess.Popen(
            [self.exe, "serve", "--pool", str(pool), "--export", export,
             "--listen", "127.0.0.1:0", "--mount-port", "0", "--port-file", str(ports),
             "--stats-socket", str(self.sock), "--no-rpcbind"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while not (ports.exists() and ports.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                stop(self.proc)
                pytest.fail(f"strata-engine did not start: {self.proc.stderr.read()}")
            time.sleep(0.05)
        # "listening nfs=ADDR:PORT mount=ADDR:PORT"
        fields = dict(f.split("=", 1) for f in ports.read_text().split()[1:])
        self.nfsport = int(fields["nfs"].rsplit(":", 1)[1])
        self.mountport = int(fields["mount"].rsplit(":", 1)[1])

    def args(self, *extra):
        return ["--server", "127.0.0.1", "--nfsport", str(self.nfsport),
                "--mountport", str(self.mountport), "--export", "/load",
                "--files", str(FILES), "--file-size", str(FILE_SIZE), *extra]

    def stats(self):
        out = subprocess.run([self.exe, "stats", "--socket", str(self.sock)],
                             capture_output=True, text=True, check=True, timeout=10).stdout
        return json.loads(out)

    def url(self, name):
        return (f"nfs://127.0.0.1/load/{name}?nfsport={self.nfsport}"
                f"&mountport={self.mountport}&version=3")


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    built("bin/strata-load")
    e = Engine(built("bin/strata-engine"), tmp_path_factory.mktemp("engine"),
               ["127.0.0.0/8", "10.213.0.0/16"])
    yield e
    stop(e.proc)


def counted(engine, *args):
    """Runs strata-load and returns (report, engine nfs op deltas, engine mount op deltas)."""
    before = engine.stats()
    report = load_ok(*engine.args(*args))
    after = engine.stats()
    nfs = {k: after["nfs"][k] - before["nfs"][k] for k in after["nfs"]}
    mnt = {k: after["mount"][k] - before["mount"][k] for k in after["mount"]}
    return report, {k: v for k, v in nfs.items() if v}, {k: v for k, v in mnt.items() if v}


def client_view(report):
    """Setup + run RPCs as the client counted them."""
    total = dict(report["setup"]["ops"])
    for op, n in report["ops"].items():
        total[op] = total.get(op, 0) + n
    return total


def test_randread_counts_match_engine(engine):
    r, nfs, mnt = counted(engine, "--profile", "randread", "--setup", "--clients", "2",
                          "--threads", "4", "--duration", "2")
    check_report(r)
    assert r["ops"]["read"] > 0 and all(c["ops"]["read"] > 0 for c in r["clients"])
    assert nfs == client_view(r)
    assert mnt == {"mnt": 2} == r["setup"]["mount_ops"]


def test_write_counts_match_engine_and_read_back(engine):
    seed = 11
    r, nfs, mnt = counted(engine, "--profile", "write", "--setup", "--clients", "2",
                          "--threads", "4", "--io-size", "32k", "--seed", str(seed),
                          "--duration", "2")
    check_report(r)
    assert nfs == client_view(r)
    assert mnt == {"mnt": 2}
    assert r["ops"]["commit"] >= FILES
    assert r["bytes"]["write"] >= FILES * FILE_SIZE, "run too short for a full pass"
    for i in range(FILES):
        assert nfs_cat(engine.url(file_name(i))) == expected_bytes(seed, i, 0, FILE_SIZE)


def test_seed_l2arc_counts_match_engine(engine):
    r, nfs, _ = counted(engine, "--profile", "seed-l2arc", "--setup", "--clients", "2",
                        "--threads", "5", "--io-size", "128k", "--duration", "1.5")
    check_report(r)
    assert nfs == client_view(r)
    assert r["ops"]["lookup"] > 0 and r["ops"]["read"] >= 8 * (r["ops"]["lookup"] - 10)


@pytest.mark.skipif(os.geteuid() != 0, reason="--netns needs root (namespaces, veth)")
@pytest.mark.skipif(not shutil.which("ip"), reason="--netns needs iproute2's ip")
def test_netns_clients_reach_engine_on_loopback(engine):
    r, nfs, mnt = counted(engine, "--profile", "randread", "--setup", "--netns",
                          "--clients", "3", "--duration", "1")
    check_report(r)
    addrs = {c["addr"] for c in r["clients"]}
    assert len(addrs) == 3 and all(a.startswith("10.213.") for a in addrs), addrs
    assert nfs == client_view(r) and mnt == {"mnt": 3}


@pytest.mark.skipif(os.geteuid() != 0, reason="--netns needs root (namespaces, veth)")
def test_netns_source_address_is_what_the_engine_sees(tmp_path):
    """An engine that only allows 127.0.0.0/8 refuses the --netns clients'
    MOUNT: the server really sees 10.213.x.y, not loopback."""
    e = Engine(built("bin/strata-engine"), tmp_path, ["127.0.0.0/8"])
    try:
        rc, report, err = run_load(*e.args("--profile", "randread", "--netns", "--duration", "1"))
        assert rc == 1 and report is None
        assert "mount /load" in err and len(err.splitlines()) == 1, err
    finally:
        stop(e.proc)
