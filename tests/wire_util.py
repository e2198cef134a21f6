"""Helpers for the wire-layer tests: a private strata-engine copy on loopback, the
collector with the wire layer on chosen interfaces and ports, and sums of its records."""
import json
import re
import subprocess
import time

from collect_util import Collector, counter_totals, private_copy
from conftest import built
from strata.datasets import llhist

# Server and clients on one CPU for exact comparisons. A veth delivers each segment through
# the backlog of the CPU that sent it, and a client socket sends from its thread and from the
# softirq that processes the server's ACKs, so segments of one stream can reach the server's
# interface out of order. The wire layer bridges the common cases (tests/test_wire_parse.py)
# and counts (desyncs) what it cannot; on one CPU, exactness does not hang on the scheduler.
PINNED = ["taskset", "-c", "0"]


class WireEngine:
    """A private copy of strata-engine (uprobes are per inode: other engines on this
    machine never reach our probes) serving /export on 127.0.0.1 ephemeral ports."""

    def __init__(self, folder, allow=("127.0.0.0/8", "10.213.0.0/16"), extra=()):
        self.binary = private_copy(built("bin/strata-engine"), folder)
        pool, port_file = folder / "wire.pool", folder / "wire.port"
        subprocess.run([str(self.binary), "mkpool", str(pool), "--size", "256m"], check=True, capture_output=True)
        export = "/export:rw,no_root_squash,mode=1777" + "".join(f",allow={a}" for a in allow)
        self.proc = subprocess.Popen([*PINNED, str(self.binary), "serve", "--pool", str(pool), "--export", export,
                                      "--listen", "127.0.0.1:0", "--mount-port", "0", "--port-file", str(port_file),
                                      "--no-rpcbind", *extra],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while not (port_file.exists() and port_file.read_text().strip()):
            assert self.proc.poll() is None, self.proc.stderr.read()
            assert time.monotonic() < deadline, "engine did not start"
            time.sleep(0.05)
        m = re.search(r"nfs=[\d.]+:(\d+) mount=[\d.]+:(\d+)", port_file.read_text())
        self.nfs_port, self.mount_port = int(m.group(1)), int(m.group(2))

    def load_args(self, *more):
        return [*PINNED, str(built("bin/strata-load")), "--server", "127.0.0.1", "--nfsport", str(self.nfs_port),
                "--mountport", str(self.mount_port), "--export", "/export", "--json", "-", *map(str, more)]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)


def wire_collector(ports, ifaces=(), *extra):
    args = [a for p in ports for a in ("--wire-port", p)] + [a for i in ifaces for a in ("--wire-iface", i)]
    return Collector(*args, *extra)


def load_followed(collector, *args, pinned=True):
    """strata-load's report (--json) of a load with args that collector follows, with no
    error; the collector flushed before, and twice after (its last second recorded)."""
    collector.flush_now()
    report = json.loads(subprocess.run(
        [*(PINNED if pinned else []), str(built("bin/strata-load")), *map(str, args), "--json", "-"],
        check=True, capture_output=True, text=True, timeout=120).stdout)
    assert report["errors"] == 0, report
    collector.flush_now()
    collector.flush_now()
    return report


def totals(collector, ident):
    return counter_totals(collector.data(ident))


def p50(buckets):
    """Lower bound of the bucket holding the median of {bucket: count}."""
    total, run = sum(buckets.values()), 0
    for b in sorted(buckets):
        run += buckets[b]
        if 2 * run >= total:
            return llhist.lower(b)
    return 0


def wire_status(collector):
    return collector.statuses()[-1]["wire"]
